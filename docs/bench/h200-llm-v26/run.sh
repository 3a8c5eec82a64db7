#!/usr/bin/env bash
# H200 call (v26), the device command as run: the INT8_MIN_STACK_BYTES threshold at 8 MiB (then
# the default) and 0 (every int8-capable stack), one binary (7b37b79's xtask, "norm2"), env
# override. Carry .gl and .devbin (xtask-norm2.xz, the skeletons, gguf_rebuild.py).
set -u; R=$OUT/r; mkdir -p $R; T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig; export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
xz -dk .devbin/xtask-norm2.xz; chmod +x .devbin/xtask-norm2
(cd .devbin && python3 gguf_rebuild.py llama1b-q4_k_m.skel /tmp/l.gguf >/dev/null && python3 gguf_rebuild.py gemma-3-270m-q4_k_m.skel /tmp/g.gguf >/dev/null)
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) & CLK=$!
ours() { timeout 40 env GPUPORT_INT8_MIN_BYTES=$2 ./.devbin/xtask-norm2 bench-llm /tmp/$1.gguf --steps 8 --prompt-tokens 512 --gen-tokens 128 --json $R/$1-i$2-$3.json > $R/$1-i$2-$3.txt 2>&1; echo "$1 int8-min $2 #$3 rc=$? at $(el) s: $(sed -n 5p $R/$1-i$2-$3.txt)"; }
ours l 8388608 1; ours l 0 1; ours g 8388608 1; ours g 0 1; ours l 0 2; ours l 8388608 2
kill $CLK; awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
cd $OUT && tar czf r.tgz r && rm -rf r
