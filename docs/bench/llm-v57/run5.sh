#!/usr/bin/env bash
# Written in v57 for the next session's first call (an H200 first: issue 13's last line is
# Q6_K's GEMV there). x = HEAD's build (`.devbin/xtask-x.xz`: Q6_K's GEMV unit picks its scale
# and d words by selects; the 32-token tiles of one token subgroup behind
# `GPUPORT_COOP_TOKEN_SUBGROUPS=1`), b = 7ccd1cd's (v56's head, `.devbin/xtask-b.xz`); kvc-x =
# HEAD's `cargo test --release -p gpuport-runtime --test kernels_vs_cpu --no-run`.
# 0. The int8 GEMV's Q6_K test on x (the selects: the same values).
# 1. Q6_K's GEMV at 256 MB through --tuned, b / x interleaved, two rounds, and the registers a
#    thread of the int8 GEMV's Q6_K and Q5_K variants (kernel-stats: what the driver made).
# 2. The Llama shapes' GEMMs at 32 rows and the 8B at 32 / 64 streams with one token subgroup
#    against two (equal ids digests expected: the same fragments in the same order), then the
#    tensor-core test of Q4_K (the new tiles against the CPU and the two-subgroup tile) as
#    time allows.
set -u
. docs/bench/device.sh
device_setup "xtask-b xtask-x kvc-x" "e"
timeout 20 ./.devbin/xtask-x bench --shapes large --tuned --types q4_K --kernel gemv_q8 >/dev/null 2>&1
GPUPORT_KVC_TYPES=q6_K timeout 60 ./.devbin/kvc-x gemv_q8 >"$R/kvc-x-q6.txt" 2>&1
echo "kvc x q6_K gemv_q8 rc=$? at $(el) s: $(grep -E 'test result|panicked' "$R/kvc-x-q6.txt" | head -3)"; save
q6() {
    timeout 40 "./.devbin/xtask-$1" bench --shapes large --tuned --types q6_K --kernel gemv_q8 \
        --json "$R/q6-$1-$2.json" >"$R/q6-$1-$2.txt" 2>&1
    echo "q6 $1 $2 rc=$? at $(el) s: $(grep -E '^large' "$R/q6-$1-$2.txt" | awk '{print $3, $8, $10}' | paste -sd' ')"
    save
}
q6 b 1; q6 x 1; q6 b 2; q6 x 2
for f in gemv_q8.q6_K gemv_q8.q5_K; do
    timeout 40 ./.devbin/xtask-x kernel-stats --filter "$f" >"$R/ks-$f.txt" 2>&1
    echo "ks $f rc=$? at $(el) s: $(grep -c 'Register Count' "$R/ks-$f.txt") variants"
    grep -o "^gemv[^ ]*\|Register Count=[0-9]*\|Stack Size=[0-9]*" "$R/ks-$f.txt" | paste -sd' ' |
        sed 's/ gemv/\ngemv/g' | sort -t= -k2 | head -6
    save
done
gt 32 x "X=1" x2 1,2,4
gt 32 x GPUPORT_COOP_TOKEN_SUBGROUPS=1 x1 1,2,4
par e x 32,64 X=1 -2
par e x 32,64 GPUPORT_COOP_TOKEN_SUBGROUPS=1 -1
par e x 32,64 GPUPORT_COOP_TOKEN_SUBGROUPS=1 -1b
par e x 32,64 X=1 -2b
if [ "$(el)" -lt 420 ]; then
    GPUPORT_KVC_TYPES=q4_K timeout $((580 - $(el))) ./.devbin/kvc-x coop_gemm_matches >"$R/kvc-x-coop.txt" 2>&1
    echo "kvc x q4_K coop rc=$? at $(el) s: $(grep -E 'test result|panicked' "$R/kvc-x-coop.txt" | head -3)"; save
fi
device_finish
