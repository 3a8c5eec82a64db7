#!/usr/bin/env bash
# H200 call 1 (v32): v31's head (1450b72). The tensor-core paths' tests after v31's threshold
# (`kvc coop gemm few_row`, `rowk`, `llm_tiny`, `engine`: the tiny models' forward passes against
# the CPU and batch/solo equality on an adapter with tensor cores); where the step of batched
# decode goes now (`bench-llm F --batch 8,32,64`, per-dispatch profile) for all four layouts;
# GPUPORT_INT8_MIN_BYTES=0 on SmolLM2/Gemma 3 at 8 and 32 rows; GPUPORT_FOLD_MAX_BLOCKS=64 vs 16
# on their decode after a 512-token prompt, interleaved. No llama.cpp in this call.
# Carry .gl and .devbin (xtask, kvc, rowk, tiny, engine as .xz; skeletons, gguf_rebuild.py).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for b in xtask kvc rowk tiny engine; do xz -d .devbin/$b.xz; chmod +x .devbin/$b; done
(cd .devbin && for m in l:llama1b-q4_k_m e:llama8b-q4_k_m s:smollm2-135m-q4_1 g:gemma-3-270m-q4_k_m; do
  python3 gguf_rebuild.py ${m#*:}.skel /tmp/${m%%:*}.gguf >/dev/null; done) &
G=$!
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
save() { (cd $OUT && tar czf r.tgz r); }
t() { timeout $2 ./.devbin/$1 ${@:3} > $R/test-$1.txt 2>&1; echo "$1 rc=$? at $(el) s"; grep "test result\|panicked\|FAILED" $R/test-$1.txt | head -4; }
t kvc 120 coop few_row; t rowk 60; t tiny 120; t engine 120; save
wait $G; echo "rebuilt at $(el) s"
X=./.devbin/xtask
bat() { timeout 90 env $3 $X bench-llm /tmp/$1.gguf --steps 8 --prompt-tokens 64 --gen-tokens 64 --batch $4 --json $R/$1-bat-$2.json > $R/$1-bat-$2.txt 2>&1; echo "$1 bat $2 rc=$? at $(el) s"; grep -i "sequences\|batch" $R/$1-bat-$2.txt | head -5; save; }
bat s def X=1 8,32,64; bat g def X=1 8,32,64; bat l def X=1 8,32,64; bat e def X=1 8,32,64
bat s i8 GPUPORT_INT8_MIN_BYTES=0 8,32; bat g i8 GPUPORT_INT8_MIN_BYTES=0 8,32
fold() { timeout 40 env GPUPORT_FOLD_MAX_BLOCKS=$2 $X bench-llm /tmp/$1.gguf --steps 8 --prompt-tokens 512 --gen-tokens 128 --json $R/$1-fold$2-$3.json > $R/$1-fold$2-$3.txt 2>&1; echo "$1 fold $2 $3 rc=$? at $(el) s"; grep -A1 "steps/submit" $R/$1-fold$2-$3.txt | tail -1; }
for r in 1 2; do for m in s g; do [ $(el) -lt 480 ] && fold $m 16 $r; [ $(el) -lt 480 ] && fold $m 64 $r; done; done
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
