#!/usr/bin/env bash
# H200 call (v23): v22 (1115415, "old"), the one-dispatch int8 inputs (5ba2116, "new":
# norm_blocks, q8_blocks, attention combine into blocks) and the norm's loads four at a time
# (the commit after, "norm"), interleaved, beside llama.cpp CUDA built in the same call.
# Carry .gl (the Vulkan loader debs) and .devbin: xtask-old / -new / -norm (release `xtask`
# binaries of the three commits), kvc / rowk / tiny (release test binaries kernels_vs_cpu,
# row_kernels, llm_tiny of "norm"), the four skeletons, gguf_rebuild.py, build_llama_cpp.sh
# and llama-src.tar.xz from ../shared/tools; binaries stripped and xz-compressed.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
(bash .devbin/build_llama_cpp.sh $PWD/.devbin/llama-src.tar.xz /tmp/lc > $R/llama-build.txt 2>&1) &
B=$!
for b in .devbin/*.xz; do [ "$b" = .devbin/llama-src.tar.xz ] || xz -d "$b"; done; chmod +x .devbin/xtask-old .devbin/xtask-new .devbin/xtask-norm .devbin/kvc .devbin/rowk .devbin/tiny
(cd .devbin && for m in l:llama1b-q4_k_m e:llama8b-q4_k_m s:smollm2-135m-q4_1 g:gemma-3-270m-q4_k_m; do
  python3 gguf_rebuild.py ${m#*:}.skel /tmp/${m%%:*}.gguf >/dev/null; done)
echo "rebuilt at $(el) s"
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
timeout 60 ./.devbin/kvc int8_blocks q8_rounding gated_rows coop_gemm > $R/kvc.txt 2>&1; echo "kvc rc=$? at $(el) s"; grep "test result" $R/kvc.txt
timeout 30 ./.devbin/rowk decode_attention > $R/rowk.txt 2>&1; echo "rowk rc=$?"; grep "test result" $R/rowk.txt
timeout 60 ./.devbin/tiny int8_projections > $R/tiny.txt 2>&1; echo "tiny rc=$?"; grep "test result" $R/tiny.txt
ours() { timeout 80 ./.devbin/xtask-$2 bench-llm /tmp/$1.gguf --steps 8 --prompt-tokens 512 --gen-tokens 128 --json $R/$1-$2-$3.json > $R/$1-$2-$3.txt 2>&1; echo "$1 $2 $3 rc=$? at $(el) s: $(sed -n 2p $R/$1-$2-$3.txt) | $(sed -n 5p $R/$1-$2-$3.txt)"; }
theirs() { timeout 80 /tmp/lc/b/bin/llama-bench -m /tmp/$1.gguf -ngl 99 -p 512 -n 128 -fa 1 -r 3 -o jsonl > $R/$1-llama-$2.jsonl 2>$R/$1-llama-$2.err; echo "llama $1 $2 rc=$? at $(el) s: $(grep -o '"avg_ts": [0-9.]*' $R/$1-llama-$2.jsonl | tr '\n' ' ')"; }
for m in e l; do for b in old new norm; do ours $m $b 1; done; done
while kill -0 $B 2>/dev/null && [ $(el) -lt 330 ]; do sleep 2; done
echo "llama built at $(el) s"; tail -2 $R/llama-build.txt
for m in e l s g; do theirs $m 1; done
for m in e l; do for b in norm new old; do [ $(el) -lt 500 ] || break; ours $m $b 2; done; done
for m in s g; do [ $(el) -lt 540 ] || break; ours $m norm 1; done
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
cd $OUT && tar czf r.tgz r && rm -rf r
