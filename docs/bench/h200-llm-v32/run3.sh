#!/usr/bin/env bash
# H200 call 3 (v32): the per-row causal pass rewritten again ("new": each block of keys and
# values staged in workgroup memory from coalesced loads issued a block ahead, 32 keys a block
# at head dims up to 128, 16 at 256) beside v31's head 1450b72 ("base"): the row-kernel tests
# (in parallel once, as call 1 hung, then one at a time), `llm_tiny`, `engine`;
# `bench-llm F --batch 8,32,64` base/new interleaved for all four layouts, with
# GPUPORT_ROW_SPLIT_WORKGROUPS=4096 (1024 is new's default) on the 1B/8B and 0 (no split) on
# SmolLM2, and SmolLM2 with GPUPORT_COOP_SPLIT_TARGET=0; then beside
# llama.cpp CUDA built in the same call: the engine's streams (`--parallel 1,8,32,64
# --prompt-tokens 128 --gen-tokens 128`) against llama-batched-bench.
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
timeout 12 ./.devbin/rowk > $R/rowk-parallel.txt 2>&1; echo "rowk parallel rc=$? at $(el) s"; grep "test result\|panicked" $R/rowk-parallel.txt | head -2
for t in decode_attention row_table prefill_attention; do
  timeout 15 ./.devbin/rowk $t --test-threads=1 > $R/rowk-$t.txt 2>&1; echo "rowk $t rc=$? at $(el) s"; grep "test result\|panicked" $R/rowk-$t.txt | head -2; done
timeout 60 ./.devbin/tiny > $R/test-tiny.txt 2>&1; echo "tiny rc=$? at $(el) s"; grep "test result\|panicked" $R/test-tiny.txt | head -3
timeout 60 ./.devbin/engine > $R/test-engine.txt 2>&1; echo "engine rc=$? at $(el) s"; grep "test result\|panicked" $R/test-engine.txt | head -3
save
wait $G; echo "rebuilt at $(el) s"
bat() { timeout 80 env $3 ./.devbin/xtask-$2 bench-llm /tmp/$1.gguf --steps 8 --prompt-tokens 64 --gen-tokens 64 --batch $5 --json $R/$1-bat-$2$4.json > $R/$1-bat-$2$4.txt 2>&1; echo "$1 bat $2$4 rc=$? at $(el) s"; grep "batch of" $R/$1-bat-$2$4.txt | awk '{print $3, $4}' | paste -sd' '; save; }
for m in e l; do bat $m base X=1 "" 8,32,64; bat $m new X=1 "" 8,32,64; bat $m new GPUPORT_ROW_SPLIT_WORKGROUPS=4096 -rs4096 8,32,64; done
bat s base X=1 "" 8,32,64; bat s new X=1 "" 8,32,64; bat s new GPUPORT_ROW_SPLIT_WORKGROUPS=0 -rs0 8,32
bat s new GPUPORT_COOP_SPLIT_TARGET=0 -cs0 32,64
bat g base X=1 "" 8,32,64; bat g new X=1 "" 8,32,64
while kill -0 $B 2>/dev/null && [ $(el) -lt 330 ]; do sleep 2; done
echo "llama built at $(el) s"; tail -1 $R/llama-build.txt
par() { timeout 70 ./.devbin/xtask-new bench-llm /tmp/$1.gguf --steps 8 --parallel 1,8,32,64 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-par.json > $R/$1-par.txt 2>&1; echo "$1 par rc=$? at $(el) s"; grep "S_TG" $R/$1-par.txt; save; }
bb() { timeout 60 /tmp/lc/b/bin/llama-batched-bench -m /tmp/$1.gguf -ngl 99 -fa on -c 20480 -b 2048 -ub 512 -npp 128 -ntg 128 -npl 1,8,32,64 --output-format jsonl > $R/$1-bb.jsonl 2>$R/$1-bb.err; echo "bb $1 rc=$? at $(el) s"; grep -o '"pl": [0-9]*\|"speed_tg": [0-9.]*' $R/$1-bb.jsonl | tr '\n' ' '; echo; save; }
for m in e l s g; do [ $(el) -lt 520 ] && par $m; [ $(el) -lt 545 ] && bb $m; done
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
