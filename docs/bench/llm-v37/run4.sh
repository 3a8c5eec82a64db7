#!/usr/bin/env bash
# Device call 2 of v37, minimal (the device time left after refused starts: ~3 minutes). The
# two-chunks-ahead fetch's test and GEMMs (GPUPORT_COOP_FETCH=2 against 1), the f16 cache's
# rounding fix on NVIDIA (rowk decode_attention), then the 8B's streams. Build and carry as
# run1.sh says.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
xz -d .devbin/xtask-t.xz .devbin/rowk.xz .devbin/kvc.xz; chmod +x .devbin/xtask-t .devbin/rowk .devbin/kvc
X=./.devbin/xtask-t
(cd .devbin && python3 gguf_rebuild.py llama8b-q4_k_m.skel /tmp/e.gguf >/dev/null) &
G=$!
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
save() { (cd $OUT && tar czf r.tgz r); }
timeout 25 ./.devbin/rowk decode_attention > $R/rowk-decode.txt 2>&1; echo "rowk decode rc=$? at $(el) s"; grep "test result\|panicked" $R/rowk-decode.txt | head -2
timeout 60 ./.devbin/kvc coop > $R/kvc-coop.txt 2>&1; echo "kvc coop rc=$? at $(el) s"; grep "test result\|panicked" $R/kvc-coop.txt | head -3
save
gm() { timeout 30 env GPUPORT_COOP_FETCH=$3 $X bench --gemm-only --tuned --shapes llama --gemm-tokens $2 --json $R/t$2-f$3-$1.json > $R/t$2-f$3-$1.txt 2>&1; echo "t$2 fetch $3 $1 rc=$? at $(el) s: $(grep -v best $R/t$2-f$3-$1.txt | grep -o '[0-9.]* µs' | awk '{print $1}' | paste -sd' ')"; save; }
gm 1 64 2; gm 1 64 1
wait $G
timeout 45 $X bench-llm /tmp/e.gguf --steps 8 --parallel 8,32,64 --prompt-tokens 128 --gen-tokens 128 --json $R/e-par-f2.json > $R/e-par-f2.txt 2>&1; echo "e par f2 rc=$? at $(el) s"; grep "S_TG" $R/e-par-f2.txt
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
