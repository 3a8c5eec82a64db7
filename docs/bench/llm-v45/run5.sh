#!/usr/bin/env bash
# v45 call 5 (the session's last device-seconds; no llama.cpp): y = x + the input norms of a
# batch's projections formed by the pass that makes the tensor-core GEMM's f16 input rows (no
# norm dispatch of their own at 32+ rows). Tests first (kvc: the f16 rows against the CPU on
# every form, the tensor-core GEMM on the norm forms; tiny: the forward against its CPU
# reference), then the 8B and 1B at 32/64 streams, x against y, interleaved.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R target/m
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for b in xtask-x xtask-y tiny kvc; do xz -dkf .devbin/$b.xz; chmod +x .devbin/$b; done
(cd .devbin && for m in l:llama1b-q4_k_m e:llama8b-q4_k_m; do
  [ -e ../target/m/${m%%:*}.done ] || nice python3 gguf_rebuild.py ${m#*:}.skel ../target/m/${m%%:*}.gguf >/dev/null; touch ../target/m/${m%%:*}.done; done) &
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
save() { (cd $OUT && tar czf r.tgz r); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
timeout 60 ./.devbin/kvc f16_input_rows coop_gemm_norms few_row_norm_forms > $R/kvc.txt 2>&1; echo "kvc rc=$? at $(el) s"; grep -E "^test |test result|panicked" $R/kvc.txt | head -6; save
timeout 60 ./.devbin/tiny > $R/tiny.txt 2>&1; echo "tiny rc=$? at $(el) s"; grep -E "test result|panicked|FAILED" $R/tiny.txt | head -5; save
par() { while [ ! -e target/m/$1.done ]; do sleep 1; done; timeout 60 env $5 ./.devbin/xtask-$2 bench-llm target/m/$1.gguf --steps 8 --parallel $4 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-par-$2$3.json > $R/$1-par-$2$3.txt 2>&1; echo "$1 $4 $2$3 rc=$? at $(el) s: $(grep -o 'S_TG *[0-9.]* tok/s' $R/$1-par-$2$3.txt | paste -sd' ')"; save; }
par l x 1 32,64 X=1; par l y 1 32,64 X=1; par e x 1 32,64 X=1; par e y 1 32,64 X=1
par l x 2 32,64 X=1; par l y 2 32,64 X=1
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
