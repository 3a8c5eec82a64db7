#!/usr/bin/env bash
# v44 call 4 (NOT RUN: the session's device time was spent; ~600 s on a fresh machine: drop
# the llama.cpp part, or split it into two calls on one warm machine). Build
# xtask-h from the head (the int8 GEMV entries only on rows of >= 4 units a lane, the int8
# few-row kernel at 32 lanes with the transposed reduction) and keep xtask-t (7796a0e: entries
# everywhere) in .devbin with .gl and llama-src.tar.xz. llama.cpp's CUDA build starts first,
# niced, into target/lc. (1) One stream of the four models, h / t / t without the entries
# (GPUPORT_TUNING=.devbin/tuning-v42.json): does the 1B get its 994-1,035 tok/s back, and do
# the long-row entries move the 8B? SmolLM2's 8 streams with int8 input for every stack
# (GPUPORT_INT8_MIN_BYTES=0); the 1B's and 8B's at 4 rows a thread. (2) The GEMV table through --tuned on h (the entries at
# 8192 columns). (3) Issue 15's table beside llama-batched-bench, one call. Carry [.gl, .devbin].
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R target/m
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -e target/lc.done ] || (nice -n 10 bash .devbin/build_llama_cpp.sh $PWD/.devbin/llama-src.tar.xz $PWD/target/lc > $R/llama-build.txt 2>&1; touch target/lc.done) &
xz -dkf .devbin/xtask-h.xz .devbin/xtask-t.xz; chmod +x .devbin/xtask-h .devbin/xtask-t
(cd .devbin && for m in l:llama1b-q4_k_m e:llama8b-q4_k_m s:smollm2-135m-q4_1 g:gemma-3-270m-q4_k_m; do
  [ -e ../target/m/${m%%:*}.done ] || nice python3 gguf_rebuild.py ${m#*:}.skel ../target/m/${m%%:*}.gguf >/dev/null; touch ../target/m/${m%%:*}.done; done) &
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
OLD=GPUPORT_TUNING=$PWD/.devbin/tuning-v42.json
save() { (cd $OUT && tar czf r.tgz r); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
par() { while [ ! -e target/m/$1.done ]; do sleep 1; done; timeout 60 env $5 ./.devbin/xtask-$2 bench-llm target/m/$1.gguf --steps 8 --parallel $4 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-par-$2$3.json > $R/$1-par-$2$3.txt 2>&1; echo "$1 $4 $2$3 rc=$? at $(el) s: $(grep -o 'S_TG *[0-9.]* tok/s' $R/$1-par-$2$3.txt | paste -sd' ')"; save; }
for m in l e s g; do par $m h 1 1 X=1; par $m t 1 1 X=1; par $m t old 1 $OLD; done
# SmolLM2's 8 streams with int8 input for every projection stack (next-kernels.md item 2).
par s h 8 8 X=1; par s h i8 8 GPUPORT_INT8_MIN_BYTES=0; par s h 8b 8 X=1
# The 1B's and 8B's 8 streams at 4 rows a thread (v35: slower at 8 rows, with 8-16 lanes and
# the reduction by columns; now 32 lanes and the transposed one).
for m in e l; do par $m h 8 8 X=1; par $m h r4 8 GPUPORT_Q8_ROWS_RPT=4; done
timeout 40 ./.devbin/xtask-h bench --shapes large --tuned --json $R/gemv-tuned-h.json > $R/gemv-tuned-h.txt 2>&1; echo "gemv tuned h rc=$? at $(el) s"; grep large $R/gemv-tuned-h.txt | awk '{print $2, $3, $8}' | paste -sd' '; save
while [ ! -e target/lc.done ] && [ $(el) -lt 330 ]; do sleep 2; done
echo "llama built at $(el) s"; tail -1 $R/llama-build.txt; save
bb() { [ -x target/lc/b/bin/llama-batched-bench ] || return; timeout 45 target/lc/b/bin/llama-batched-bench -m target/m/$1.gguf -ngl 99 -fa on -c 20480 -b 2048 -ub 512 -npp 128 -ntg 128 -npl 1,8,32,64 --output-format jsonl > $R/$1-bb.jsonl 2>$R/$1-bb.err; echo "bb $1 rc=$? at $(el) s"; grep -o '"pl": [0-9]*\|"speed_tg": [0-9.]*' $R/$1-bb.jsonl | tr '\n' ' '; echo; save; }
for m in e l s g; do bb $m; par $m h all 1,8,32,64 X=1; done
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
