#!/usr/bin/env bash
# v49 call 1 — written, refused at every start this session (v48's run2.sh and more residency
# probes, in priority order). o = the build of
# this stop's fused norm rows commit: 336a0e3's kernels (the unrolled input-norm pass, GPUPORT_X16_NORM_TOKENS;
# GPUPORT_COOP_STAGES=1: the tensor-core tiles in one stage) and two new 32-token tiles behind
# knobs — 128 rows in chunks of 32 (one input quadruple a thread: $ONE, 33 KiB; 27 KiB with
# GPUPORT_COOP_SLOTS=2) and 256 rows, 16 subgroups, one stage ($W8, 43 KiB); h = 565c428
# (v47's code). o also forms the next input norm's f16 rows in the pass that adds a split
# output projection's partials (GPUPORT_NORM_ROWS=1; =0 apart, as before; the same bits:
# the streams' `ids` digests must match).
# (1) Residency: which 32-token tiles run two workgroups a core — `bench --matrix` grids of the
# engine's tile (128 rows, 256 threads, 47 KiB), in one stage (25 KiB), the 128-row tile in
# chunks of 32, the 64-row tile in chunks of 64 (GPUPORT_COOP_HALF_WN=2: 128 threads, 31 KiB),
# and the 256-row tile over 66-264 workgroups. (2) The Llama GEMMs at 32 rows on each.
# (3) 32 / 64 streams of the 8B: o, o at one token a workgroup in the input norm, h; then each
# tile whose 8B gate|up beat the engine's. (4) The 1B: o, and the best tile. (5) On an H200,
# the GEMV line at 256 MB. (6) `kvc coop` (the new tiles against the CPU).
set -u
. docs/bench/device.sh
device_setup "xtask-h xtask-o kvc-o" "e l" ""
timeout 12 ./.devbin/xtask-o bench --gemm-only --tuned --shapes llama --gemm-tokens 32 >/dev/null 2>&1
WN2=q4_K:4224x4096,q4_K:8448x4096,q4_K:12672x4096,q4_K:16896x4096,q4_K:25344x4096,q4_K:33792x4096
W256=q4_K:16896x4096,q4_K:33792x4096,q4_K:50688x4096,q4_K:67584x4096
ONE="GPUPORT_COOP_KC=32 GPUPORT_COOP_ONE_INPUT=1"
W8="GPUPORT_COOP_HALF_WN=8 GPUPORT_COOP_ONE_INPUT=1"
declare -A ENVS=([s2]=X=1 [s1]=GPUPORT_COOP_STAGES=1 [one]="$ONE" [one2]="$ONE GPUPORT_COOP_SLOTS=2" [w8]="$W8")
for tag in s2 s1 one2; do gw 32 o "${ENVS[$tag]}" $tag; done
gw 32 o GPUPORT_COOP_HALF_WN=2 wn2 "$WN2"
gw 32 o "$W8" w8 "$W256"
for tag in s2 s1 one2 w8; do gt 32 o "${ENVS[$tag]}" $tag 1,2,4; done
par e o 32,64 GPUPORT_NORM_ROWS=1 -nr1
par e o 32,64 GPUPORT_NORM_ROWS=0 -nr0
# The 8B gate|up (28,672 rows) at the engine's splits, per tile.
gu() { grep -E '^gemm llama8b.*28672 x  4096' "$R/g32-$1.txt" | head -1 | awk '{print int($10)}'; }
base=$(gu s2)
winners=""
for tag in s1 one2 w8; do
    t=$(gu $tag)
    echo "8B gate|up at 32 rows: $tag ${t:-?} µs against ${base:-?}"
    if [ -n "$t" ] && [ -n "$base" ] && [ "$t" -lt "$base" ]; then winners="$winners $tag"; fi
done
# Only what fits in ~7 minutes: the session's device time is nearly spent.
before() { [ "$(el)" -lt "$1" ]; }
for tag in $winners; do before 300 && par e o 32,64 "${ENVS[$tag]}" -$tag; done
before 320 && par e h 32,64 X=1 -h
before 340 && par l o 32,64 X=1 -nt4
for tag in $winners; do before 350 && par l o 32,64 "${ENVS[$tag]}" -$tag; done
before 350 && par e o 32,64 GPUPORT_X16_NORM_TOKENS=1 -nt1
# On an H200: issue 13's GEMV line at 256 MB (v43 left Q6_K at 0.708 there).
if grep -q H200 "$R/gpu.txt" && before 330; then
    timeout 60 ./.devbin/xtask-o bench --shapes large --tuned --json "$R/gemv-large.json" >"$R/gemv-large.txt" 2>&1
    echo "gemv large rc=$? at $(el) s"; grep -E "^large" "$R/gemv-large.txt" | awk '{print $2, $3, $8}' | head -12; save
fi
if before 280; then
    timeout 100 ./.devbin/kvc-o coop_gemm_matches_cpu_for_every_type gemm_norm_rows >"$R/kvc-coop.txt" 2>&1
    echo "kvc coop rc=$? at $(el) s"; grep -E "test result|panicked|differs|FAILED" "$R/kvc-coop.txt" | head -5
fi
device_finish
