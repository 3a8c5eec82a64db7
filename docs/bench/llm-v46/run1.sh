#!/usr/bin/env bash
# v46 call 1. a = 271a88d + tiles of 32 rows a subgroup (RF 2; `GPUPORT_COOP_SUB_ROWS=32`
# picks them for up to 64 tokens, `GPUPORT_COOP_HALF_WN=2|4`: 64 or 128 rows a tile). kvc =
# the test binary of a. (1) `kvc coop` (every tile against the CPU; 32 rows a subgroup the
# same bits as 64); (2) registers of the tensor-core variants; (3) the Llama shapes' GEMMs
# at 32 and 64 rows, 64 rows a subgroup against 32 (wn 4 and 2), interleaved; (4) the 8B and
# 1B at 32/64 streams the same three ways. llama.cpp built in the background for call 2.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R target/m
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -e target/lc.done ] || (nice -n 10 bash .devbin/build_llama_cpp.sh $PWD/.devbin/llama-src.tar.xz $PWD/target/lc > $R/llama-build.txt 2>&1; touch target/lc.done) &
for b in xtask-a kvc; do xz -dkf .devbin/$b.xz; chmod +x .devbin/$b; done
(cd .devbin && for m in e:llama8b-q4_k_m l:llama1b-q4_k_m s:smollm2-135m-q4_1 g:gemma-3-270m-q4_k_m; do
  [ -e ../target/m/${m%%:*}.done ] || nice python3 gguf_rebuild.py ${m#*:}.skel ../target/m/${m%%:*}.gguf >/dev/null; touch ../target/m/${m%%:*}.done; done) &
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
save() { (cd $OUT && tar czf r.tgz r); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
timeout 150 ./.devbin/kvc coop > $R/kvc-coop.txt 2>&1; echo "kvc coop rc=$? at $(el) s"; grep -E "test result|panicked|FAILED" $R/kvc-coop.txt | head -5; save
timeout 60 ./.devbin/xtask-a kernel-stats --filter gemm_coop,XH=1 > $R/kstats.txt 2>&1; echo "kstats rc=$? at $(el) s"; grep -A1 -E "q4_K|q6_K" $R/kstats.txt | grep -oE "^gemm_coop\S*|Register Count=[0-9]+" | paste - - | sed 's/gemm_coop.//' ; save
gm() { timeout 60 env $3 ./.devbin/xtask-a bench --gemm-only --tuned --shapes llama --gemm-tokens $1 --json $R/g$1-$2.json > $R/g$1-$2.txt 2>&1; echo "g$1 $2 rc=$? at $(el) s: $(grep -E '^gemm .*tokens.*coop' $R/g$1-$2.txt | awk "{print \$2, \$10}" | sed 's/llama//' | paste -sd' ')"; save; }
for r in 1 2; do for t in 32 64; do gm $t r64-$r X=1; gm $t r32w4-$r GPUPORT_COOP_SUB_ROWS=32; gm $t r32w2-$r "GPUPORT_COOP_SUB_ROWS=32 GPUPORT_COOP_HALF_WN=2"; done; done
grep -h "coop" $R/g32-r32w4-1.txt $R/g64-r32w4-1.txt | head -20
par() { while [ ! -e target/m/$1.done ]; do sleep 1; done; timeout 70 env $4 ./.devbin/xtask-a bench-llm target/m/$1.gguf --steps 8 --parallel $3 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-par-$2.json > $R/$1-par-$2.txt 2>&1; echo "$1 $3 $2 rc=$? at $(el) s: $(grep -o 'S_TG *[0-9.]* tok/s' $R/$1-par-$2.txt | paste -sd' ')"; save; }
for m in e l; do par $m r64 32,64 X=1; par $m r32w4 32,64 GPUPORT_COOP_SUB_ROWS=32; par $m r32w2 32,64 "GPUPORT_COOP_SUB_ROWS=32 GPUPORT_COOP_HALF_WN=2"; done
[ $(el) -lt 480 ] && { par e r64b 32,64 X=1; par e r32w4b 32,64 GPUPORT_COOP_SUB_ROWS=32; par e r32w2b 32,64 "GPUPORT_COOP_SUB_ROWS=32 GPUPORT_COOP_HALF_WN=2"; }
echo "llama: $(ls target/lc.done 2>/dev/null) at $(el) s"; tail -1 $R/llama-build.txt
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
