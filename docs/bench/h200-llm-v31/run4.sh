#!/usr/bin/env bash
# H200 call 4 (v31, short: the session's last device time): call 3's binary on the two float
# layouts (SmolLM2, Gemma 3), many streams with tensor cores from 64 rows (default), 32 and 8
# (GPUPORT_COOP_MIN_TOKENS), interleaved; no llama.cpp (its figures: call 3).
# Carry .gl and .devbin (xtask-new.xz; skeletons, gguf_rebuild.py).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
xz -d .devbin/xtask-new.xz; chmod +x .devbin/xtask-new
(cd .devbin && for m in s:smollm2-135m-q4_1 g:gemma-3-270m-q4_k_m; do
  python3 gguf_rebuild.py ${m#*:}.skel /tmp/${m%%:*}.gguf >/dev/null; done)
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
save() { (cd $OUT && tar czf r.tgz r); }
X=./.devbin/xtask-new
par() { [ $(el) -lt 150 ] || return; timeout 40 env $3 $X bench-llm /tmp/$1.gguf --steps 8 --parallel 1,8,32,64 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-par-$2.json > $R/$1-par-$2.txt 2>&1; echo "$1 par $2 rc=$? at $(el) s"; grep "S_TG" $R/$1-par-$2.txt; save; }
for m in s g; do par $m def X=1; par $m c32 GPUPORT_COOP_MIN_TOKENS=32; par $m c8 GPUPORT_COOP_MIN_TOKENS=8; done
for m in s g; do par $m c32-2 GPUPORT_COOP_MIN_TOKENS=32; done
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
