#!/usr/bin/env bash
# v47 call 4 — written, not run (the session's device time was spent): do two workgroups of the
# 32-token tensor-core tile share a core? h = HEAD's build (`bench --matrix`). The 8B gate|up
# tile (32 tokens × 128 rows, 8 subgroups, chunks of 64 columns, 48 KiB of workgroup memory)
# over grids of 66, 132, 198 and 264 workgroups (one split: each walks 64 chunks); in chunks of
# 32 (GPUPORT_COOP_KC=32) the engine's 32-token tile is 64 rows (four subgroups, ~19 KiB), twice
# the workgroups over the same rows; and at 64 tokens. If the 48-KiB tile's time doubles from
# 132 to 264 workgroups while the 19-KiB tile's does not from 264 to 528, the tile's memory is
# what keeps a second workgroup off a core (docs/design/coop-gemm.md, "Next"). Run in v48 as
# part of llm-v48/run1.sh; `gw` is device.sh's since.
set -u
. docs/bench/device.sh
device_setup "xtask-h" "" ""
timeout 30 ./.devbin/xtask-h bench --gemm-only --tuned --shapes llama --gemm-tokens 32 >/dev/null 2>&1
for round in 1 2; do
    gw 32 h X=1 kc64-$round
    gw 32 h GPUPORT_COOP_KC=32 kc32-$round
    gw 64 h X=1 kc64-$round
done
timeout 90 ./.devbin/xtask-h kernel-stats --filter gemm_coop.q4_K --filter XH=1 >"$R/kstats.txt" 2>&1
grep -A1 -E "WM=2.WN=4.KC=(32|64).TF=1.RF=2" "$R/kstats.txt" | grep -oE "KC=[0-9]+|Register Count=[0-9]+|Shared Memory Size=[0-9]+" | paste -sd' '
# What the driver made of the 8B gate|up tile, if it says (its internal representations).
timeout 60 ./.devbin/xtask-h kernel-stats --filter gemm_coop.q4_K.WM=2.WN=4.KC=64.TF=1.RF=2 \
    --filter XH=1 --out "$R/ir" >"$R/kstats-ir.txt" 2>&1; ls -la "$R/ir" | head
device_finish
