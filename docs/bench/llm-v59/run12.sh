#!/usr/bin/env bash
# v59, H200: issue 13's table on r (76a05190: Q6_K's qh held flipped, its int8 unit addressed
# by block number) — v57's run1.sh with Q6_K's GEMV A/B in the time llama.cpp's CUDA backend
# builds: r's Q6_K kernels against the CPU on the GPU (the tensor-core tile included), then
# `bench --shapes large --tuned --types q6_K --kernel gemv_q8` on x (3a23fe4), r and n (x's
# decode one XOR a word: wrong values, the loads' and dot products' time) through the
# committed entry and v57's sweep best, two rounds; the GEMV table through --tuned on r; then
# beside `llama-bench -ngl 99 -p 512 -n 128 -fa 1 -r 3` bench-llm's 512-token prompt and
# 128-token decode for the four models and Gemma 3 at depth.
set -u
. docs/bench/device.sh
device_setup "xtask-x xtask-r xtask-n kvc-r" "s g l e" llama
timeout 20 ./.devbin/xtask-r bench --shapes large --tuned --types q4_K --kernel gemv_q8 >/dev/null 2>&1
GPUPORT_KVC_TYPES=q6_K timeout 100 ./.devbin/kvc-r dequantization gemv_matches embedding gemv_q8 \
    few_row_int8 tiled_int8 int8_blocks coop_gemm_matches >"$R/kvc-r.txt" 2>&1
echo "kvc r rc=$? at $(el) s: $(grep -E 'test result|panicked' "$R/kvc-r.txt" | head -3)"; save
for r in 1 2; do
    for b in x r n; do
        q6 $b "c$r" X=1
        q6 $b "s$r" GPUPORT_TUNING=docs/bench/llm-v58/tuning-q6s.json
    done
done
timeout 70 ./.devbin/xtask-r bench --shapes large --tuned --json "$R/gemv-tuned-r.json" >"$R/gemv-tuned-r.txt" 2>&1
echo "tuned r rc=$? at $(el) s: $(grep -E '^large' "$R/gemv-tuned-r.txt" | awk '{printf "%s/%s:%s ", $3, $2, $8}')"
save
wait_llama 330
for m in s g l e; do pre $m r 1; lb $m 1; save; done
depth r
device_finish
