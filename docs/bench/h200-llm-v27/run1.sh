#!/usr/bin/env bash
# H200 call 1 (v27): the software-pipelined tensor-core GEMM ("new": two stages in workgroup
# memory, the next chunk in registers during the multiplies, 32 × 64 per subgroup) against
# v26's kernel ("norm2", 7b37b79), interleaved: its CPU-reference test there, the GEMM sweep at
# the Llama shapes, and prompts of 512 tokens end to end; llama-bench's prompt in the same call.
# Carry .gl and .devbin: xtask-new / xtask-norm2, kvc (release test binary of new), the
# skeletons, gguf_rebuild.py, build_llama_cpp.sh, llama-src.tar.xz.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -x /tmp/lc/b/bin/llama-bench ] || (bash .devbin/build_llama_cpp.sh $PWD/.devbin/llama-src.tar.xz /tmp/lc > $R/llama-build.txt 2>&1) &
B=$!
for b in .devbin/*.xz; do [ "$b" = .devbin/llama-src.tar.xz ] || xz -d "$b"; done; chmod +x .devbin/xtask-new .devbin/xtask-norm2 .devbin/kvc
(cd .devbin && for m in l:llama1b-q4_k_m e:llama8b-q4_k_m; do
  [ -f /tmp/${m%%:*}.gguf ] || python3 gguf_rebuild.py ${m#*:}.skel /tmp/${m%%:*}.gguf >/dev/null; done) &
G=$!
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
timeout 90 ./.devbin/kvc coop gemm > $R/kvc.txt 2>&1; echo "kvc rc=$? at $(el) s"; grep "test result\|panicked" $R/kvc.txt | head -5
sweep() { timeout 100 ./.devbin/xtask-$1 bench --gemm-only --shapes llama $3 --json $R/sweep-$1-$2.json > $R/sweep-$1-$2.txt 2>&1; echo "sweep $1 $2 rc=$? at $(el) s"; grep "best\|coop" $R/sweep-$1-$2.txt | grep -v "^gemm .*best" | awk '{print $2, $8, $9, $10, $NF}' | sort -k3 -n -r | head -0; grep "best" $R/sweep-$1-$2.txt; }
sweep new warm "--gemm-tokens 256"
for r in 1 2; do sweep norm2 256-$r ""; sweep new 256-$r "--gemm-tokens 256"; done
sweep new 512 "--gemm-tokens 512"
sweep new 64 "--gemm-tokens 64"
wait $G; echo "rebuilt at $(el) s"
ours() { timeout 80 ./.devbin/xtask-$2 bench-llm /tmp/$1.gguf --steps 8 --prompt-tokens 512 --gen-tokens 32 --json $R/$1-$2-$3.json > $R/$1-$2-$3.txt 2>&1; echo "$1 $2 $3 rc=$? at $(el) s: $(sed -n 2p $R/$1-$2-$3.txt) | $(sed -n 5p $R/$1-$2-$3.txt)"; }
for r in 1 2; do for m in e l; do ours $m norm2 $r; ours $m new $r; done; done
while kill -0 $B 2>/dev/null && [ $(el) -lt 400 ]; do sleep 2; done
echo "llama built at $(el) s"; tail -1 $R/llama-build.txt 2>/dev/null
lb() { timeout 60 /tmp/lc/b/bin/llama-bench -m /tmp/$1.gguf -ngl 99 -p 512 -n 0 -fa 1 -r 3 -o jsonl > $R/$1-llama.jsonl 2>$R/$1-llama.err; echo "llama-bench $1 rc=$? at $(el) s: $(grep -o '"avg_ts": [0-9.]*' $R/$1-llama.jsonl | tr '\n' ' ')"; }
[ $(el) -lt 480 ] && lb l
[ $(el) -lt 500 ] && lb e
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
cd $OUT && tar czf r.tgz r && rm -rf r
