#!/usr/bin/env bash
# v58, call 2 (v57's run5.sh second half, with h beside it): issue 15's 8B at 32 / 64 streams.
# x = 8a4b085 (`.devbin/xtask-x.xz`, `kvc-x.xz`): the 32-token tensor-core tiles of one token
# subgroup behind GPUPORT_COOP_TOKEN_SUBGROUPS=1 (each weight fragment read once from
# workgroup memory at 32 rows where two subgroups read it twice); h = the q6-half branch
# (`.devbin/xtask-h.xz`: Q6_K's int8 unit a whole half block; the 8B's Q6_K matrices at 32 /
# 64 rows go to the tensor cores; its lines were dropped from the call as run: h crashed the
# driver's compiler in run6.sh).
# 1. The Llama shapes' GEMMs at 32 rows, two token subgroups against one.
# 2. The 8B at 32 / 64 streams: x, x with one token subgroup; then again in reverse order
#    (equal ids digests expected between x's two tiles: the same fragments in the same order).
# 3. The tensor-core test of Q4_K on x (the new tiles against the CPU and the two-subgroup
#    tile) as time allows.
set -u
. docs/bench/device.sh
device_setup "xtask-x xtask-h kvc-x" "e"
timeout 20 ./.devbin/xtask-x bench --shapes large --tuned --types q4_K --kernel gemv_q8 >/dev/null 2>&1
gt 32 x "X=1" x2 1,2,4
gt 32 x GPUPORT_COOP_TOKEN_SUBGROUPS=1 x1 1,2,4
par e x 32,64 X=1 -2
par e x 32,64 GPUPORT_COOP_TOKEN_SUBGROUPS=1 -1
par e x 32,64 GPUPORT_COOP_TOKEN_SUBGROUPS=1 -1b
par e x 32,64 X=1 -2b
if [ "$(el)" -lt 420 ]; then
    GPUPORT_KVC_TYPES=q4_K timeout $((580 - $(el))) ./.devbin/kvc-x coop_gemm_matches >"$R/kvc-x-coop.txt" 2>&1
    echo "kvc x q4_K coop rc=$? at $(el) s: $(grep -E 'test result|panicked' "$R/kvc-x-coop.txt" | head -3)"; save
fi
device_finish
