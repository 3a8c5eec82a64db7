#!/usr/bin/env bash
# v47 call 3 — the tensor-core GEMM with a weight tile per subgroup (gemm_coop_sg.wgsl,
# GPUPORT_COOP_SG=1) against the workgroup tiles (=0, the default), one build: s = the working
# tree after ab70295 with the new kernel. (1) `kvc coop_sg` (CPU and same-bits test);
# (2) the Llama shapes' GEMMs at 32 and 64 rows, SG 0 against 1, splits 1-8; (3) the 1B and 8B
# at 32/64 streams, SG 0 against 1; (4) the tile's other shapes if time is left.
set -u
. docs/bench/device.sh
device_setup "xtask-s kvc-s" "e l" ""
timeout 70 ./.devbin/kvc-s coop_sg >"$R/kvc-sg.txt" 2>&1
echo "kvc coop_sg rc=$? at $(el) s"; grep -E "test result|panicked|differs|FAILED" "$R/kvc-sg.txt" | head -5; save
gq() {  # tokens env tag
    timeout 45 env $2 ./.devbin/xtask-s bench --gemm-only --tuned --shapes llama --gemm-tokens "$1" \
        --splits 1,2,4,8 --json "$R/g$1-$3.json" >"$R/g$1-$3.txt" 2>&1
    echo "g$1 $3 rc=$? at $(el) s: $(grep -E '^gemm .*tokens.*coop' "$R/g$1-$3.txt" |
        awk '{sub("llama","",$2); s=""; for(i=1;i<=NF;i++) if($i ~ /^splits=/) s=substr($i,8); printf "%s/%s:%s ", $2, s, $10}')"
    save
}
gq 32 GPUPORT_COOP_SG=0 wg
gq 32 GPUPORT_COOP_SG=1 sg
gq 64 GPUPORT_COOP_SG=0 wg
gq 64 GPUPORT_COOP_SG=1 sg
for m in l e; do
    par $m s 32,64 GPUPORT_COOP_SG=0 -wg
    par $m s 32,64 GPUPORT_COOP_SG=1 -sg
done
# What time is left: the tile's other shapes at 32 rows.
[ "$(el)" -lt 250 ] && gq 32 "GPUPORT_COOP_SG=1 GPUPORT_COOP_SG_WN=8" sg8
[ "$(el)" -lt 270 ] && gq 32 "GPUPORT_COOP_SG=1 GPUPORT_COOP_SG_ROWS=16" sg16
device_finish
