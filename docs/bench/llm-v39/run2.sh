#!/usr/bin/env bash
# v39 call 2, on run1.sh's warm machine (under 600 s): aggregate decode (bench-llm, 128 prompt
# + 128 generated tokens a stream) of the four layouts, the decode through the bits
# (GPUPORT_COOP_DECODE=1) against conversions at 64 and 32 streams, the 1B/8B at 32 streams
# on tensor cores (GPUPORT_COOP_MIN_Q8_TOKENS=32) with and without the 32-token tile, and
# SmolLM2 / Gemma 3 at 32 streams with and without it.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R
for f in .gl/*.deb; do dpkg -x $f / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -x .devbin/xtask-t ] || { xz -dk .devbin/xtask-t.xz; chmod +x .devbin/xtask-t; }
X=./.devbin/xtask-t
(cd .devbin && for m in e:llama8b-q4_k_m l:llama1b-q4_k_m s:smollm2-135m-q4_1 g:gemma-3-270m-q4_k_m; do
  [ -f /tmp/${m%%:*}.gguf ] || python3 gguf_rebuild.py ${m#*:}.skel /tmp/${m%%:*}.gguf >/dev/null; done) &
G=$!
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
save() { (cd $OUT && tar czf r.tgz r); }
wait $G
par() { timeout 75 env $4 $X bench-llm /tmp/$1.gguf --steps 8 --parallel $3 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-par-$2.json > $R/$1-par-$2.txt 2>&1; echo "$1 par $2 rc=$? at $(el) s"; grep "S_TG" $R/$1-par-$2.txt; save; }
for m in e l; do
  par $m conv 32,64 ""
  par $m bits 32,64 GPUPORT_COOP_DECODE=1
  par $m coop32 32 "GPUPORT_COOP_MIN_Q8_TOKENS=32 GPUPORT_COOP_DECODE=1"
  par $m coop32narrow 32 "GPUPORT_COOP_MIN_Q8_TOKENS=32 GPUPORT_COOP_DECODE=1 GPUPORT_COOP_NARROW_TOKENS=1"
done
for m in s g; do
  par $m base 32 ""; par $m narrow 32 GPUPORT_COOP_NARROW_TOKENS=1
done
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
