#!/usr/bin/env bash
# v50 call 3 — written, not run (every start after call 2 was refused). Call 2 found a
# 12-KiB tile (64 rows, 128 threads, chunks of 32, one stage) running two workgroups a core
# (264 workgroups in 84 µs against 69 for 132), where every tile of 24.5 KiB and more ran one:
# a core holds what fits 48 KiB. Which of the 128-row tiles (256 threads) run more than one:
# chunks of 32 in one stage with two staging blocks (14.5 KiB: three?) or eight (20.5 KiB:
# two?) — the engine's tile in one stage (24.5 KiB) ran one in call 1. Grids of 132-528
# workgroups against the engine's tile; the Llama GEMMs at 32 rows; 32 / 64 streams of the 8B on each tile whose
# gate|up beats the engine's (the ids digests must match). Q6_K's GEMV at 256 MB and the
# Llama GEMMs at 8 rows (the few-row int8 kernel), p against q, two rounds. Then call 1's
# fused norm rows (9% slower at 32 streams: the pass at four tokens a workgroup is eight
# workgroups) at one token a workgroup, beside that setting alone. p = 8f69838 (v49's HEAD
# and the 256-row tile in chunks of 32), q = ef51ada (Q6_K's int8 units in parity order).
# Every step after the grids is guarded by the elapsed time: a shorter limit cuts the tail.
set -u
. docs/bench/device.sh
device_setup "xtask-p xtask-q" "e l" ""
timeout 12 ./.devbin/xtask-p bench --gemm-only --tuned --shapes llama --gemm-tokens 32 >/dev/null 2>&1
G=q4_K:16896x4096,q4_K:33792x4096,q4_K:50688x4096,q4_K:67584x4096
ONE="GPUPORT_COOP_KC=32 GPUPORT_COOP_ONE_INPUT=1 GPUPORT_COOP_STAGES=1"
declare -A ENVS=([s2]=X=1 [one2s1]="$ONE GPUPORT_COOP_SLOTS=2" [one8s1]="$ONE")
before() { [ "$(el)" -lt "$1" ]; }
q6() {
    timeout 40 "./.devbin/xtask-$1" bench --shapes large --tuned --types q6_K --kernel gemv_q8 \
        --json "$R/q6-$1-$2.json" >"$R/q6-$1-$2.txt" 2>&1
    echo "q6 gemv $1 rc=$? at $(el) s: $(grep -E '^large' "$R/q6-$1-$2.txt" | awk '{print $2, $3, $8}' | paste -sd' ')"
    timeout 40 "./.devbin/xtask-$1" bench --gemm-only --tuned --shapes llama --gemm-tokens 8 \
        --json "$R/g8-$1-$2.json" >"$R/g8-$1-$2.txt" 2>&1
    echo "g8 $1 rc=$? at $(el) s: $(grep -E '^gemm .*ffn_down.*tokens' "$R/g8-$1-$2.txt" | awk '{print $2, $10}' | paste -sd' ')"
    save
}
gu() { grep -E '^gemm llama8b.*28672 x  4096' "$R/g32-$1.txt" | head -1 | awk '{print int($10)}'; }
for tag in s2 one2s1 one8s1; do gw 32 p "${ENVS[$tag]}" $tag "$G"; done
q6 p 1; q6 q 1
for tag in s2 one2s1 one8s1; do gt 32 p "${ENVS[$tag]}" $tag 1,2,4; done
base=$(gu s2)
winners=""
for tag in one2s1 one8s1; do
    t=$(gu $tag)
    echo "8B gate|up at 32 rows: $tag ${t:-?} µs against ${base:-?}"
    if [ -n "$t" ] && [ -n "$base" ] && [ "$t" -lt "$base" ]; then winners="$winners $tag"; fi
done
before 250 && par e p 32,64 X=1 -s2
for tag in $winners; do before 290 && par e p 32,64 "${ENVS[$tag]}" -$tag; done
before 270 && q6 p 2
before 300 && q6 q 2
before 320 && par e p 32 "GPUPORT_NORM_ROWS=1 GPUPORT_X16_NORM_TOKENS=1" -nr1nt1
before 360 && par e p 32 "GPUPORT_X16_NORM_TOKENS=1" -nt1
device_finish
