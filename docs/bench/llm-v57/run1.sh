#!/usr/bin/env bash
# v57, H200 only: issue 13's table on the card it names (v51's run1.sh on one build, b = HEAD:
# `.devbin/xtask-b.xz`, `.devbin/kvc-b.xz`). While llama.cpp's CUDA backend builds: the int8
# and float GPU-vs-CPU tests, the GEMV table at 256 MB as decode runs it (`--tuned`, two
# rounds), Q6_K's tensor-core test while time is left. Then, beside `llama-bench -ngl 99 -p
# 512 -n 128 -fa 1 -r 3`, bench-llm's 512-token prompt and 128-token decode for the four
# models, Gemma 3 at depth 4,096 / 16,384 against `llama-bench -p 0 -n 128 -d 0,4096,16384
# -fa 1`, and a second round as time allows.
set -u
. docs/bench/device.sh
device_setup "xtask-b kvc-b" "s g l e" llama
timeout 20 ./.devbin/xtask-b bench --shapes large --tuned --types q4_K --kernel gemv_q8 >/dev/null 2>&1
timeout 100 ./.devbin/kvc-b dequantization gemv_matches embedding gemv_q8_input_matches few_row_int8 \
    tiled_int8 int8_blocks >"$R/kvc-b.txt" 2>&1
echo "kvc b rc=$? at $(el) s: $(grep -E 'test result' "$R/kvc-b.txt")"; save
tt() {
    timeout 70 ./.devbin/xtask-b bench --shapes large --tuned --json "$R/gemv-tuned-b$1.json" \
        >"$R/gemv-tuned-b$1.txt" 2>&1
    echo "tuned b$1 rc=$? at $(el) s: $(grep -E '^large' "$R/gemv-tuned-b$1.txt" | awk '{printf "%s/%s:%s ", $3, $2, $8}')"
    save
}
tt 1
GPUPORT_KVC_TYPES=q4_K,q6_K timeout 90 ./.devbin/kvc-b coop_gemm_matches >"$R/kvc-b-coop.txt" 2>&1
echo "kvc b coop rc=$? at $(el) s: $(grep -E 'test result|panicked' "$R/kvc-b-coop.txt" | head -3)"; save
tt 2
wait_llama 330
for m in s g l e; do pre $m b 1; lb $m 1; save; done
depth b
for m in s g l e; do [ "$(el)" -lt 480 ] && { pre $m b 2; lb $m 2; save; }; done
device_finish
