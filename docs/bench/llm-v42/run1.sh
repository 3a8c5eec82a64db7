#!/usr/bin/env bash
# v42 call 1 (a fresh machine, ~450 s, no llama.cpp: every figure here is gpuport against
# gpuport in one call). Issue 15's 8-stream gap (v41 call 1: SmolLM2 0.80x, Gemma 3 0.89x,
# the 1B 0.97x, the 8B 1.00x llama.cpp; 8 streams over one 3.4-4.4x): first the per-kernel
# split of an 8-row step of SmolLM2 and Gemma 3 (never profiled since v28), then 8 streams of
# each model under the knobs that change an 8-row step's kernels, interleaved, two rounds:
#   default | unbounded (naga's loop counter off in every family: what the counter costs the
#   float few-row GEMM and the norms the small models' 8-row steps run on) | int8 (every
#   stack on int8 input: the int8 few-row kernel instead of the float one) | gemm-norm off
#   (the norm a dispatch of its own) | apart (the 1B/8B: the row table's combine then a
#   quantizing pass, as before v42, against the combine writing the int8 blocks itself).
# .devbin/xtask-t.xz from HEAD. Carry [.gl, .devbin].
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
xz -dk .devbin/xtask-t.xz; chmod +x .devbin/xtask-t
X=./.devbin/xtask-t
(cd .devbin && for m in s:smollm2-135m-q4_1 g:gemma-3-270m-q4_k_m l:llama1b-q4_k_m e:llama8b-q4_k_m; do
  python3 gguf_rebuild.py ${m#*:}.skel /tmp/${m%%:*}.gguf >/dev/null; touch /tmp/${m%%:*}.done; done) &
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
save() { (cd $OUT && tar czf r.tgz r); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
prof() { while [ ! -e /tmp/$1.done ]; do sleep 1; done; timeout 60 $X bench-llm /tmp/$1.gguf --steps 8 --prompt-tokens 128 --gen-tokens 32 --batch 8 --json $R/$1-batch.json > $R/$1-batch.txt 2>&1; echo "batch $1 rc=$? at $(el) s"; save; }
prof s; prof g
par() { while [ ! -e /tmp/$1.done ]; do sleep 1; done; timeout 40 env $3 $X bench-llm /tmp/$1.gguf --steps 8 --parallel 1,8 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-$2.json > $R/$1-$2.txt 2>&1; echo "$1 $2 rc=$? at $(el) s: $(grep -o 'S_TG *[0-9.]* tok/s' $R/$1-$2.txt | paste -sd' ')"; save; }
for i in 1 2; do
  for m in s g l e; do
    [ $(el) -lt 540 ] || break
    par $m def$i ""
    par $m unb$i GPUPORT_UNBOUNDED_LOOPS=all
    par $m int8$i GPUPORT_INT8_MIN_BYTES=0
    par $m nonorm$i GPUPORT_GEMM_NORM=0
    case $m in l|e) par $m apart$i GPUPORT_ROWS_COMBINE_BLOCKS=0;; esac
  done
done
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
