#!/usr/bin/env bash
# H200 call 2 (v27): "new2" — the tensor-core GEMM with each thread's share of a chunk in named
# registers filled by straight-line code (call 1's kernel indexed private arrays in loops), and
# prompts in one batch of 512 rows — beside v26's binary ("norm2", 7b37b79) and llama-bench in
# the same call: its CPU-reference test, the GEMM sweep, all four models end to end, and batched
# decode on the tensor-core GEMM (GPUPORT_COOP_MIN_TOKENS=17) against the few-row kernel.
# Carry .gl and .devbin: xtask-new2 / xtask-norm2, kvc (release test binary of new2), the
# skeletons, gguf_rebuild.py, build_llama_cpp.sh, llama-src.tar.xz.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
(bash .devbin/build_llama_cpp.sh $PWD/.devbin/llama-src.tar.xz /tmp/lc > $R/llama-build.txt 2>&1) &
B=$!
for b in .devbin/*.xz; do [ "$b" = .devbin/llama-src.tar.xz ] || xz -d "$b"; done; chmod +x .devbin/xtask-new2 .devbin/xtask-norm2 .devbin/kvc
(cd .devbin && for m in s:smollm2-135m-q4_1 g:gemma-3-270m-q4_k_m l:llama1b-q4_k_m e:llama8b-q4_k_m; do
  python3 gguf_rebuild.py ${m#*:}.skel /tmp/${m%%:*}.gguf >/dev/null; done) &
G=$!
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
timeout 90 ./.devbin/kvc coop gemm > $R/kvc.txt 2>&1; echo "kvc rc=$? at $(el) s"; grep "test result\|panicked" $R/kvc.txt | head -5
sweep() { timeout 100 ./.devbin/xtask-new2 bench --gemm-only --shapes $2 --gemm-tokens $1 --json $R/sweep-$1.json > $R/sweep-$1.txt 2>&1; echo "sweep $1 rc=$? at $(el) s"; grep "best" $R/sweep-$1.txt; }
sweep 512 llama,smollm2,gemma3
sweep 256 llama
sweep 64 llama
wait $G; echo "rebuilt at $(el) s"
ours() { timeout 80 ./.devbin/xtask-$2 bench-llm /tmp/$1.gguf --steps 8 --prompt-tokens 512 --gen-tokens 128 --json $R/$1-$2-$3.json > $R/$1-$2-$3.txt 2>&1; echo "$1 $2 $3 rc=$? at $(el) s: $(sed -n 2p $R/$1-$2-$3.txt) | $(sed -n 5p $R/$1-$2-$3.txt)"; }
for r in 1 2; do for m in e l s g; do ours $m norm2 $r; ours $m new2 $r; done; done
while kill -0 $B 2>/dev/null && [ $(el) -lt 420 ]; do sleep 2; done
echo "llama built at $(el) s"; tail -1 $R/llama-build.txt
lb() { timeout 60 /tmp/lc/b/bin/llama-bench -m /tmp/$1.gguf -ngl 99 -p 512 -n 128 -fa 1 -r 3 -o jsonl > $R/$1-llama.jsonl 2>$R/$1-llama.err; echo "llama-bench $1 rc=$? at $(el) s: $(grep -o '"n_prompt": [0-9]*\|"n_gen": [0-9]*\|"avg_ts": [0-9.]*' $R/$1-llama.jsonl | tr '\n' ' ')"; }
for m in e l s g; do lb $m; done
par() { timeout 100 env $2 ./.devbin/xtask-new2 bench-llm /tmp/l.gguf --steps 8 --parallel 32,64 --prompt-tokens 128 --gen-tokens 128 --json $R/l-par-$1.json > $R/l-par-$1.txt 2>&1; echo "par $1 rc=$? at $(el) s"; grep -i "streams\|S_TG" $R/l-par-$1.txt | head -4; }
[ $(el) -lt 480 ] && par few GPUPORT_X=0
[ $(el) -lt 520 ] && par coop GPUPORT_COOP_MIN_TOKENS=17
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
cd $OUT && tar czf r.tgz r && rm -rf r
