#!/usr/bin/env bash
# v48 call 2 — written, not run (the session's device time went to refused starts). n = the
# build of 336a0e3 (the unrolled input-norm pass with GPUPORT_X16_NORM_TOKENS, DEPTH 2
# branch-free, GPUPORT_COOP_STAGES=1: the tensor-core tiles in one stage), h = 565c428 (v47's
# code). (1) Does the 32-token tile of 128 rows in one stage (25 KiB) run two workgroups a
# core? Call 1's `bench --matrix` grids in one stage, and the Llama shapes at 32 / 64 rows.
# (2) End to end, 32 / 64 streams of the 8B and the 1B: n, n at one token a workgroup in the
# input norm, h; n in one stage where (1) says two workgroups share a core.
set -u
. docs/bench/device.sh
device_setup "xtask-h xtask-n" "e l" ""
timeout 12 ./.devbin/xtask-n bench --gemm-only --tuned --shapes llama --gemm-tokens 32 >/dev/null 2>&1
gw 32 n GPUPORT_COOP_STAGES=1 s1
gw 32 n X=1 s2
for t in 32 64; do
    gt $t n GPUPORT_COOP_STAGES=1 s1 1,2,4
    gt $t n X=1 s2 1,2,4
done
for m in e l; do
    par $m n 32,64 X=1 -nt4
    par $m n 32,64 GPUPORT_X16_NORM_TOKENS=1 -nt1
    par $m h 32,64 X=1 -h
done
# One stage end to end only where its 264 workgroups took under 100 µs (two waves: ~128).
s1=$(grep -E '^gemm matrix.q4_K.33792x4096.*splits=1 ' "$R/w32-s1.txt" | head -1 | awk '{print int($10)}')
if [ -n "$s1" ] && [ "$s1" -lt 100 ]; then
    par e n 32,64 GPUPORT_COOP_STAGES=1 -s1
    par l n 32,64 GPUPORT_COOP_STAGES=1 -s1
fi
device_finish
