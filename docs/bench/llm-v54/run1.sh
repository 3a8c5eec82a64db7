#!/usr/bin/env bash
# v54 call 1: the int8 few-row GEMMs' rule below 32 rows (b = the commit adding
# `ops::q8_narrow_rpt`: a warp a row group, never widened, four rows a thread, two for Q6_K)
# against v53's rule and two uniform variants, through the knobs, at 8 streams on the four
# models (the 8B twice) while llama.cpp builds; then issue 15's table on b beside
# `llama-batched-bench`; the row tables in 32-key blocks as time allows.
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
# As time allows: the prompts' 32-key blocks in the row tables (v54 call 1: the 8B +2% at 32
# streams, level at 64; the row-table pass 11-19% faster at 64 rows of 192 keys on every
# model), each beside the rule.
for m in l g s; do
    [ "$(el)" -lt 540 ] || break
    par $m b 32,64 GPUPORT_ROW_TABLE_BLOCKS=1 -kb32
    par $m b 32,64 X=1 -t2
done
device_finish
