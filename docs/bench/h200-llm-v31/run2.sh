#!/usr/bin/env bash
# H200 call 2 (v31): measurements of v30's head (1e7631c + bench options), no kernel change:
# the GEMMs of batched decode at 64 tokens (every int8 few-row variant, passes of 8 and 16, every
# tensor-core tile and split), the engine's many-stream figures for the 1B/8B shapes with the
# defaults, passes of 16 (GPUPORT_Q8_ROWS_NX=16) and tensor cores from 33 rows
# (GPUPORT_COOP_MIN_Q8_TOKENS=33), then beside llama.cpp CUDA built in the same call:
# llama-batched-bench for 1B/8B, and SmolLM2/Gemma 3 prompts and decode beside llama-bench in
# two interleaved rounds with the machine quiet (issue 13).
# Carry .gl and .devbin (xtask-new.xz; skeletons, gguf_rebuild.py, build_llama_cpp.sh,
# llama-src.tar.xz).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
ls -la .devbin > $R/devbin.txt
(bash .devbin/build_llama_cpp.sh $PWD/.devbin/llama-src.tar.xz /tmp/lc > $R/llama-build.txt 2>&1) &
B=$!
xz -d .devbin/xtask-new.xz; chmod +x .devbin/xtask-new
(cd .devbin && for m in l:llama1b-q4_k_m e:llama8b-q4_k_m s:smollm2-135m-q4_1 g:gemma-3-270m-q4_k_m; do
  python3 gguf_rebuild.py ${m#*:}.skel /tmp/${m%%:*}.gguf >/dev/null; done) &
G=$!
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
save() { (cd $OUT && tar czf r.tgz r); }
X=./.devbin/xtask-new
timeout 110 $X bench --gemm-only --shapes llama --gemm-tokens 64 --json $R/gemm64.json > $R/gemm64.txt 2>&1; echo "gemm64 rc=$? at $(el) s"; grep "best" $R/gemm64.txt; save
wait $G; echo "rebuilt at $(el) s"
par() { timeout 100 env $3 $X bench-llm /tmp/$1.gguf --steps 8 --parallel 1,8,32,64 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-par-$2.json > $R/$1-par-$2.txt 2>&1; echo "$1 par $2 rc=$? at $(el) s"; grep "S_TG" $R/$1-par-$2.txt; save; }
par l def X=1; par l nx16 GPUPORT_Q8_ROWS_NX=16; par l coop33 GPUPORT_COOP_MIN_Q8_TOKENS=33
par e def X=1; par e coop33 GPUPORT_COOP_MIN_Q8_TOKENS=33
while kill -0 $B 2>/dev/null && [ $(el) -lt 380 ]; do sleep 2; done
echo "llama built at $(el) s"; tail -1 $R/llama-build.txt
one() { timeout 40 $X bench-llm /tmp/$1.gguf --steps 8 --prompt-tokens 512 --gen-tokens 128 --json $R/$1-one-$2.json > $R/$1-one-$2.txt 2>&1; echo "$1 one $2 rc=$? at $(el) s"; grep -A1 "prefill\|steps/submit" $R/$1-one-$2.txt | grep -v "^--\|sampling" | head -3;
  timeout 40 /tmp/lc/b/bin/llama-bench -m /tmp/$1.gguf -ngl 99 -p 512 -n 128 -fa 1 -r 3 -o jsonl > $R/$1-lb-$2.jsonl 2>$R/$1-lb-$2.err; echo "lb $1 $2 rc=$? at $(el) s"; grep -o '"n_prompt": [0-9]*\|"n_gen": [0-9]*\|"avg_ts": [0-9.]*' $R/$1-lb-$2.jsonl | paste -sd' '; save; }
one s 1; one g 1; one s 2; one g 2
bb() { timeout 80 /tmp/lc/b/bin/llama-batched-bench -m /tmp/$1.gguf -ngl 99 -fa on -c 20480 -b 2048 -ub 512 -npp 128 -ntg 128 -npl 1,8,32,64 --output-format jsonl > $R/$1-bb.jsonl 2>$R/$1-bb.err; echo "bb $1 rc=$? at $(el) s"; grep -o '"pl": [0-9]*\|"speed_tg": [0-9.]*' $R/$1-bb.jsonl | tr '\n' ' '; echo; save; }
for m in l e; do [ $(el) -lt 530 ] && bb $m; done
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
