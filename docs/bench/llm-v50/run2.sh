#!/usr/bin/env bash
# v50 call 2. Call 1 (run1 of v49) showed every 32-token tile running one workgroup a core on
# an H100, from 25 to 47 KiB and 128 to 512 threads, and the 512-thread tile of 256 rows (one
# stage, chunks of 64) doing twice the 128-row tile's work in the same time per workgroup as
# the 128-row tile does in one stage: more subgroups a core help, a second barrier a chunk
# hurts. p = o + the 256-row tile in chunks of 32 in two stages (47 KiB; half its 512
# threads fetch no input). (1) Residency once more with a small tile: 64 rows, 128 threads,
# chunks of 32, one stage (12 KiB). (2) The 256-row tile in two stages against the engine's
# (grids, the Llama GEMMs at 32 rows). (3) 32 / 64 streams of the 8B on both (at 64 also the
# 32-token tile twice along the tokens). (4) `kvc coop` (every tile, the new one included,
# against the CPU).
set -u
. docs/bench/device.sh
device_setup "xtask-p kvc-p" "e" ""
timeout 12 ./.devbin/xtask-p bench --gemm-only --tuned --shapes llama --gemm-tokens 32 >/dev/null 2>&1
WN2=q4_K:4224x4096,q4_K:8448x4096,q4_K:12672x4096,q4_K:16896x4096
W256=q4_K:16896x4096,q4_K:33792x4096,q4_K:50688x4096,q4_K:67584x4096
W8K="GPUPORT_COOP_HALF_WN=8 GPUPORT_COOP_ONE_INPUT=1 GPUPORT_COOP_KC=32"
gw 32 p "GPUPORT_COOP_HALF_WN=2 GPUPORT_COOP_KC=32 GPUPORT_COOP_STAGES=1" wn2s "$WN2"
gw 32 p "$W8K" w8k "$W256"
gw 32 p X=1 s2
gt 32 p X=1 s2 1,2,4
gt 32 p "$W8K" w8k 1,2,4
par e p 32,64 X=1 -s2
par e p 32,64 "$W8K" -w8k
par e p 64 "$W8K GPUPORT_COOP_NARROW_MAX=64" -w8k-n64
before() { [ "$(el)" -lt "$1" ]; }
if before 420; then
    timeout 120 ./.devbin/kvc-p coop_gemm_matches_cpu_for_every_type >"$R/kvc-coop.txt" 2>&1
    echo "kvc coop rc=$? at $(el) s"; grep -E "test result|panicked|differs|FAILED" "$R/kvc-coop.txt" | head -5
fi
device_finish
