#!/usr/bin/env bash
# H200 call 3 (v28): "new" = the int8 few-row GEMM with the norms writing its blocks and the
# batched causal pass split across workgroups (3 commits after call 2's binary) beside the head
# binary (d37b8c4) and llama-batched-bench built in the same call: the changed kernels' tests,
# batched decode's per-kernel profile, and the engine's many-stream figures for all four
# layouts interleaved new / head.
# Carry .gl and .devbin: xtask-head / xtask-new, kvc / rowk (release test binaries of new),
# the skeletons, gguf_rebuild.py, build_llama_cpp.sh, llama-src.tar.xz.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
(bash .devbin/build_llama_cpp.sh $PWD/.devbin/llama-src.tar.xz /tmp/lc > $R/llama-build.txt 2>&1) &
B=$!
for b in .devbin/*.xz; do [ "$b" = .devbin/llama-src.tar.xz ] || xz -d "$b"; done; chmod +x .devbin/xtask-* .devbin/kvc .devbin/rowk
(cd .devbin && for m in l:llama1b-q4_k_m e:llama8b-q4_k_m s:smollm2-135m-q4_1 g:gemma-3-270m-q4_k_m; do
  python3 gguf_rebuild.py ${m#*:}.skel /tmp/${m%%:*}.gguf >/dev/null; done) &
G=$!
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
timeout 90 ./.devbin/kvc few_row q8 > $R/kvc.txt 2>&1; echo "kvc rc=$? at $(el) s"; grep "test result\|panicked" $R/kvc.txt | head -3
timeout 60 ./.devbin/rowk attention > $R/rowk.txt 2>&1; echo "rowk rc=$? at $(el) s"; grep "test result\|panicked" $R/rowk.txt | head -3
wait $G; echo "rebuilt at $(el) s"
bat() { timeout 100 ./.devbin/xtask-$2 bench-llm /tmp/$1.gguf --steps 8 --prompt-tokens 128 --gen-tokens 64 --batch 8,32,64 --json $R/$1-batch-$2.json > $R/$1-batch-$2.txt 2>&1; echo "$1 batch $2 rc=$? at $(el) s"; grep -A1 "batch of" $R/$1-batch-$2.txt; }
bat l new; bat e new
par() { [ $(el) -lt $3 ] || return; timeout 150 ./.devbin/xtask-$2 bench-llm /tmp/$1.gguf --steps 8 --parallel 1,8,32,64 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-par-$2.json > $R/$1-par-$2.txt 2>&1; echo "$1 par $2 rc=$? at $(el) s"; grep "S_TG" $R/$1-par-$2.txt; }
par l new 400; par l head 400; par e new 400; par s new 400; par s head 400; par g new 400; par g head 400
while kill -0 $B 2>/dev/null && [ $(el) -lt 430 ]; do sleep 2; done
echo "llama built at $(el) s"; tail -1 $R/llama-build.txt
bb() { timeout 100 /tmp/lc/b/bin/llama-batched-bench -m /tmp/$1.gguf -ngl 99 -fa on -c 20480 -b 2048 -ub 512 -npp 128 -ntg 128 -npl 1,8,32,64 --output-format jsonl > $R/$1-bb.jsonl 2>$R/$1-bb.err; echo "bb $1 rc=$? at $(el) s"; grep -o '"pl": [0-9]*\|"speed_tg": [0-9.]*' $R/$1-bb.jsonl | tr '\n' ' '; echo; }
for m in l e s g; do [ $(el) -lt 500 ] && bb $m; done
one() { [ $(el) -lt 520 ] || return; timeout 40 ./.devbin/xtask-new bench-llm /tmp/$1.gguf --steps 8 --prompt-tokens 512 --gen-tokens 128 --json $R/$1-one-new.json > $R/$1-one-new.txt 2>&1; echo "$1 one new rc=$? at $(el) s: $(sed -n 2p $R/$1-one-new.txt) | $(sed -n 5p $R/$1-one-new.txt)"; }
one e; one l
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
cd $OUT && tar czf r.tgz r && rm -rf r
