#!/usr/bin/env bash
# v52 call 1 (any NVIDIA card; short, no llama.cpp): v47's unrun call 5 and the input norm at
# one token a workgroup. x = the build of branch exp/coop-sg-staged (390574c +
# docs/bench/llm-v47/coop-sg-staged.patch): a tile a subgroup whose subgroups stage their own
# input in workgroup memory (XS 1) against v47 call 3's form (XS 0: input fragments from the
# storage buffer) and the workgroup tiles (GPUPORT_COOP_SG=0) — its test, the Llama GEMMs at
# 32 rows, the 8B at 32 / 64 streams. g = 1f9955f's build: the 8B at 32 / 64 streams as is and
# with GPUPORT_X16_NORM_TOKENS=1 (the input norm's f16 pass at one token a workgroup).
set -u
. docs/bench/device.sh
device_setup "xtask-g xtask-x kvc-x" "e" ""
timeout 20 ./.devbin/xtask-g bench --shapes large --tuned --types q4_K --kernel gemv_q8 >/dev/null 2>&1
timeout 60 ./.devbin/kvc-x coop_sg >"$R/kvc-sg.txt" 2>&1
echo "kvc-x coop_sg rc=$? at $(el) s: $(grep -E 'test result' "$R/kvc-sg.txt")"; save
gt 32 x GPUPORT_COOP_SG=0 wg
gt 32 x GPUPORT_COOP_SG=1 xs1
gt 32 x "GPUPORT_COOP_SG=1 GPUPORT_COOP_SG_XS=0" xs0
par e g 32,64 X=1 -base
par e g 32,64 GPUPORT_X16_NORM_TOKENS=1 -nt1
par e x 32,64 GPUPORT_COOP_SG=1 -xs1
[ "$(el)" -lt 250 ] && par e g 32,64 X=1 -base2
device_finish
