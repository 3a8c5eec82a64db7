#!/usr/bin/env bash
# H200 call 3 (v27): "new3" — the tensor-core GEMM's loads branch-free (clamped indices,
# selected zeros: call 2's kernel loaded each step inside a branch) and prompt attention over
# tiles of rows (attn_tiles.wgsl; GPUPORT_ATTN_TILES=0 is the per-row pass) — beside call 2's
# binary ("new2") and llama-bench in the same call: the changed kernels' tests there, the GEMM
# sweep, all four models end to end, batched decode on the tensor-core GEMM, decode at depth.
# Carry .gl and .devbin: xtask-new3 / xtask-new2, kvc / rowk (release test binaries of new3),
# the skeletons, gguf_rebuild.py, build_llama_cpp.sh, llama-src.tar.xz.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
(bash .devbin/build_llama_cpp.sh $PWD/.devbin/llama-src.tar.xz /tmp/lc > $R/llama-build.txt 2>&1) &
B=$!
for b in .devbin/*.xz; do [ "$b" = .devbin/llama-src.tar.xz ] || xz -d "$b"; done; chmod +x .devbin/xtask-new3 .devbin/xtask-new2 .devbin/kvc .devbin/rowk
(cd .devbin && for m in s:smollm2-135m-q4_1 g:gemma-3-270m-q4_k_m l:llama1b-q4_k_m e:llama8b-q4_k_m; do
  python3 gguf_rebuild.py ${m#*:}.skel /tmp/${m%%:*}.gguf >/dev/null; done) &
G=$!
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
timeout 90 ./.devbin/kvc coop gemm > $R/kvc.txt 2>&1; echo "kvc rc=$? at $(el) s"; grep "test result\|panicked" $R/kvc.txt | head -3
timeout 60 ./.devbin/rowk > $R/rowk.txt 2>&1; echo "rowk rc=$? at $(el) s"; grep "test result\|panicked" $R/rowk.txt | head -3
sweep() { timeout 100 ./.devbin/xtask-$1 bench --gemm-only --shapes llama --gemm-tokens $2 --json $R/sweep-$1-$2.json > $R/sweep-$1-$2.txt 2>&1; echo "sweep $1 $2 rc=$? at $(el) s"; }
sweep new2 512; sweep new3 512
wait $G; echo "rebuilt at $(el) s"
ours() { timeout 80 env $4 ./.devbin/xtask-$2 bench-llm /tmp/$1.gguf --steps 8 --prompt-tokens 512 --gen-tokens 128 --json $R/$1-$2-$3.json > $R/$1-$2-$3.txt 2>&1; echo "$1 $2 $3 rc=$? at $(el) s: $(sed -n 2p $R/$1-$2-$3.txt) | $(sed -n 5p $R/$1-$2-$3.txt)"; }
for m in e l s g; do ours $m new3 1 X=1; ours $m new3 rows GPUPORT_ATTN_TILES=0; ours $m new2 1 X=1; done
for m in e l s g; do ours $m new3 2 X=1; done
while kill -0 $B 2>/dev/null && [ $(el) -lt 430 ]; do sleep 2; done
echo "llama built at $(el) s"; tail -1 $R/llama-build.txt
lb() { timeout 60 /tmp/lc/b/bin/llama-bench -m /tmp/$1.gguf -ngl 99 -p 512 -n 128 -fa 1 -r 3 -o jsonl > $R/$1-llama.jsonl 2>$R/$1-llama.err; echo "llama-bench $1 rc=$? at $(el) s: $(grep -o '"n_prompt": [0-9]*\|"n_gen": [0-9]*\|"avg_ts": [0-9.]*' $R/$1-llama.jsonl | tr '\n' ' ')"; }
for m in e l s g; do [ $(el) -lt 470 ] && lb $m; done
par() { timeout 70 env $2 ./.devbin/xtask-new3 bench-llm /tmp/l.gguf --steps 8 --parallel 32,64 --prompt-tokens 128 --gen-tokens 128 --json $R/l-par-$1.json > $R/l-par-$1.txt 2>&1; echo "par $1 rc=$? at $(el) s"; grep -i "S_TG" $R/l-par-$1.txt | head -4; }
[ $(el) -lt 480 ] && par coop GPUPORT_COOP_MIN_TOKENS=17
deep() { timeout 60 ./.devbin/xtask-new3 bench-llm /tmp/g.gguf --steps 8 --prompt-tokens $1 --gen-tokens 128 --json $R/g-depth-$1.json > $R/g-depth-$1.txt 2>&1; echo "depth $1 rc=$? at $(el) s: $(sed -n 2p $R/g-depth-$1.txt) | $(sed -n 5p $R/g-depth-$1.txt)"; }
[ $(el) -lt 510 ] && deep 4096
[ $(el) -lt 520 ] && timeout 40 /tmp/lc/b/bin/llama-bench -m /tmp/g.gguf -ngl 99 -p 0 -n 128 -d 4096 -fa 1 -r 2 -o jsonl > $R/g-depth-llama.jsonl 2>/dev/null && echo "llama depth 4096: $(grep -o '"avg_ts": [0-9.]*' $R/g-depth-llama.jsonl)"
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
cd $OUT && tar czf r.tgz r && rm -rf r
