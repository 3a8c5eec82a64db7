#!/usr/bin/env bash
# v57: issue 15's table in one call beside `llama-batched-bench` (every model at 1 / 8 / 32 /
# 64 streams, b = HEAD's build), a second round of the Llama shapes as time allows, then a
# sweep of Q6_K's GEMV variants at 256 MB. On a warm
# machine after run1.sh (llama.cpp and the models already there) it takes ~3 minutes.
set -u
. docs/bench/device.sh
device_setup "xtask-b" "s g l e" llama
timeout 20 ./.devbin/xtask-b bench --shapes large --tuned --types q4_K --kernel gemv_q8 >/dev/null 2>&1
wait_llama 330
for m in s g l e; do par $m b 1,8,32,64 X=1 ""; bb $m; done
for m in e l; do [ "$(el)" -lt 260 ] && { par $m b 8,32,64 X=1 -2; bb $m; }; done
# Q6_K's GEMV at 256 MB (0.735 of the ceiling through --tuned in run1.sh): every variant of
# 16 and 32 lanes a row group, WG 128 and 256.
GPUPORT_BENCH_HOLD_MS=100 timeout 100 ./.devbin/xtask-b bench --shapes large --types q6_K --kernel gemv_q8 \
    --wg 128,256 --lanes 16,32 --json "$R/q6-sweep-b.json" >"$R/q6-sweep-b.txt" 2>&1
echo "q6 sweep b rc=$? at $(el) s:"; grep -E '^large' "$R/q6-sweep-b.txt" | sort -k8 -n | tail -6; save
device_finish
