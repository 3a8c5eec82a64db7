#!/usr/bin/env bash
# v45 call 1: the tensor-core GEMM's tiles as f16 quadruples (one 8-byte store where four
# 2-byte ones went; fragment loads through vec4 pointers) and two stages for the 32-token tile
# in chunks of 64 columns (its epilogue two subgroups at a time). Binaries in .devbin: h (c70ab502,
# the head before), v (quadruples), vs (quadruples + two stages), kvc (the test binary of vs).
# (1) `kvc coop` on vs; (2) the Llama shapes' GEMMs at 32 and 64 rows, interleaved; (3) the 8B
# and 1B at 32/64 streams end to end; (4) if time is left, run4.sh's cheap items (v44).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R target/m
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
(cd .devbin && for m in e:llama8b-q4_k_m l:llama1b-q4_k_m s:smollm2-135m-q4_1; do
  [ -e ../target/m/${m%%:*}.done ] || nice python3 gguf_rebuild.py ${m#*:}.skel ../target/m/${m%%:*}.gguf >/dev/null; touch ../target/m/${m%%:*}.done; done) &
for b in h v vs; do xz -dkf .devbin/xtask-$b.xz; chmod +x .devbin/xtask-$b; done
xz -dkf .devbin/kvc.xz; chmod +x .devbin/kvc
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
save() { (cd $OUT && tar czf r.tgz r); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
timeout 150 ./.devbin/kvc coop > $R/kvc-coop.txt 2>&1; echo "kvc coop rc=$? at $(el) s"; grep -E "test result|panicked|FAILED" $R/kvc-coop.txt | head -5; save
gm() { timeout 60 env $4 ./.devbin/xtask-$2 bench --gemm-only --tuned --shapes llama --gemm-tokens $1 --json $R/g$1-$2$3.json > $R/g$1-$2$3.txt 2>&1; echo "g$1 $2$3 rc=$? at $(el) s: $(grep -E '^gemm .*tokens.*coop' $R/g$1-$2$3.txt | awk "{print \$2, \$10}" | sed 's/llama//' | paste -sd' ')"; save; }
gm 32 h 1 X=1; gm 32 v 1 X=1; gm 32 vs 1 X=1; gm 32 vs f2 GPUPORT_COOP_FETCH=2; gm 32 h 2 X=1; gm 32 vs 2 X=1
par() { while [ ! -e target/m/$1.done ]; do sleep 1; done; timeout 70 env $5 ./.devbin/xtask-$2 bench-llm target/m/$1.gguf --steps 8 --parallel $4 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-par-$2$3.json > $R/$1-par-$2$3.txt 2>&1; echo "$1 $4 $2$3 rc=$? at $(el) s: $(grep -o 'S_TG *[0-9.]* tok/s' $R/$1-par-$2$3.txt | paste -sd' ')"; save; }
par e h 1 32,64 X=1; par e vs 1 32,64 X=1; par l h 1 32,64 X=1; par l vs 1 32,64 X=1
gm 64 h 1 X=1; gm 64 vs 1 X=1
[ $(el) -lt 470 ] && { par e h 2 32,64 X=1; par e vs 2 32,64 X=1; }
[ $(el) -lt 520 ] && { par s h 8 8 X=1; par s h i8 8 GPUPORT_INT8_MIN_BYTES=0; }
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
