#!/usr/bin/env bash
# v40 call 3 (a fresh machine, ~400 s): the int8 few-row GEMM without loop bounding (call 2:
# the 32-row GEMMs 14-26% faster) is the default now; it runs batched decode below 32 rows, so
# 8 streams is where it shows. kernel-stats builds every gemm_rows_q8 variant (the driver takes
# them?), kvc checks them against the CPU, then 8 streams of each model, the new default against
# GPUPORT_LOOP_BOUNDING=gemm_rows_q8 (v39's), interleaved, two rounds. Carry [.gl, .devbin].
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
xz -dk .devbin/xtask-t.xz .devbin/kvc.xz; chmod +x .devbin/xtask-t .devbin/kvc
X=./.devbin/xtask-t
(cd .devbin && for m in g:gemma-3-270m-q4_k_m s:smollm2-135m-q4_1 l:llama1b-q4_k_m e:llama8b-q4_k_m; do
  python3 gguf_rebuild.py ${m#*:}.skel /tmp/${m%%:*}.gguf >/dev/null; touch /tmp/${m%%:*}.done; done) &
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
save() { (cd $OUT && tar czf r.tgz r); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 60 $X kernel-stats --filter gemm_rows_q8 > $R/ks-gemm_rows_q8.txt 2>&1; echo "kernel-stats gemm_rows_q8 rc=$? at $(el) s: $(grep -c '^gemm_rows_q8' $R/ks-gemm_rows_q8.txt) variants"
timeout 90 ./.devbin/kvc few_row_int8 > $R/kvc-few-row-int8.txt 2>&1; echo "kvc few_row_int8 rc=$? at $(el) s"; grep "test result\|panicked" $R/kvc-few-row-int8.txt | head -3; save
par() { while [ ! -e /tmp/$1.done ]; do sleep 1; done; [ $(el) -lt 390 ] || return; timeout 40 env $4 $X bench-llm /tmp/$1.gguf --steps 8 --parallel $3 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-$3-$2.json > $R/$1-$3-$2.txt 2>&1; echo "$1 $3 $2 rc=$? at $(el) s: $(grep -o 'S_TG *[0-9.]* tok/s' $R/$1-$3-$2.txt | paste -sd' ')"; save; }
for i in 1 2; do for m in g s l e; do par $m new$i 8 ""; par $m old$i 8 GPUPORT_LOOP_BOUNDING=gemm_rows_q8; done; done
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
