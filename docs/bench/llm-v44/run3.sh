#!/usr/bin/env bash
# v44 call 3: call 2's build (n) slowed SmolLM2 and Gemma 3 at eight streams (4,512 -> 3,517,
# 4,137 -> 3,736) while the 1B and 8B gained. Two suspects, one build each: xtask-a has the
# int8 few-row kernel at 32 lanes only on matrices of at least 32 units a row (the small
# models' output heads, 18-20 units, back to 8 lanes) and the old reduction; xtask-b is a with
# the transposed quad reduction, its stores and the column fallback written with constant
# indices. xtask-t: 7796a0e. Eight streams, interleaved, small models first. Carry [.gl, .devbin].
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R target/m
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
xz -dkf .devbin/xtask-t.xz .devbin/xtask-a.xz .devbin/xtask-b.xz; chmod +x .devbin/xtask-t .devbin/xtask-a .devbin/xtask-b
(cd .devbin && for m in s:smollm2-135m-q4_1 g:gemma-3-270m-q4_k_m l:llama1b-q4_k_m e:llama8b-q4_k_m; do
  [ -e ../target/m/${m%%:*}.done ] || nice python3 gguf_rebuild.py ${m#*:}.skel ../target/m/${m%%:*}.gguf >/dev/null; touch ../target/m/${m%%:*}.done; done) &
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
save() { (cd $OUT && tar czf r.tgz r); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
par() { while [ ! -e target/m/$1.done ]; do sleep 1; done; timeout 50 ./.devbin/xtask-${2:0:1} bench-llm target/m/$1.gguf --steps 8 --parallel 8 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-par-$2.json > $R/$1-par-$2.txt 2>&1; echo "$1 8 $2 rc=$? at $(el) s: $(grep -o 'S_TG *[0-9.]* tok/s' $R/$1-par-$2.txt | paste -sd' ')"; save; }
for m in s g; do par $m t; par $m a; par $m b; done
for m in l e; do par $m a; par $m b; done
for m in s g; do [ $(el) -lt 300 ] && par $m a2 && par $m t2 ; done
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
