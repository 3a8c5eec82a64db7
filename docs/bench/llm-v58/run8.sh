#!/usr/bin/env bash
# v58, call 3: the int8 GEMV's UNROLL written out. v58's kernel-stats showed NVIDIA's compiler
# keeping `for (i < UNROLL)` a loop (the same binary size at UNROLL 1-8), so no sweep so far
# has unrolled anything. x = 8a4b085's build (`.devbin/xtask-x.xz`), u = the units written
# out under constant conditions (`.devbin/xtask-u.xz`, `kvc-u.xz`).
# 0. u's registers and binary sizes (unrolled: larger at UNROLL 2 and 4) and its int8 GEMV
#    tests on the GPU (Q6_K, Q4_K).
# 1. Q6_K's GEMV at 256 MB at WG 128, 4 rows, one a thread, shared reduction
#    (`docs/bench/llm-v58/tuning-q6s.json`: the committed table with that Q6_K entry; v57's H200 sweep
#    best, and the reduction h's variants compile with), x / u / h, two rounds. h = x with
#    `q6k-half-unit.patch` (`.devbin/xtask-h.xz`).
# 2. Q6_K's GEMV at 256 MB, every variant of 32 lanes a row group at WG 128 and 256, x / u,
#    two rounds (all variants in the JSON); Q4_K's and Q5_K's the same as time allows.
# 2b. Whether NVIDIA's compiler takes other forms of h's subgroup variants (h crashed it in
#    run6.sh): hu = h on u, hu2 = hu with the scales sign-extended by shifts (no unpack4xI8),
#    hu4 = hu with the unit's raw words and the int8 words formed in unit_apply
#    (`q6k-half-unit-raw-words.patch`); kernel-stats of their subgroup variants, then each
#    that built timed as in 1.
# 3. On an H200: issue 13's GEMV table through --tuned on x and u.
set -u
. docs/bench/device.sh
device_setup "xtask-x xtask-u xtask-h xtask-hu xtask-hu2 xtask-hu4 kvc-u" ""
timeout 20 ./.devbin/xtask-x bench --shapes large --tuned --types q4_K --kernel gemv_q8 >/dev/null 2>&1
timeout 40 ./.devbin/xtask-u kernel-stats --filter gemv_q8.q6_K --filter WG=128.ROWS=4 >"$R/ks-q6-u.txt" 2>&1
echo "ks q6 u rc=$? at $(el) s:"
grep -A1 "^gemv" "$R/ks-q6-u.txt" | grep -o "^gemv.*\|Register Count=[0-9]*\|Binary Size=[0-9]*" | paste - - - | head -12
GPUPORT_KVC_TYPES=q6_K,q4_K timeout 60 ./.devbin/kvc-u gemv_q8 >"$R/kvc-u.txt" 2>&1
echo "kvc u rc=$? at $(el) s: $(grep -E 'test result|panicked' "$R/kvc-u.txt" | head -3)"; save
q6() {
    GPUPORT_TUNING=docs/bench/llm-v58/tuning-q6s.json timeout 40 "./.devbin/xtask-$1" bench --shapes large --tuned \
        --types q6_K --kernel gemv_q8 --json "$R/q6-$1-$2.json" >"$R/q6-$1-$2.txt" 2>&1
    echo "q6s $1 $2 rc=$? at $(el) s: $(grep -E '^large' "$R/q6-$1-$2.txt" | awk '{print $3, $8, $10}' | paste -sd' ')"
    save
}
for r in 1 2; do for b in x u h; do q6 $b $r; done; done
sweep() {
    GPUPORT_BENCH_HOLD_MS=100 timeout 60 "./.devbin/xtask-$1" bench --shapes large --types "$2" --kernel gemv_q8 \
        --wg 128,256 --lanes 32 --json "$R/sw-$2-$1-$3.json" >"$R/sw-$2-$1-$3.txt" 2>&1
    echo "sweep $2 $1 $3 rc=$? at $(el) s: $(python3 -c "
import json, sys
d = json.load(open('$R/sw-$2-$1-$3.json'))
for r in sorted(d['results'], key=lambda r: -r['ratio'])[:5]:
    print(r['tunables'].replace(' ', ','), round(r['ratio'], 3), end='; ')
")"
    save
}
for b in hu hu2 hu4; do
    timeout 30 "./.devbin/xtask-$b" kernel-stats --filter gemv_q8.q6_K.subgroup --filter WG=128.ROWS=4 >"$R/ks-q6-$b.txt" 2>&1
    rc=$?
    echo "ks q6 $b rc=$rc at $(el) s: $(grep -c 'Register Count' "$R/ks-q6-$b.txt") variants"
    [ $rc = 0 ] && q6 $b 1
done
sweep x q6_K 1; sweep u q6_K 1; sweep x q6_K 2; sweep u q6_K 2
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
    for b in x u; do
        timeout 60 "./.devbin/xtask-$b" bench --shapes large --tuned --kernel gemv_q8 --json "$R/t-$b.json" >"$R/t-$b.txt" 2>&1
        echo "tuned $b rc=$? at $(el) s: $(grep -E '^large' "$R/t-$b.txt" | awk '{print $3, $8}' | paste -sd' ')"
        save
    done
fi
for t in q4_K q5_K; do [ "$(el)" -lt 400 ] && { sweep x $t 1; sweep u $t 1; }; done
device_finish
