#!/usr/bin/env bash
# H200 call (v22-1): tests of the changed kernels, then gpuport vs llama.cpp CUDA interleaved.
# Not yet run: the calls of 2026-12-03 got no machine (see docs/performance.md, "v22").
# Carry .gl (the Vulkan loader debs) and .devbin: release xtask and kernels_vs_cpu (kvc) binaries,
# the four skeletons, gguf_rebuild.py, build_llama_cpp.sh and llama-src.tar.xz from ../shared/tools.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
(bash .devbin/build_llama_cpp.sh $PWD/.devbin/llama-src.tar.xz /tmp/lc > $R/llama-build.txt 2>&1) &
B=$!
(cd .devbin && for m in l:llama1b-q4_k_m e:llama8b-q4_k_m s:smollm2-135m-q4_1 g:gemma-3-270m-q4_k_m; do
  python3 gguf_rebuild.py ${m#*:}.skel /tmp/${m%%:*}.gguf >/dev/null; done)
echo "rebuilt at $(el) s"
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
GPUPORT_REQUIRE_GPU=1 timeout 90 ./.devbin/kvc q8_rounding gated_rows coop_gemm > $R/kvc.txt 2>&1; echo "kvc rc=$? at $(el) s"; tail -4 $R/kvc.txt
ours() { timeout 80 ./.devbin/xtask bench-llm /tmp/$1.gguf --steps 8 --prompt-tokens 512 --gen-tokens 128 --json $R/$1-ours-$2.json > $R/$1-ours-$2.txt 2>&1; echo "ours $1 $2 rc=$? at $(el) s"; sed -n 2p $R/$1-ours-$2.txt; sed -n 6p $R/$1-ours-$2.txt; }
theirs() { timeout 80 /tmp/lc/b/bin/llama-bench -m /tmp/$1.gguf -ngl 99 -p 512 -n 128 -fa 1 -r 3 -o jsonl > $R/$1-llama-$2.jsonl 2>$R/$1-llama-$2.err; echo "llama $1 $2 rc=$? at $(el) s"; grep -o '"avg_ts": [0-9.]*' $R/$1-llama-$2.jsonl | tr '\n' ' '; echo; }
for m in l e s g; do ours $m 1; done
while kill -0 $B 2>/dev/null && [ $(el) -lt 360 ]; do sleep 2; done
echo "llama built at $(el) s"; tail -2 $R/llama-build.txt
for m in l e s g; do theirs $m 1; done
for m in l e s g; do ours $m 2; theirs $m 2; [ $(el) -lt 500 ] || break; done
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
cd $OUT && tar czf r.tgz r && rm -rf r
