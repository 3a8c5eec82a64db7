#!/usr/bin/env bash
# H200 call 1 (v28): where a batched decode step goes. The head binary (d37b8c4, "head")
# decodes 8 / 32 / 64 sequences at once through `Batch` (`--batch`, 8 steps per submit), and
# one step of each is timed per dispatch (`batched[].step_profile` in the JSON).
# Carry .gl and .devbin (xtask-head.xz, the skeletons, gguf_rebuild.py).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
xz -d .devbin/xtask-head.xz; chmod +x .devbin/xtask-head
(cd .devbin && for m in l:llama1b-q4_k_m e:llama8b-q4_k_m s:smollm2-135m-q4_1; do
  python3 gguf_rebuild.py ${m#*:}.skel /tmp/${m%%:*}.gguf >/dev/null; done)
echo "rebuilt at $(el) s"
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
bat() { timeout 150 ./.devbin/xtask-head bench-llm /tmp/$1.gguf --steps 8 --prompt-tokens 128 --gen-tokens 64 --batch 8,32,64 --json $R/$1-batch.json > $R/$1-batch.txt 2>&1; echo "$1 rc=$? at $(el) s"; grep -A1 "batch of" $R/$1-batch.txt; }
for m in l e s; do bat $m; done
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
cd $OUT && tar czf r.tgz r && rm -rf r
