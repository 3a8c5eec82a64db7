#!/usr/bin/env bash
# v49, the shortest call that answers the stop's two questions — written, not run: after the
# refused starts too little device time was left to start a machine. o = a build of HEAD
# (`.devbin/xtask-o.xz`, rebuilt on a fresh machine). (1) Residency: `bench --matrix` grids
# of the engine's 32-token tile (47 KiB), in one stage (25 KiB), in chunks of 32 with two
# staging blocks (27 KiB), and the 256-row tile (43 KiB, 512 threads). (2) 32 / 64 streams of
# the 8B with the next norm's rows formed in the split sum (GPUPORT_NORM_ROWS=1) and apart
# (=0, the default): S_TG and the streams' ids digests, which must match. (3) If time is
# left, the Llama GEMMs at 32 rows on the engine's tile, one stage, and 256 rows.
set -u
. docs/bench/device.sh
device_setup "xtask-o" "e" ""
timeout 12 ./.devbin/xtask-o bench --gemm-only --tuned --shapes llama --gemm-tokens 32 >/dev/null 2>&1
W256=q4_K:16896x4096,q4_K:33792x4096,q4_K:50688x4096,q4_K:67584x4096
ONE2="GPUPORT_COOP_KC=32 GPUPORT_COOP_ONE_INPUT=1 GPUPORT_COOP_SLOTS=2"
W8="GPUPORT_COOP_HALF_WN=8 GPUPORT_COOP_ONE_INPUT=1"
gw 32 o X=1 s2
gw 32 o GPUPORT_COOP_STAGES=1 s1
gw 32 o "$ONE2" one2
gw 32 o "$W8" w8 "$W256"
par e o 32,64 GPUPORT_NORM_ROWS=1 -nr1
par e o 32,64 GPUPORT_NORM_ROWS=0 -nr0
before() { [ "$(el)" -lt "$1" ]; }
before 200 && gt 32 o X=1 s2 1,2,4
before 220 && gt 32 o GPUPORT_COOP_STAGES=1 s1 1,2,4
before 240 && gt 32 o "$W8" w8 1,2,4
device_finish
