#!/usr/bin/env bash
# v52 call 2 (call 1's kind, a fresh machine): the input norm's f16 pass at one token a workgroup
# (GPUPORT_X16_NORM_TOKENS=1) against four (the default), interleaved — the 8B at 32 / 64
# streams twice more, the 1B once each.
set -u
. docs/bench/device.sh
device_setup "xtask-g" "e l" ""
timeout 20 ./.devbin/xtask-g bench --shapes large --tuned --types q4_K --kernel gemv_q8 >/dev/null 2>&1
for r in 2 3; do
    par e g 32,64 GPUPORT_X16_NORM_TOKENS=1 -nt1-$r
    par e g 32,64 X=1 -base-$r
done
par l g 32,64 GPUPORT_X16_NORM_TOKENS=1 -nt1
par l g 32,64 X=1 -base
device_finish
