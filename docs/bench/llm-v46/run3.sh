#!/usr/bin/env bash
# v46 call 3 (what 614 device-seconds left after refused starts allow; run2.sh was refused
# three times): b = 941b07a (32 rows a subgroup the default up to 64 tokens); kvc its test
# binary. (1) `kvc coop` (every tile against the CPU; 32 rows a subgroup the same bits as
# 64, split or not); (2) the Llama shapes' GEMMs at 32 and 64 rows on b's tiles split 1-4
# ways, fetching one or two chunks ahead, decoding by conversion or through the bits; (3) the
# 8B's 32-row step profiled (`--batch 32`).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R target/m
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for b in xtask-b kvc; do xz -dkf .devbin/$b.xz; chmod +x .devbin/$b; done
(cd .devbin && for m in e:llama8b-q4_k_m; do
  [ -e ../target/m/${m%%:*}.done ] || nice python3 gguf_rebuild.py ${m#*:}.skel ../target/m/${m%%:*}.gguf >/dev/null; touch ../target/m/${m%%:*}.done; done) &
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
save() { (cd $OUT && tar czf r.tgz r); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
timeout 150 ./.devbin/kvc coop > $R/kvc-coop.txt 2>&1; echo "kvc coop rc=$? at $(el) s"; grep -E "test result|panicked|FAILED" $R/kvc-coop.txt | head -5; save
gm() { timeout 40 env $3 ./.devbin/xtask-b bench --gemm-only --tuned --shapes llama --gemm-tokens $1 --splits 1,2,3,4 --json $R/g$1-$2.json > $R/g$1-$2.txt 2>&1; echo "g$1 $2 rc=$? at $(el) s: $(grep -E '^gemm .*tokens.*coop' $R/g$1-$2.txt | grep -v best | awk '{s=""; for(i=1;i<=NF;i++) if($i ~ /^splits=/) s=substr($i,8); sub("llama","",$2); printf "%s/%s:%s ", $2, s, $10}')"; save; }
for t in 32 64; do gm $t b X=1; gm $t f2 GPUPORT_COOP_FETCH=2; gm $t d1 GPUPORT_COOP_DECODE=1; done
while [ ! -e target/m/e.done ]; do sleep 1; done
timeout 60 ./.devbin/xtask-b bench-llm target/m/e.gguf --steps 8 --batch 32 --prompt-tokens 64 --gen-tokens 16 --json $R/e-batch.json > $R/e-batch.txt 2>&1; echo "e batch 32 rc=$? at $(el) s"; grep -A3 "^batch of" $R/e-batch.txt | head -4; save
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
