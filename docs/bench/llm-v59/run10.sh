#!/usr/bin/env bash
# v59 call 1 (any card; the H200 is the one that counts): Q6_K's int8 GEMV at 256 MB on
# x (3a23fe4), p (49678f7a: its unit addressed by block number, no division a unit) and r
# (76a05190: p with qh held flipped, no XOR a word) beside two diagnostic builds whose results
# are wrong and whose times are not — f: x's q6_words without its flip (r's saving on x), n:
# x's decode one XOR a word (what the loads and the dot products cost alone) — through the
# committed entry (X=1) and v57's sweep best (tuning-q6s.json), two rounds; then a sweep of
# r's 32-lane variants. The 8B's file is rebuilt meanwhile for run11.sh.
set -u
. docs/bench/device.sh
device_setup "xtask-x xtask-p xtask-f xtask-r xtask-n" "e"
timeout 20 ./.devbin/xtask-x bench --shapes large --tuned --types q4_K --kernel gemv_q8 >/dev/null 2>&1
for r in 1 2; do
    for b in x p r f n; do
        q6 $b "c$r" X=1
        q6 $b "s$r" GPUPORT_TUNING=docs/bench/llm-v58/tuning-q6s.json
    done
done
tuned_q8 x
q6_sweep r
device_finish
