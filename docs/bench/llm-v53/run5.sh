#!/usr/bin/env bash
# Written in v53, not run (no device time left): the per-row attention pass with its memory
# sized by its group and an f16 cache's blocks staged as packed halves (a = the commit that
# adds GPUPORT_ROW_TABLE_BLOCKS, or HEAD's build) against n (4da72e8, before it; its split
# target 1,024, so n runs with GPUPORT_ROW_SPLIT_WORKGROUPS=256 to match a's default).
# `bench --other-kernels` (the row-table attention shapes at 8 and 64 rows of 192 keys) on n,
# a, and a with the prompts' 32-key blocks (GPUPORT_ROW_TABLE_BLOCKS=1); then the 8B at 32 /
# 64 streams on n, a, a with 32-key blocks and a at the split target 512 (a third of the
# memory lets more split workgroups share a core), two rounds; the 1B and SmolLM2 once.
set -u
. docs/bench/device.sh
device_setup "xtask-n xtask-a" "e l s" ""
timeout 20 ./.devbin/xtask-a bench --shapes large --tuned --types q4_K --kernel gemv_q8 >/dev/null 2>&1
ok() {
    timeout 60 env $2 "./.devbin/xtask-$1" bench --other-kernels --json "$R/ok-$1$3.json" \
        >"$R/ok-$1$3.txt" 2>&1
    echo "other $1$3 rc=$? at $(el) s: $(grep -E '^attention rows' "$R/ok-$1$3.txt" | awk '{printf "%s %s: %s; ", $3, $4, $(NF-1)}')"
    save
}
N=GPUPORT_ROW_SPLIT_WORKGROUPS=256
ok n $N ""; ok a X=1 ""; ok a GPUPORT_ROW_TABLE_BLOCKS=1 -kb32; ok n $N -2; ok a X=1 -2
for r in 1 2; do
    par e n 32,64 $N -$r
    par e a 32,64 X=1 -$r
    par e a 32,64 GPUPORT_ROW_TABLE_BLOCKS=1 -kb32-$r
    par e a 32,64 GPUPORT_ROW_SPLIT_WORKGROUPS=512 -rs512-$r
done
for m in l s; do
    [ "$(el)" -lt 480 ] || break
    par $m n 8,32,64 $N ""
    par $m a 8,32,64 X=1 ""
done
device_finish
