#!/usr/bin/env bash
# v58, call 1: issue 13's last line, Q6_K's int8 GEMV at 256 MB. Three builds: b = 7ccd1cd
# (v57's measured head, `.devbin/xtask-b.xz`), x = 8a4b085 (the scale and d words by selects,
# `.devbin/xtask-x.xz`), h = the q6-half branch (a unit of a whole half block, 128 weights:
# eight 16-byte weight loads a half where x takes twelve; `.devbin/xtask-h.xz`, `kvc-h.xz`).
# 0. h's Q6_K int8 tests on the GPU (the GEMV, the few-row and tiled GEMMs: against the CPU).
# 1. Q6_K's GEMV through --tuned, b / x / h interleaved, two rounds.
# 2. A sweep of h's variants (16 and 32 lanes a row group, WG 128 and 256; v57's sweep of b
#    found 0.751 at best) and the registers a thread of x's and h's variants.
# 3. The 8B's decode, one and eight streams, x / h (Q6_K holds its output head, v in half the
#    layers and the down projections of those).
set -u
. docs/bench/device.sh
device_setup "xtask-b xtask-x xtask-h kvc-h" "e"
timeout 20 ./.devbin/xtask-x bench --shapes large --tuned --types q4_K --kernel gemv_q8 >/dev/null 2>&1
GPUPORT_KVC_TYPES=q6_K timeout 90 ./.devbin/kvc-h gemv_q8 few_row_int8 tiled_int8 int8_blocks >"$R/kvc-h-q6.txt" 2>&1
echo "kvc h q6_K rc=$? at $(el) s: $(grep -E 'test result|panicked' "$R/kvc-h-q6.txt" | head -3)"; save
q6() {
    timeout 40 "./.devbin/xtask-$1" bench --shapes large --tuned --types q6_K --kernel gemv_q8 \
        --json "$R/q6-$1-$2.json" >"$R/q6-$1-$2.txt" 2>&1
    echo "q6 $1 $2 rc=$? at $(el) s: $(grep -E '^large' "$R/q6-$1-$2.txt" | awk '{print $3, $8, $10}' | paste -sd' ')"
    save
}
q6 b 1; q6 x 1; q6 h 1; q6 b 2; q6 x 2; q6 h 2
GPUPORT_BENCH_HOLD_MS=100 timeout 100 ./.devbin/xtask-h bench --shapes large --types q6_K --kernel gemv_q8 \
    --wg 128,256 --lanes 16,32 --json "$R/q6-sweep-h.json" >"$R/q6-sweep-h.txt" 2>&1
echo "q6 sweep h rc=$? at $(el) s:"; grep -E '^large' "$R/q6-sweep-h.txt" | sort -k8 -n | tail -6; save
for b in x h; do
    timeout 40 "./.devbin/xtask-$b" kernel-stats --filter gemv_q8.q6_K --filter WG=128.ROWS=4 >"$R/ks-q6-$b.txt" 2>&1
    echo "ks q6 $b rc=$? at $(el) s: $(grep -c 'Register Count' "$R/ks-q6-$b.txt") variants"
    grep -o "^gemv[^ ]*\|Register Count=[0-9]*\|Stack Size=[0-9]*" "$R/ks-q6-$b.txt" | paste -sd' ' |
        sed 's/ gemv/\ngemv/g' | sort -t= -k2 | head -4
    save
done
par e x 1,8 X=1 ""
par e h 1,8 X=1 ""
[ "$(el)" -lt 500 ] && { par e x 1,8 X=1 -2; par e h 1,8 X=1 -2; }
device_finish
