#!/usr/bin/env bash
# v57, any card: the tensor-core GEMM's run stores in swapped pairs (s = HEAD + the SWAP
# override: `GPUPORT_COOP_STORES=1`; 0, the default, is HEAD's kernel) — its Q4_K and Q6_K
# test first (the same bits in either order), the Llama shapes' GEMMs at 32 and 64 rows, the
# 8B and the 1B at 32 / 64 streams in interleaved rounds (equal ids digests expected) — and
# from v56's run4.sh: Q6_K's run scales once a run (r = HEAD before SWAP with
# docs/bench/llm-v56/q6k-run-scales.patch applied) and the fused norm rows
# (`GPUPORT_NORM_ROWS=1`). Most important first: the call may be cut by the session's budget.
set -u
. docs/bench/device.sh
device_setup "xtask-s kvc-s xtask-r" "e l"
timeout 20 ./.devbin/xtask-s bench --shapes large --tuned --types q4_K --kernel gemv_q8 >/dev/null 2>&1
for t in q4_K q6_K; do
    GPUPORT_KVC_TYPES=$t timeout 60 ./.devbin/kvc-s coop_gemm_matches >"$R/kvc-s-$t.txt" 2>&1
    echo "kvc s $t rc=$? at $(el) s: $(grep -E 'test result|panicked' "$R/kvc-s-$t.txt" | head -3)"; save
done
gt 32 s "X=1" s0 1,2,4
gt 32 s GPUPORT_COOP_STORES=1 s1 1,2,4
par e s 32,64 X=1 -0
par e s 32,64 GPUPORT_COOP_STORES=1 -1
par e r 32,64 X=1 -r
par e s 32,64 GPUPORT_NORM_ROWS=1 -n
par e s 32,64 GPUPORT_COOP_STORES=1 -1b
par e s 32,64 X=1 -0b
par l s 32,64 X=1 -0
par l s 32,64 GPUPORT_COOP_STORES=1 -1
device_finish
