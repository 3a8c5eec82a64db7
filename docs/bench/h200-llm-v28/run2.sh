#!/usr/bin/env bash
# H200 call 2 (v28): the int8 few-row GEMM (gemm_rows_q8.wgsl; "new") beside the head binary
# ("head", d37b8c4) and llama.cpp's llama-batched-bench, built in the same call: the int8
# kernel's CPU-reference tests there, the GEMM sweep at 8 and 32 rows (the float few-row
# kernel, the int8 one at its default and other tunables), batched decode with its per-kernel
# profile, and the engine's many-stream figures interleaved head / new.
# Carry .gl and .devbin: xtask-head / xtask-new, kvc (release kernels_vs_cpu of new), the
# skeletons, gguf_rebuild.py, build_llama_cpp.sh, llama-src.tar.xz.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
(bash .devbin/build_llama_cpp.sh $PWD/.devbin/llama-src.tar.xz /tmp/lc > $R/llama-build.txt 2>&1) &
B=$!
for b in .devbin/*.xz; do [ "$b" = .devbin/llama-src.tar.xz ] || xz -d "$b"; done; chmod +x .devbin/xtask-* .devbin/kvc
(cd .devbin && for m in l:llama1b-q4_k_m e:llama8b-q4_k_m s:smollm2-135m-q4_1 g:gemma-3-270m-q4_k_m; do
  python3 gguf_rebuild.py ${m#*:}.skel /tmp/${m%%:*}.gguf >/dev/null; done) &
G=$!
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
timeout 90 ./.devbin/kvc few_row q8 > $R/kvc.txt 2>&1; echo "kvc rc=$? at $(el) s"; grep "test result\|panicked" $R/kvc.txt | head -3
sweep() { timeout 100 ./.devbin/xtask-new bench --gemm-only --shapes llama --gemm-tokens $1 --json $R/sweep-$1.json > $R/sweep-$1.txt 2>&1; echo "sweep $1 rc=$? at $(el) s"; grep "best" $R/sweep-$1.txt; }
sweep 8; sweep 32
wait $G; echo "rebuilt at $(el) s"
bat() { timeout 120 env $3 ./.devbin/xtask-$2 bench-llm /tmp/$1.gguf --steps 8 --prompt-tokens 128 --gen-tokens 64 --batch 8,32,64 --json $R/$1-batch-$2$4.json > $R/$1-batch-$2$4.txt 2>&1; echo "$1 batch $2$4 rc=$? at $(el) s"; grep -A1 "batch of" $R/$1-batch-$2$4.txt; }
bat l new X=1 ""; bat e new X=1 ""
bat l new GPUPORT_COOP_MIN_TOKENS=65 -c65; bat e new GPUPORT_COOP_MIN_TOKENS=65 -c65
par() { timeout 150 env $3 ./.devbin/xtask-$2 bench-llm /tmp/$1.gguf --steps 8 --parallel 1,8,32,64 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-par-$2$4.json > $R/$1-par-$2$4.txt 2>&1; echo "$1 par $2$4 rc=$? at $(el) s"; grep "S_TG" $R/$1-par-$2$4.txt; }
par l new X=1 ""; par l head X=1 ""; par e new X=1 ""
while kill -0 $B 2>/dev/null && [ $(el) -lt 450 ]; do sleep 2; done
echo "llama built at $(el) s"; tail -1 $R/llama-build.txt
bb() { timeout 100 /tmp/lc/b/bin/llama-batched-bench -m /tmp/$1.gguf -ngl 99 -fa on -c 20480 -b 2048 -ub 512 -npp 128 -ntg 128 -npl 1,8,32,64 --output-format jsonl > $R/$1-bb.jsonl 2>$R/$1-bb.err; echo "bb $1 rc=$? at $(el) s"; grep -o '"pl": [0-9]*\|"speed_tg": [0-9.]*' $R/$1-bb.jsonl | tr '\n' ' '; echo; }
for m in l e; do [ $(el) -lt 500 ] && bb $m; done
[ $(el) -lt 470 ] && par l new GPUPORT_COOP_MIN_TOKENS=65 -c65
for m in s g; do [ $(el) -lt 500 ] && bb $m; done
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
cd $OUT && tar czf r.tgz r && rm -rf r
