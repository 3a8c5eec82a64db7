#!/usr/bin/env bash
# Written in v58 for the next H200 call (queue item 1, docs/design/next-kernels.md): Q6_K's
# int8 GEMV at 256 MB through --tuned on x (`.devbin/xtask-x.xz` = 8a4b085; HEAD's kernels are
# the same), the committed H200 entry (WG 256, 16 rows, two a thread, shared: 0.735 in v57)
# against v57's sweep best (`tuning-q6s.json`: WG 128, 4 rows, one a thread, shared: 0.750),
# interleaved, three rounds; then the whole int8 table through --tuned once, and a sweep of
# Q6_K's 32-lane variants. ~2 minutes on a warm machine.
set -u
. docs/bench/device.sh
device_setup "xtask-x" ""
timeout 20 ./.devbin/xtask-x bench --shapes large --tuned --types q4_K --kernel gemv_q8 >/dev/null 2>&1
for r in 1 2 3; do
    q6 x "c$r" X=1
    q6 x "s$r" GPUPORT_TUNING=docs/bench/llm-v58/tuning-q6s.json
done
tuned_q8 x
q6_sweep x
device_finish
