#!/usr/bin/env bash
# v48 call 1. n = HEAD's build (8442d8c + DEPTH 2 branch-free: set b's half of an iteration no
# longer in an `if`), kvc-n its kernels_vs_cpu, h = 565c428 (v47's code, `bench --matrix`).
# (1) The Llama shapes' GEMMs at 32 / 64 rows, one chunk ahead (GPUPORT_COOP_FETCH=1, the
# default) against two (=2), interleaved with h. (2) v47's run4.sh: does a second workgroup
# of the 48-KiB 32-token tile share a core? (3) `kvc coop` on n (DEPTH 2 the same bits).
# The models rebuild in the background for call 2. (As run, `gw` was written out here;
# device.sh has it since, the same command.)
set -u
. docs/bench/device.sh
device_setup "xtask-h xtask-n kvc-n" "e l" ""
# Warm-up: >= 2 s of steady GEMMs.
timeout 30 ./.devbin/xtask-n bench --gemm-only --tuned --shapes llama --gemm-tokens 32 >/dev/null 2>&1
for round in 1 2; do
    for t in 32 64; do
        gt $t n GPUPORT_COOP_FETCH=1 f1-$round 1,2,4
        gt $t n GPUPORT_COOP_FETCH=2 f2-$round 1,2,4
    done
done
gt 32 h X=1 h 1,2,4
for round in 1 2; do
    gw 32 n X=1 kc64-$round
    gw 32 n GPUPORT_COOP_KC=32 kc32-$round
    gw 32 n GPUPORT_COOP_FETCH=2 f2-$round
done
grep -m2 -E '^gemm matrix' "$R/w32-kc64-1.txt"
timeout 150 ./.devbin/kvc-n coop >"$R/kvc-coop.txt" 2>&1
echo "kvc coop rc=$? at $(el) s"; grep -E "test result|panicked|differs|FAILED" "$R/kvc-coop.txt" | head -5; save
timeout 60 ./.devbin/xtask-n kernel-stats --filter gemm_coop.q4_K --filter XH=1 >"$R/kstats.txt" 2>&1
grep -A1 -E "gemm_coop.q4_K.WM=2.WN=4.KC=(32|64).TF=1.RF=2" "$R/kstats.txt" |
    grep -oE "gemm_coop[^ ]*|Register Count=[0-9]+|Shared Memory Size=[0-9]+" | paste -sd' '
device_finish
