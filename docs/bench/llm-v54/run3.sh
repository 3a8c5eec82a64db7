#!/usr/bin/env bash
# v54 call 3 (run1.sh without llama.cpp: the session's device time ran short after refused
# starts). c = the build that gives row tables over an f16 cache the prompts' 32-key blocks
# (after 5507da5). The int8 few-row GEMMs' rule below 32 rows (a warp a row
# group, never widened, four rows a thread, two for Q6_K) against v53's rule (`OLD`) and two
# uniform variants through the knobs, at 8 streams on the four models; then row tables in
# 32-key blocks (c's default) beside 16 (GPUPORT_ROW_TABLE_BLOCKS=0, the rule before) at 32 /
# 64 streams as time allows.
set -u
. docs/bench/device.sh
device_setup "xtask-c" "s g l e" ""
timeout 20 ./.devbin/xtask-c bench --shapes large --tuned --types q4_K --kernel gemv_q8 >/dev/null 2>&1
OLD="GPUPORT_Q8_ROWS_RPT=2 GPUPORT_Q8_ROWS_THREADS=131072"
A4="GPUPORT_Q8_ROWS_RPT=4 GPUPORT_Q8_ROWS_THREADS=0"
A2="GPUPORT_Q8_ROWS_RPT=2 GPUPORT_Q8_ROWS_THREADS=0"
ab() {
    par "$1" c 8 X=1 "-new$2"
    par "$1" c 8 "$OLD" "-old$2"
    par "$1" c 8 "$A4" "-all4$2"
    par "$1" c 8 "$A2" "-all2$2"
}
for m in s g l; do ab $m ""; done
ab e -1
par e c 1 X=1 -one
for m in e l g s; do
    [ "$(el)" -lt 190 ] || break
    par $m c 32,64 X=1 -kb32
    par $m c 32,64 GPUPORT_ROW_TABLE_BLOCKS=0 -kb16
done
device_finish
