#!/usr/bin/env bash
# v44 call 2: xtask-t is 7796a0e's build (call 1's), xtask-n this change's (the few-row GEMMs'
# transposed quad reduction on subgroups; the int8 few-row kernel at 32 lanes a row group
# below 32 rows on a GPU), kvc its kernels_vs_cpu. (1) The few-row tests on the GPU (the
# transposed reduction on 32-lane subgroups). (2) Eight streams of the four models, both
# builds interleaved (two rounds for the 1B and 8B). (3) One stream of the 1B through the v43
# table entry and without it (call 1: 910 against 1,035 tok/s, one round). (4) Sixteen streams
# of the 1B and 8B, both builds. (5) The int8 GEMV swept over the Llama shapes (which lanes a
# row suit decode's matrices). Carry [.gl, .devbin].
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R target/m
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
xz -dkf .devbin/xtask-t.xz .devbin/xtask-n.xz .devbin/kvc.xz; chmod +x .devbin/xtask-t .devbin/xtask-n .devbin/kvc
(cd .devbin && for m in l:llama1b-q4_k_m e:llama8b-q4_k_m s:smollm2-135m-q4_1 g:gemma-3-270m-q4_k_m; do
  [ -e ../target/m/${m%%:*}.done ] || nice python3 gguf_rebuild.py ${m#*:}.skel ../target/m/${m%%:*}.gguf >/dev/null; touch ../target/m/${m%%:*}.done; done) &
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
OLD=GPUPORT_TUNING=$PWD/.devbin/tuning-v42.json
save() { (cd $OUT && tar czf r.tgz r); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
timeout 100 ./.devbin/kvc few_row > $R/kvc-few-row.txt 2>&1; echo "kvc few_row rc=$? at $(el) s"; grep "test result\|panicked\|FAILED" $R/kvc-few-row.txt | head -5; save
par() { while [ ! -e target/m/$1.done ]; do sleep 1; done; timeout 50 env $5 ./.devbin/xtask-$2 bench-llm target/m/$1.gguf --steps 8 --parallel $4 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-par-$2$3.json > $R/$1-par-$2$3.txt 2>&1; echo "$1 $4 $2$3 rc=$? at $(el) s: $(grep -o 'S_TG *[0-9.]* tok/s' $R/$1-par-$2$3.txt | paste -sd' ')"; save; }
for m in l e s g; do par $m t 8a 8 X=1; par $m n 8a 8 X=1; done
for m in l e; do par $m n 8b 8 X=1; par $m t 8b 8 X=1; done
par l n 1new 1 X=1; par l n 1old 1 $OLD; par l n 1new2 1 X=1; par l n 1old2 1 $OLD
for m in l e; do [ $(el) -lt 400 ] && par $m t 16 16 X=1 && par $m n 16 16 X=1; done
[ $(el) -lt 430 ] && { GPUPORT_BENCH_HOLD_MS=100 timeout 80 ./.devbin/xtask-n bench --shapes llama --kernel gemv_q8 --wg 128,256 --lanes 8,16,32,64 --json $R/gemv-q8-llama-sweep.json > $R/gemv-q8-llama-sweep.txt 2>&1; echo "llama gemv_q8 sweep rc=$? at $(el) s"; save; }
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
