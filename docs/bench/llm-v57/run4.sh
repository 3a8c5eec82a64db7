#!/usr/bin/env bash
# v57, any card, the session's last device time: the 32-token tensor-core tiles of one
# subgroup along the tokens (t = HEAD: `GPUPORT_COOP_TOKEN_SUBGROUPS=1`; the default is b's
# two) — the Llama shapes' GEMMs at 32 rows, then the 8B at 32 / 64 streams interleaved (the
# same fragments in the same order: equal ids digests expected).
set -u
. docs/bench/device.sh
device_setup "xtask-t" "e"
timeout 20 ./.devbin/xtask-t bench --shapes large --tuned --types q4_K --kernel gemv_q8 >/dev/null 2>&1
gt 32 t "X=1" t2 1,2,4
gt 32 t GPUPORT_COOP_TOKEN_SUBGROUPS=1 t1 1,2,4
par e t 32,64 X=1 -2
par e t 32,64 GPUPORT_COOP_TOKEN_SUBGROUPS=1 -1
device_finish
