#!/usr/bin/env bash
# v43 call 5 (NOT RUN in v43; v44 ran it as docs/bench/llm-v44/run1.sh with one binary and the old table through GPUPORT_TUNING; ~300 s on a fresh machine). Build
# xtask-t from HEAD and xtask-o from 762b5a2 (no H100 table entry, the H200's old int8-GEMV
# entries) and carry them in .devbin with .gl. (1) The GEMV table at 256 MB as decode runs it
# through the new entries, both builds interleaved (issue 13's GEMV line on this card; f16/f32
# through the float GEMV's default). (2) One and eight streams of the 1B and 8B, both builds
# interleaved: does one-stream decode move with the int8 GEMVs? (3) Eight streams with the
# few-row kernels' lanes forced to 16 and 32 (GPUPORT_Q8_ROWS_LANES: the 1B, 8B;
# GPUPORT_ROWS_LANES: SmolLM2, Gemma 3) against the rule's. Carry [.gl, .devbin].
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R target/m
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
xz -dkf .devbin/xtask-t.xz .devbin/xtask-o.xz; chmod +x .devbin/xtask-t .devbin/xtask-o
(cd .devbin && for m in l:llama1b-q4_k_m e:llama8b-q4_k_m s:smollm2-135m-q4_1 g:gemma-3-270m-q4_k_m; do
  [ -e ../target/m/${m%%:*}.done ] || nice python3 gguf_rebuild.py ${m#*:}.skel ../target/m/${m%%:*}.gguf >/dev/null; touch ../target/m/${m%%:*}.done; done) &
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
save() { (cd $OUT && tar czf r.tgz r); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
gt() { timeout 40 ./.devbin/xtask-$1 bench --shapes large --tuned --json $R/gemv-tuned-$1$2.json > $R/gemv-tuned-$1$2.txt 2>&1; echo "gemv tuned $1$2 rc=$? at $(el) s"; grep large $R/gemv-tuned-$1$2.txt | awk '{print $2, $3, $8}' | paste -sd' '; save; }
gt o 1; gt t 1; gt o 2; gt t 2
par() { while [ ! -e target/m/$1.done ]; do sleep 1; done; timeout 50 env $5 ./.devbin/xtask-$2 bench-llm target/m/$1.gguf --steps 8 --parallel $4 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-par-$2$3.json > $R/$1-par-$2$3.txt 2>&1; echo "$1 $2$3 rc=$? at $(el) s: $(grep -o 'S_TG *[0-9.]* tok/s' $R/$1-par-$2$3.txt | paste -sd' ')"; save; }
for m in l e; do par $m o 1 1,8 ""; par $m t 1 1,8 ""; done
for m in l e; do [ $(el) -lt 420 ] && for n in 16 32; do par $m t q$n 8 GPUPORT_Q8_ROWS_LANES=$n; done; done
for m in s g; do [ $(el) -lt 500 ] && par $m t d 8 "" && for n in 16 32; do par $m t f$n 8 GPUPORT_ROWS_LANES=$n; done; done
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
