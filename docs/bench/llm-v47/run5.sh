#!/usr/bin/env bash
# v47 call 5 — written, not run. Build x from branch exp/coop-sg-staged, or where that branch
# is not at hand: `git checkout 390574c && git apply docs/bench/llm-v47/coop-sg-staged.patch`
# (the patch is the branch's change to the code over 390574c). On that tree (390574c + the
# staged input): a
# tile a subgroup whose subgroups copy their input rows into their own tile in workgroup memory
# (XS 1, GPUPORT_COOP_SG_XS=1 the default of that branch) against v47 call 3's form (XS 0,
# input fragments from the storage buffer) and the workgroup tiles (GPUPORT_COOP_SG=0).
# x = the branch's build, kvc-x its test binary. (1) `kvc coop_sg` (every tile, both forms:
# the CPU and the same bits as gemm_coop.wgsl); (2) the Llama shapes at 32 and 64 rows;
# (3) the 8B and 1B at 32/64 streams.
set -u
. docs/bench/device.sh
device_setup "xtask-x kvc-x" "e l" ""
timeout 90 ./.devbin/kvc-x coop_sg >"$R/kvc-sg.txt" 2>&1
echo "kvc coop_sg rc=$? at $(el) s"; grep -E "test result|panicked|differs|FAILED" "$R/kvc-sg.txt" | head -5; save
for t in 32 64; do
    gt $t x GPUPORT_COOP_SG=0 wg
    gt $t x GPUPORT_COOP_SG=1 xs1
    gt $t x "GPUPORT_COOP_SG=1 GPUPORT_COOP_SG_XS=0" xs0
done
[ "$(el)" -lt 300 ] && gt 32 x "GPUPORT_COOP_SG=1 GPUPORT_COOP_SG_WN=8" xs1w8
for m in l e; do
    par $m x 32,64 GPUPORT_COOP_SG=0 -wg
    par $m x 32,64 GPUPORT_COOP_SG=1 -xs1
done
device_finish
