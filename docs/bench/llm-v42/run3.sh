#!/usr/bin/env bash
# v42 call 3 (NOT RUN: the session's device time ran out; ~350 s; call 2 found no machine): binaries of ed22e62 (every decode family
# without naga's loop counter; the row table's combine writing int8 blocks). kvc and rowk
# against the CPU with the new default, then A/Bs, one round: SmolLM2 and Gemma 3 at 1 and 8
# streams, the new default against the old bounding (GPUPORT_LOOP_BOUNDING naming the
# families v42 unbounded); the 1B and 8B at 8 and 32 streams, the combine writing blocks
# against combining then quantizing (GPUPORT_ROWS_COMBINE_BLOCKS=0). Carry [.gl, .devbin].
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
xz -dk .devbin/xtask-t.xz .devbin/kvc.xz .devbin/rowk.xz; chmod +x .devbin/xtask-t .devbin/kvc .devbin/rowk
X=./.devbin/xtask-t
OLD=gemv,gemv_q8,gemm_rows,gemm_splits,gemm_x16,norm,argmax,embed,attn_prep,sample,gather,q8_round
(cd .devbin && for m in s:smollm2-135m-q4_1 g:gemma-3-270m-q4_k_m l:llama1b-q4_k_m e:llama8b-q4_k_m; do
  nice python3 gguf_rebuild.py ${m#*:}.skel /tmp/${m%%:*}.gguf >/dev/null; touch /tmp/${m%%:*}.done; done) &
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
save() { (cd $OUT && tar czf r.tgz r); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 100 ./.devbin/kvc > $R/kvc.txt 2>&1; echo "kvc rc=$? at $(el) s"; grep "test result\|panicked\|FAILED" $R/kvc.txt | head -5; save
timeout 40 ./.devbin/rowk > $R/rowk.txt 2>&1; echo "rowk rc=$? at $(el) s"; grep "test result\|panicked\|FAILED" $R/rowk.txt | head -5; save
par() { while [ ! -e /tmp/$1.done ]; do sleep 1; done; timeout 40 env $4 $X bench-llm /tmp/$1.gguf --steps 8 --parallel $3 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-$2.json > $R/$1-$2.txt 2>&1; echo "$1 $2 rc=$? at $(el) s: $(grep -o 'S_TG *[0-9.]* tok/s' $R/$1-$2.txt | paste -sd' ')"; save; }
for m in s g; do [ $(el) -lt 300 ] && par $m new 1,8 "" && par $m old 1,8 GPUPORT_LOOP_BOUNDING=$OLD; done
for m in l e; do [ $(el) -lt 300 ] && par $m blocks 8,32 "" && par $m apart 8,32 GPUPORT_ROWS_COMBINE_BLOCKS=0; done
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
