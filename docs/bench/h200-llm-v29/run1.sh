#!/usr/bin/env bash
# H200 call 1 (v29): the tensor-core GEMM with its next chunk fetched unconditionally and split
# along K ("new") beside the same code with the fetch inside `if` ("nopf"), and llama.cpp built
# in the same call: the tensor-core CPU-reference tests (splits included), the GEMM sweep at 32
# and 512 rows, prompts of 512 tokens (new, new unsplit, nopf; llama-bench -p 512), and
# batched decode with the int8 GEMMs moved to tensor cores from 17 / 33 rows.
# Carry .gl and .devbin: xtask-new / xtask-nopf (.xz), kvc (release kernels_vs_cpu of new),
# the skeletons, gguf_rebuild.py, build_llama_cpp.sh, llama-src.tar.xz.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
(bash .devbin/build_llama_cpp.sh $PWD/.devbin/llama-src.tar.xz /tmp/lc > $R/llama-build.txt 2>&1) &
B=$!
for b in .devbin/*.xz; do [ "$b" = .devbin/llama-src.tar.xz ] || xz -d "$b"; done; chmod +x .devbin/xtask-* .devbin/kvc
(cd .devbin && for m in l:llama1b-q4_k_m e:llama8b-q4_k_m; do
  python3 gguf_rebuild.py ${m#*:}.skel /tmp/${m%%:*}.gguf >/dev/null; done) &
G=$!
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
timeout 60 ./.devbin/kvc coop > $R/kvc.txt 2>&1; echo "kvc rc=$? at $(el) s"; grep "test result\|panicked" $R/kvc.txt | head -3
sweep() { timeout 90 env $3 ./.devbin/xtask-$2 bench --gemm-only --shapes llama --gemm-tokens $1 --json $R/sweep-$1-$2.json > $R/sweep-$1-$2.txt 2>&1; echo "sweep $1 $2 rc=$? at $(el) s"; grep "best" $R/sweep-$1-$2.txt; }
sweep 32 new X=1
wait $G; echo "rebuilt at $(el) s"
pre() { timeout 60 env $3 ./.devbin/xtask-$2 bench-llm /tmp/$1.gguf --steps 8 --prompt-tokens 512 --gen-tokens 32 --json $R/$1-pre-$2$4.json > $R/$1-pre-$2$4.txt 2>&1; echo "$1 pre $2$4 rc=$? at $(el) s"; grep -i "prefill\|decode" $R/$1-pre-$2$4.txt | head -3; }
for m in e l; do pre $m new X=1 ""; pre $m new GPUPORT_COOP_SPLIT_TARGET=0 -s0; pre $m nopf GPUPORT_COOP_SPLIT_TARGET=0 -s0; done
par() { timeout 100 env $3 ./.devbin/xtask-$2 bench-llm /tmp/$1.gguf --steps 8 --parallel 8,32,64 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-par-$2$4.json > $R/$1-par-$2$4.txt 2>&1; echo "$1 par $2$4 rc=$? at $(el) s"; grep "S_TG" $R/$1-par-$2$4.txt; }
par e new X=1 ""; par e new GPUPORT_COOP_MIN_Q8_TOKENS=17 -q17; par l new GPUPORT_COOP_MIN_Q8_TOKENS=17 -q17
[ $(el) -lt 300 ] && sweep 512 new X=1
[ $(el) -lt 330 ] && sweep 512 nopf GPUPORT_COOP_SPLIT_TARGET=0
while kill -0 $B 2>/dev/null && [ $(el) -lt 420 ]; do sleep 2; done
echo "llama built at $(el) s"; tail -1 $R/llama-build.txt
for m in e l; do [ $(el) -lt 480 ] && { timeout 60 /tmp/lc/b/bin/llama-bench -m /tmp/$m.gguf -ngl 99 -p 512 -n 0 -fa 1 -r 3 -o jsonl > $R/$m-lb.jsonl 2>$R/$m-lb.err; echo "lb $m rc=$? at $(el) s"; grep -o '"avg_ts": [0-9.]*' $R/$m-lb.jsonl; }; done
[ $(el) -lt 500 ] && pre e new X=1 "-2"
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
cd $OUT && tar czf r.tgz r && rm -rf r
