#!/usr/bin/env bash
# v53 call 3 (H100, a fresh machine; n = 4da72e8's build): the row-table attention's split
# target (GPUPORT_ROW_SPLIT_WORKGROUPS: 1,024 the default, 512, 256, 128) on the four models at
# 8, 32 and 64 streams, the 8B first; call 2 found 256 +3.3% / +3.5% at 32 / 64 streams of the
# 8B (no split there: 256 and 512 (row, KV head) pairs).
set -u
. docs/bench/device.sh
device_setup "xtask-n" "e l s g" ""
timeout 20 ./.devbin/xtask-n bench --shapes large --tuned --types q4_K --kernel gemv_q8 >/dev/null 2>&1
for m in e l s g; do
    for t in 1024 512 256 128; do
        [ "$(el)" -lt 520 ] && par $m n 8,32,64 GPUPORT_ROW_SPLIT_WORKGROUPS=$t -rs$t
    done
done
device_finish
