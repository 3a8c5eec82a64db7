#!/usr/bin/env bash
# H200 call 3 (v30): this stop's head ("new": f16 GEMM input rows, split target 256, the tiled
# prompt attention's parallel softmax, the last prompt token in its batch, prompt attention on
# tensor cores) beside v29's head (d8c7bc5, "base"), "new" with GPUPORT_ATTN_COOP=0 ("noca"),
# and llama.cpp CUDA built in the same call: the GEMM and tensor-core CPU tests, the row kernels'
# tests (prompt attention on tensor cores against the f16-rounded reference), 512-token prompts
# in two interleaved rounds (1B/8B shapes; SmolLM2 and Gemma 3 once), the full GEMV sweep at
# 256 MB (bench --shapes large, cut at 110 s), llama-bench -p 512 -n 128 for all four.
# Carry .gl and .devbin (xtask-base, xtask-new, kvc, rowk as .xz; skeletons, gguf_rebuild.py,
# build_llama_cpp.sh, llama-src.tar.xz).
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
save() { (cd $OUT && tar czf r.tgz r); }
timeout 90 ./.devbin/kvc coop gemm > $R/kvc.txt 2>&1; echo "kvc rc=$? at $(el) s"; grep "test result\|panicked" $R/kvc.txt | head -3
timeout 60 ./.devbin/rowk > $R/rowk.txt 2>&1; echo "rowk rc=$? at $(el) s"; grep "test result\|panicked\|element" $R/rowk.txt | head -4
wait $G; echo "rebuilt at $(el) s"
pre() { timeout 60 env $3 ./.devbin/xtask-$2 bench-llm /tmp/$1.gguf --steps 8 --prompt-tokens 512 --gen-tokens 128 --json $R/$1-pre-$2$4.json > $R/$1-pre-$2$4.txt 2>&1; echo "$1 pre $2$4 rc=$? at $(el) s"; grep -i "prefill\|^ *8 " $R/$1-pre-$2$4.txt | head -2; }
round() { for m in e l; do pre $m base X=1 "-$1"; pre $m new X=1 "-$1"; pre $m new GPUPORT_ATTN_COOP=0 "-noca-$1"; done; save; }
round 1
for m in s g; do pre $m new X=1 "-1"; done; save
timeout 110 ./.devbin/xtask-new bench --shapes large --json $R/gemv-large.json > $R/gemv-large.txt 2>&1; echo "gemv rc=$? at $(el) s"; grep "best" $R/gemv-large.txt | head -20; save
while kill -0 $B 2>/dev/null && [ $(el) -lt 420 ]; do sleep 2; done
echo "llama built at $(el) s"; tail -1 $R/llama-build.txt
for m in e l s g; do timeout 60 /tmp/lc/b/bin/llama-bench -m /tmp/$m.gguf -ngl 99 -p 512 -n 128 -fa 1 -r 3 -o jsonl > $R/$m-lb.jsonl 2>$R/$m-lb.err; echo "lb $m rc=$? at $(el) s"; grep -o '"n_prompt": [0-9]*\|"n_gen": [0-9]*\|"avg_ts": [0-9.]*' $R/$m-lb.jsonl | paste -sd' '; done
save
[ $(el) -lt 440 ] && round 2
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
