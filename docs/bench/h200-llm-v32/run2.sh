#!/usr/bin/env bash
# H200 call 2 (v32): the per-row causal pass by GQA group (one workgroup per row and KV head,
# one barrier per 32 keys, row splits aimed at 1024 workgroups) and no int8 rounding of rows
# bound for tensor cores ("new") beside v31's head 1450b72 ("base"): the row-kernel tests one
# at a time (call 1's `rowk` hung with its tests in parallel), `llm_tiny`, `engine`;
# `bench-llm F --batch 8,32,64` (per-dispatch profile) base/new interleaved for all four
# layouts, GPUPORT_ROW_SPLIT_WORKGROUPS=4096 on the 8B; then beside llama.cpp CUDA built in the
# same call: the engine's streams (`--parallel 1,8,32,64 --prompt-tokens 128 --gen-tokens 128`)
# against llama-batched-bench.
# Carry .gl and .devbin (xtask-base, xtask-new, rowk, tiny, engine as .xz; skeletons,
# gguf_rebuild.py, build_llama_cpp.sh, llama-src.tar.xz).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
(bash .devbin/build_llama_cpp.sh $PWD/.devbin/llama-src.tar.xz /tmp/lc > $R/llama-build.txt 2>&1) &
B=$!
for b in xtask-base xtask-new rowk tiny engine; do xz -d .devbin/$b.xz; chmod +x .devbin/$b; done
(cd .devbin && for m in l:llama1b-q4_k_m e:llama8b-q4_k_m s:smollm2-135m-q4_1 g:gemma-3-270m-q4_k_m; do
  python3 gguf_rebuild.py ${m#*:}.skel /tmp/${m%%:*}.gguf >/dev/null; done) &
G=$!
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
save() { (cd $OUT && tar czf r.tgz r); }
for t in argmax_rows norms_match elementwise rope softmax decode_attention row_table prefill_attention; do
  timeout 15 ./.devbin/rowk $t --test-threads=1 > $R/rowk-$t.txt 2>&1; echo "rowk $t rc=$? at $(el) s"; grep "test result\|panicked" $R/rowk-$t.txt | head -2; done
timeout 90 ./.devbin/tiny > $R/test-tiny.txt 2>&1; echo "tiny rc=$? at $(el) s"; grep "test result\|panicked" $R/test-tiny.txt | head -3
timeout 90 ./.devbin/engine > $R/test-engine.txt 2>&1; echo "engine rc=$? at $(el) s"; grep "test result\|panicked" $R/test-engine.txt | head -3
save
wait $G; echo "rebuilt at $(el) s"
bat() { timeout 80 env $3 ./.devbin/xtask-$2 bench-llm /tmp/$1.gguf --steps 8 --prompt-tokens 64 --gen-tokens 64 --batch 8,32,64 --json $R/$1-bat-$2$4.json > $R/$1-bat-$2$4.txt 2>&1; echo "$1 bat $2$4 rc=$? at $(el) s"; grep "batch of" $R/$1-bat-$2$4.txt | awk '{print $3, $4}' | paste -sd' '; save; }
for m in e l s g; do bat $m base X=1 ""; bat $m new X=1 ""; done
bat e new GPUPORT_ROW_SPLIT_WORKGROUPS=4096 -4096
while kill -0 $B 2>/dev/null && [ $(el) -lt 330 ]; do sleep 2; done
echo "llama built at $(el) s"; tail -1 $R/llama-build.txt
par() { timeout 70 ./.devbin/xtask-new bench-llm /tmp/$1.gguf --steps 8 --parallel 1,8,32,64 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-par.json > $R/$1-par.txt 2>&1; echo "$1 par rc=$? at $(el) s"; grep "S_TG" $R/$1-par.txt; save; }
bb() { timeout 60 /tmp/lc/b/bin/llama-batched-bench -m /tmp/$1.gguf -ngl 99 -fa on -c 20480 -b 2048 -ub 512 -npp 128 -ntg 128 -npl 1,8,32,64 --output-format jsonl > $R/$1-bb.jsonl 2>$R/$1-bb.err; echo "bb $1 rc=$? at $(el) s"; grep -o '"pl": [0-9]*\|"speed_tg": [0-9.]*' $R/$1-bb.jsonl | tr '\n' ' '; echo; save; }
for m in e l s g; do [ $(el) -lt 520 ] && par $m; [ $(el) -lt 540 ] && bb $m; done
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
