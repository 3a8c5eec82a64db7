#!/usr/bin/env bash
# v54 call 3, cut to the ~190 s of device time left after refused starts. d = the build with
# the int8 few-row rule below 32 rows (output projections over 32,768 rows keep the rule
# before) and row tables over an f16 cache in 32-key blocks. d's rule against v53's (`OLD`,
# through the knobs) at 8 streams of the 8B and the 1B, interleaved; the 8B's one stream for
# the ratio.
set -u
. docs/bench/device.sh
device_setup "xtask-d" "e l" ""
timeout 20 ./.devbin/xtask-d bench --shapes large --tuned --types q4_K --kernel gemv_q8 >/dev/null 2>&1
OLD="GPUPORT_Q8_ROWS_RPT=2 GPUPORT_Q8_ROWS_THREADS=131072"
par e d 8 X=1 -new-1
par e d 8 "$OLD" -old-1
par e d 1 X=1 -one
par l d 8 X=1 -new
par l d 8 "$OLD" -old
par e d 8 X=1 -new-2
par e d 8 "$OLD" -old-2
device_finish
