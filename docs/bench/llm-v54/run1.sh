#!/usr/bin/env bash
# Written in v54, not run (the session's device time went to refused starts): b = HEAD's
# build (`cargo build --release -p gpuport-xtask`, stripped, xz'd into .devbin/xtask-b.xz).
# While llama.cpp builds: the int8 few-row rule below 32 rows (on the 8B-sized matrices a
# warp a row group, never widened, four rows a thread, two for Q6_K) against v53's rule
# (`OLD`) and two uniform variants on every matrix (`A4`, `A2`), through the knobs, at 8
# streams on the four models (the 8B twice). Then issue 15's table on b beside
# `llama-batched-bench`; as time allows, row tables over the f16 cache in 16-key blocks (the
# rule before v54, GPUPORT_ROW_TABLE_BLOCKS=0) beside b's 32 at 32 / 64 streams.
set -u
. docs/bench/device.sh
device_setup "xtask-b" "s g l e" llama
timeout 20 ./.devbin/xtask-b bench --shapes large --tuned --types q4_K --kernel gemv_q8 >/dev/null 2>&1
OLD="GPUPORT_Q8_ROWS_RPT=2 GPUPORT_Q8_ROWS_THREADS=131072"
A4="GPUPORT_Q8_ROWS_RPT=4 GPUPORT_Q8_ROWS_THREADS=0"
A2="GPUPORT_Q8_ROWS_RPT=2 GPUPORT_Q8_ROWS_THREADS=0"
ab() {
    par "$1" b 8 X=1 "-new$2"
    par "$1" b 8 "$OLD" "-old$2"
    par "$1" b 8 "$A4" "-all4$2"
    par "$1" b 8 "$A2" "-all2$2"
}
for m in s g l; do ab $m ""; done
ab e -1
ab e -2
wait_llama 330
for m in s g l e; do par $m b 1,8,32,64 X=1 -t; bb $m; done
for m in e l g s; do
    [ "$(el)" -lt 540 ] || break
    par $m b 32,64 GPUPORT_ROW_TABLE_BLOCKS=0 -kb16
    par $m b 32,64 X=1 -t2
done
device_finish
