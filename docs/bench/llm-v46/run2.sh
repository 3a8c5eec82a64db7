#!/usr/bin/env bash
# v46 call 2 — refused three times (no machine lent), not run; the next session's first call
# (docs/design/next-kernels.md, "as of v46"). Written as: b = a with 32 rows a subgroup the default up to 64 tokens (the tile of 128
# rows with four subgroups along them where a thread's share allows; GPUPORT_COOP_SUB_ROWS=64
# gives the tiles before); kvc = its test binary (the 32-column comparison only where that
# tile exists). (1) `kvc coop`; (2) the Llama shapes' GEMMs at 32 and 64 rows on b's tiles,
# split 1-4 ways, fetching one or two chunks ahead, decoding by conversion or through the
# bits; (3) the 8B at 32/64 streams the latter two ways, its 32-row step profiled; (4) issue 15's table for the 8B and
# the 1B beside llama-batched-bench (built in the background).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R target/m
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -e target/lc.done ] || (nice -n 10 bash .devbin/build_llama_cpp.sh $PWD/.devbin/llama-src.tar.xz $PWD/target/lc > $R/llama-build.txt 2>&1; touch target/lc.done) &
for b in xtask-b kvc; do xz -dkf .devbin/$b.xz; chmod +x .devbin/$b; done
(cd .devbin && for m in e:llama8b-q4_k_m l:llama1b-q4_k_m s:smollm2-135m-q4_1 g:gemma-3-270m-q4_k_m; do
  [ -e ../target/m/${m%%:*}.done ] || nice python3 gguf_rebuild.py ${m#*:}.skel ../target/m/${m%%:*}.gguf >/dev/null; touch ../target/m/${m%%:*}.done; done) &
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
save() { (cd $OUT && tar czf r.tgz r); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
timeout 150 ./.devbin/kvc coop > $R/kvc-coop.txt 2>&1; echo "kvc coop rc=$? at $(el) s"; grep -E "test result|panicked|FAILED" $R/kvc-coop.txt | head -5; save
gm() { timeout 60 env $3 ./.devbin/xtask-b bench --gemm-only --tuned --shapes llama --gemm-tokens $1 --splits 1,2,3,4 --json $R/g$1-$2.json > $R/g$1-$2.txt 2>&1; echo "g$1 $2 rc=$? at $(el) s: $(grep -E '^gemm .*tokens.*coop' $R/g$1-$2.txt | grep -v best | awk '{s=""; for(i=1;i<=NF;i++) if($i ~ /^splits=/) s=substr($i,8); sub("llama","",$2); printf "%s/%s:%s ", $2, s, $10}')"; save; }
for t in 32 64; do gm $t b X=1; gm $t f2 GPUPORT_COOP_FETCH=2; gm $t d1 GPUPORT_COOP_DECODE=1; done
par() { while [ ! -e target/m/$1.done ]; do sleep 1; done; timeout 80 env $4 ./.devbin/xtask-b bench-llm target/m/$1.gguf --steps 8 --parallel $3 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-par-$2.json > $R/$1-par-$2.txt 2>&1; echo "$1 $3 $2 rc=$? at $(el) s: $(grep -o 'S_TG *[0-9.]* tok/s' $R/$1-par-$2.txt | paste -sd' ')"; save; }
par e f2 32,64 GPUPORT_COOP_FETCH=2; par e d1 32,64 GPUPORT_COOP_DECODE=1
timeout 70 ./.devbin/xtask-b bench-llm target/m/e.gguf --steps 8 --batch 32 --prompt-tokens 64 --gen-tokens 16 --json $R/e-batch.json > $R/e-batch.txt 2>&1; echo "e batch 32 rc=$? at $(el) s"; grep -A8 "^batch of" $R/e-batch.txt | head -12; save
while [ ! -e target/lc.done ] && [ $(el) -lt 400 ]; do sleep 2; done
echo "llama built at $(el) s"; tail -1 $R/llama-build.txt; save
bb() { [ -x target/lc/b/bin/llama-batched-bench ] || return; timeout 50 target/lc/b/bin/llama-batched-bench -m target/m/$1.gguf -ngl 99 -fa on -c 20480 -b 2048 -ub 512 -npp 128 -ntg 128 -npl 1,8,32,64 --output-format jsonl > $R/$1-bb.jsonl 2>$R/$1-bb.err; echo "bb $1 rc=$? at $(el) s"; grep -o '"pl": [0-9]*\|"speed_tg": [0-9.]*' $R/$1-bb.jsonl | tr '\n' ' '; echo; save; }
for m in e l; do [ $(el) -lt 470 ] && { bb $m; par $m b 1,8,32,64 X=1; }; done
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
