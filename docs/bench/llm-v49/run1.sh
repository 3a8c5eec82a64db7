#!/usr/bin/env bash
# v49 call 1 (v48's run2.sh, more residency probes, in priority order). o = the build of this
# stop's first commit: 336a0e3's kernels (the unrolled input-norm pass, GPUPORT_X16_NORM_TOKENS;
# GPUPORT_COOP_STAGES=1: the tensor-core tiles in one stage) and the 32-token tile of 128 rows
# in chunks of 32 (one input quadruple a thread: GPUPORT_COOP_KC=32 GPUPORT_COOP_ONE_INPUT=1,
# 33 KiB; 27 KiB with GPUPORT_COOP_SLOTS=2); h = 565c428 (v47's code).
# (1) Residency: which 32-token tiles run two workgroups a core — `bench --matrix` grids of the
# engine's tile (128 rows, 256 threads, 47 KiB), in one stage (25 KiB), the 128-row tile in
# chunks of 32 (33 / 27 KiB), the 64-row tile in chunks of 64 (GPUPORT_COOP_HALF_WN=2: 128
# threads, 31 KiB). (2) 32 / 64 streams of the 8B: o, o at one token a workgroup in the input
# norm, h. (3) The Llama GEMMs at 32 rows in one stage, two, and the one-input tile. (4) The
# 1B as (2). (5) On an H200, the GEMV line at 256 MB. (6) `kvc coop` (the one-input tile
# against the CPU).
set -u
. docs/bench/device.sh
device_setup "xtask-h xtask-o kvc-o" "e l" ""
timeout 12 ./.devbin/xtask-o bench --gemm-only --tuned --shapes llama --gemm-tokens 32 >/dev/null 2>&1
WN2=q4_K:4224x4096,q4_K:8448x4096,q4_K:12672x4096,q4_K:16896x4096,q4_K:25344x4096,q4_K:33792x4096
ONE="GPUPORT_COOP_KC=32 GPUPORT_COOP_ONE_INPUT=1"
gw 32 o X=1 s2
gw 32 o GPUPORT_COOP_STAGES=1 s1
gw 32 o "$ONE" one
gw 32 o "$ONE GPUPORT_COOP_SLOTS=2" one2
gw 32 o GPUPORT_COOP_HALF_WN=2 wn2 "$WN2"
par e o 32,64 X=1 -nt4
par e o 32,64 GPUPORT_X16_NORM_TOKENS=1 -nt1
par e h 32,64 X=1 -h
gt 32 o GPUPORT_COOP_STAGES=1 s1 1,2,4
gt 32 o X=1 s2 1,2,4
gt 32 o "$ONE" one 1,2,4
gt 32 o "$ONE GPUPORT_COOP_SLOTS=2" one2 1,2,4
par l o 32,64 X=1 -nt4
par l o 32,64 GPUPORT_X16_NORM_TOKENS=1 -nt1
for tag in s1 one one2; do
    t=$(grep -E '^gemm matrix.q4_K.33792x4096.*splits=1 ' "$R/w32-$tag.txt" | head -1 | awk '{print int($10)}')
    echo "$tag 264/528-workgroup grid: ${t:-?} µs"
done
# On an H200: issue 13's GEMV line at 256 MB (v43 left Q6_K at 0.708 there).
if grep -q H200 "$R/gpu.txt"; then
    timeout 90 ./.devbin/xtask-o bench --shapes large --tuned --json "$R/gemv-large.json" >"$R/gemv-large.txt" 2>&1
    echo "gemv large rc=$? at $(el) s"; grep -E "^large" "$R/gemv-large.txt" | awk '{print $2, $3, $8}' | head -12; save
fi
timeout 100 ./.devbin/kvc-o coop_gemm_matches_cpu_for_every_type >"$R/kvc-coop.txt" 2>&1
echo "kvc coop rc=$? at $(el) s"; grep -E "test result|panicked|differs|FAILED" "$R/kvc-coop.txt" | head -5
device_finish
