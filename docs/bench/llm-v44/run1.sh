#!/usr/bin/env bash
# v44 call 1 (v43's run4.sh with one binary): xtask-t is 7796a0e's build; the tuning entries
# before v43's int8-GEMV sweep come from .devbin/tuning-v42.json through GPUPORT_TUNING (the
# user's table replaces the committed entry: the H100's by an empty one, i.e. the defaults; the
# H200's by 2708a31^'s). (1) The GEMV table at 256 MB through the entries, old (o) and new (t)
# interleaved. (2) One and eight streams of the 1B and 8B, old and new: does one-stream decode
# move with its int8 GEMVs? (3) Eight streams with the few-row kernels' lanes forced to 16 and
# 32 against the rule's. (4) 32 streams of the 8B and 1B with the int8 few-row kernel at 32
# lanes in place of the tensor cores (GPUPORT_COOP_MIN_Q8_TOKENS=64). (5) On an H200 only, the
# f16/f32 float GEMV swept (it crashed the H100's driver in v43). Carry [.gl, .devbin].
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R target/m
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
xz -dkf .devbin/xtask-t.xz; chmod +x .devbin/xtask-t
(cd .devbin && for m in l:llama1b-q4_k_m e:llama8b-q4_k_m s:smollm2-135m-q4_1 g:gemma-3-270m-q4_k_m; do
  [ -e ../target/m/${m%%:*}.done ] || nice python3 gguf_rebuild.py ${m#*:}.skel ../target/m/${m%%:*}.gguf >/dev/null; touch ../target/m/${m%%:*}.done; done) &
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
OLD=GPUPORT_TUNING=$PWD/.devbin/tuning-v42.json
save() { (cd $OUT && tar czf r.tgz r); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
gt() { timeout 40 env $2 ./.devbin/xtask-t bench --shapes large --tuned --json $R/gemv-tuned-$1.json > $R/gemv-tuned-$1.txt 2>&1; echo "gemv tuned $1 rc=$? at $(el) s"; grep large $R/gemv-tuned-$1.txt | awk '{print $2, $3, $8}' | paste -sd' '; save; }
gt o1 $OLD; gt t1 X=1; gt o2 $OLD; gt t2 X=1
par() { while [ ! -e target/m/$1.done ]; do sleep 1; done; timeout 50 env $4 ./.devbin/xtask-t bench-llm target/m/$1.gguf --steps 8 --parallel $3 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-par-$2.json > $R/$1-par-$2.txt 2>&1; echo "$1 $3 $2 rc=$? at $(el) s: $(grep -o 'S_TG *[0-9.]* tok/s' $R/$1-par-$2.txt | paste -sd' ')"; save; }
for m in l e; do par $m o1 1,8 $OLD; par $m t1 1,8 X=1; done
for m in l e; do for n in 16 32; do [ $(el) -lt 330 ] && par $m q$n 8 GPUPORT_Q8_ROWS_LANES=$n; done; done
for m in s g; do [ $(el) -lt 380 ] && par $m d 8 X=1 && for n in 16 32; do par $m f$n 8 GPUPORT_ROWS_LANES=$n; done; done
for m in e l; do [ $(el) -lt 470 ] && par $m c32 32 X=1 && par $m r32 32 "GPUPORT_COOP_MIN_Q8_TOKENS=64 GPUPORT_Q8_ROWS_LANES=32"; done
grep -q H200 $R/gpu.txt && [ $(el) -lt 520 ] && { timeout 50 ./.devbin/xtask-t bench --shapes large --kernel gemv --types f16,f32 --wg 128,256 --lanes 4,8,16,32 --json $R/gemv-f16-sweep.json > $R/gemv-f16-sweep.txt 2>&1; echo "f16 sweep rc=$? at $(el) s"; save; }
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
