#!/usr/bin/env bash
# v59 call 2 (after run10.sh on the warm machine): r's and s's Q6_K kernels against the CPU on
# the GPU (s = r with docs/bench/llm-v59/q6k-coop-words.patch, 20a843f2: the tensor-core
# tile's Q6_K words decoded as whole words; build xtask-s and kvc-s from it), the Llama
# GEMMs at 32 rows on r and s, the 8B's 32 / 64 streams r / s / s / r (equal ids digests
# expected), and the 8B's batched step at 32 rows profiled by kernel.
set -u
. docs/bench/device.sh
device_setup "xtask-r xtask-s kvc-r kvc-s" "e"
GPUPORT_KVC_TYPES=q6_K timeout 120 ./.devbin/kvc-r dequantization gemv_matches embedding gemv_q8 \
    few_row_int8 tiled_int8 int8_blocks >"$R/kvc-r.txt" 2>&1
echo "kvc r rc=$? at $(el) s: $(grep -E '^test result' "$R/kvc-r.txt")"
GPUPORT_KVC_TYPES=q6_K timeout 120 ./.devbin/kvc-s coop >"$R/kvc-s.txt" 2>&1
echo "kvc s coop rc=$? at $(el) s: $(grep -E '^test result' "$R/kvc-s.txt")"
save
gt 32 r "" r 1,2,4
gt 32 s "" s 1,2,4
par e r 32,64
par e s 32,64
par e s 32,64 "" b
par e r 32,64 "" b
timeout 120 ./.devbin/xtask-s bench-llm target/m/e.gguf --steps 8 --batch 32 --json "$R/e-b32.json" >"$R/e-b32.txt" 2>&1
echo "e batch 32 rc=$? at $(el) s"; grep -A3 "one step" "$R/e-b32.txt" | head -8
save
device_finish
