#!/usr/bin/env bash
# H200 call 4 (v30): f234af4 (the tiled attention passes' shared query and output rows) — the
# row kernels' tests (prompt attention on tensor cores) and one 1B prompt, to check the refactor
# there; then the GEMV sweep of one type at 256 MB (every int8 and float variant of q4_K), for
# issue 13's per-type table. No llama.cpp in this call. Carry .gl and .devbin (xtask-new, rowk
# as .xz; the 1B skeleton, gguf_rebuild.py).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json GPUPORT_REQUIRE_GPU=1
for b in .devbin/xtask-new.xz .devbin/rowk.xz; do xz -d "$b"; done; chmod +x .devbin/xtask-new .devbin/rowk
(cd .devbin && python3 gguf_rebuild.py llama1b-q4_k_m.skel /tmp/l.gguf >/dev/null) &
G=$!
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
timeout 60 ./.devbin/rowk > $R/rowk.txt 2>&1; echo "rowk rc=$? at $(el) s"; grep "test result\|panicked" $R/rowk.txt | head -3
wait $G
timeout 60 ./.devbin/xtask-new bench-llm /tmp/l.gguf --steps 8 --prompt-tokens 512 --gen-tokens 128 --json $R/l-pre-new.json > $R/l-pre-new.txt 2>&1; echo "l pre rc=$? at $(el) s"; grep -i "prefill\|^ *8 \|attn_coop" $R/l-pre-new.txt | head -3
timeout 120 ./.devbin/xtask-new bench --shapes large --types q4_K --json $R/gemv-q4k.json > $R/gemv-q4k.txt 2>&1; echo "gemv rc=$? at $(el) s"; grep "large\|ceiling" $R/gemv-q4k.txt | head -6
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
cd $OUT && tar czf r.tgz r && rm -rf r
