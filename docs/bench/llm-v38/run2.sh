#!/usr/bin/env bash
# v38 call 2 (~8 minutes): the defaults of v38 (Q4_K tensor-core chunks of 64 columns, the f16
# KV cache on GPUs) beside llama.cpp's CUDA backend, built in this call: issue 15's table
# (`bench-llm --parallel 1,8,32,64` against `llama-batched-bench -npl 1,8,32,64`, all four
# layouts) and issue 13's depth goal (Gemma 3 after 0 / 4,096 / 16,384 prompt tokens against
# `llama-bench -fa 1 -p 0 -n 128 -d 0,4096,16384`). llama.cpp builds on cores 0-12 while
# gpuport runs pinned to 13-15 (its host thread then meets no compiler); llama.cpp's runs come
# after its build, then the 8B's batched step by kernel (8, 32 and 64 rows: where a step's time
# goes beside the GEMMs) and gpuport's second round of the 1B/8B where time is left.
# Build and carry as run1.sh says.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
(taskset -c 0-12 bash .devbin/build_llama_cpp.sh $PWD/.devbin/llama-src.tar.xz /tmp/lc > $R/llama-build.txt 2>&1) &
B=$!
xz -d .devbin/xtask-t.xz; chmod +x .devbin/xtask-t
X="taskset -c 13-15 ./.devbin/xtask-t"
(cd .devbin && for m in g:gemma-3-270m-q4_k_m s:smollm2-135m-q4_1 l:llama1b-q4_k_m e:llama8b-q4_k_m; do
  taskset -c 13-15 python3 gguf_rebuild.py ${m#*:}.skel /tmp/${m%%:*}.gguf >/dev/null; touch /tmp/${m%%:*}.done; done) &
G=$!
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
save() { (cd $OUT && tar czf r.tgz r); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
while [ ! -e /tmp/s.done ]; do sleep 1; done
deep() { timeout 45 $X bench-llm /tmp/g.gguf --steps 8 --prompt-tokens $1 --gen-tokens 128 --json $R/g-d$1-$2.json > $R/g-d$1-$2.txt 2>&1; echo "g depth $1 #$2 rc=$? at $(el) s: $(grep -A1 'steps/submit' $R/g-d$1-$2.txt | tail -1)"; save; }
for d in 1 4096 16384; do deep $d 1; done
par() { timeout 70 $X bench-llm /tmp/$1.gguf --steps 8 --parallel 1,8,32,64 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-par-$2.json > $R/$1-par-$2.txt 2>&1; echo "$1 par #$2 rc=$? at $(el) s"; grep "S_TG" $R/$1-par-$2.txt; save; }
par s 1; par g 1
wait $G
par l 1; par e 1
while kill -0 $B 2>/dev/null && [ $(el) -lt 400 ]; do sleep 2; done
echo "llama built at $(el) s"; tail -1 $R/llama-build.txt
bb() { timeout 45 /tmp/lc/b/bin/llama-batched-bench -m /tmp/$1.gguf -ngl 99 -fa on -c 20480 -b 2048 -ub 512 -npp 128 -ntg 128 -npl 1,8,32,64 --output-format jsonl > $R/$1-bb.jsonl 2>$R/$1-bb.err; echo "bb $1 rc=$? at $(el) s"; grep -o '"pl": [0-9]*\|"speed_tg": [0-9.]*' $R/$1-bb.jsonl | tr '\n' ' '; echo; save; }
bb e; bb l; bb g; bb s
timeout 60 /tmp/lc/b/bin/llama-bench -m /tmp/g.gguf -ngl 99 -fa 1 -p 0 -n 128 -d 0,4096,16384 -o jsonl > $R/g-lb-depth.jsonl 2>$R/g-lb-depth.err; echo "llama-bench depth rc=$? at $(el) s"; grep -o '"n_depth": [0-9]*\|"avg_ts": [0-9.]*' $R/g-lb-depth.jsonl | tr '\n' ' '; echo; save
prof() { timeout 40 $X bench-llm /tmp/$1.gguf --steps 8 --prompt-tokens 16 --gen-tokens 16 --batch 8,32,64 --json $R/$1-batch.json > $R/$1-batch.txt 2>&1; echo "$1 batch profile rc=$? at $(el) s"; grep -A1 "batch of" $R/$1-batch.txt; save; }
[ $(el) -lt 460 ] && prof e
[ $(el) -lt 480 ] && par e 2
[ $(el) -lt 510 ] && par l 2
[ $(el) -lt 530 ] && for d in 1 16384; do deep $d 2; done
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
