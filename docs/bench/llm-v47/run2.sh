#!/usr/bin/env bash
# v47 call 2 — where a chunk's time goes in the tensor-core GEMM at batched decode's rows.
# h = ab70295 (HEAD); p1-p3 = h with one part of the work removed (results meaningless, times
# not): p1 no multiplies (the call sits behind a never-true test: no fragment loads, no mma);
# p2 no Q4_K decode (a word published as a select on four of its bits); p3 no weight loads
# (the run's words made from the indices; decode and multiplies kept). Q4_K shapes are the
# probe's: Q6_K (the down projections here) runs unchanged in every build.
set -u
. docs/bench/device.sh
device_setup "xtask-h xtask-p1 xtask-p2 xtask-p3" "" ""
ls /usr/local/cuda*/bin 2>/dev/null | grep -iE "nsys|ncu" | head -3; which nsys ncu 2>/dev/null
gq() {  # tokens bin env tag
    timeout 40 env $3 "./.devbin/xtask-$2" bench --gemm-only --tuned --shapes llama --gemm-tokens "$1" \
        --json "$R/g$1-$2$4.json" >"$R/g$1-$2$4.txt" 2>&1
    echo "g$1 $2$4 rc=$? at $(el) s: $(grep -E '^gemm .*tokens.*coop' "$R/g$1-$2$4.txt" |
        awk '{sub("llama","",$2); printf "%s:%s ", $2, $10}')"
}
# Warm-up: >= 2 s of steady work before the first figure.
timeout 30 ./.devbin/xtask-h bench --gemm-only --tuned --shapes llama --gemm-tokens 64 >/dev/null 2>&1
for round in 1 2; do
    for t in 32 64; do
        for b in h p1 p2 p3; do gq $t $b X=1 "-$round"; done
        gq $t h GPUPORT_COOP_FETCH=2 "-f2-$round"
    done
    save
done
timeout 90 ./.devbin/xtask-h kernel-stats --filter gemm_coop.q4_K --filter RF=2 --filter XH=1 \
    >"$R/kstats-h.txt" 2>&1; echo "kstats rc=$? at $(el) s"; grep -c Register "$R/kstats-h.txt"
for b in p1 p2 p3; do
    timeout 60 ./.devbin/xtask-$b kernel-stats --filter gemm_coop.q4_K.WM=2.WN=4.KC=64.TF=1.RF=2 \
        --filter XH=1 >"$R/kstats-$b.txt" 2>&1
done
grep -h -A1 "WM=2.WN=4.KC=64.TF=1.RF=2.SLOTS=2.XH=1$" "$R"/kstats-*.txt | grep -o "Register Count=[0-9]*"
device_finish
