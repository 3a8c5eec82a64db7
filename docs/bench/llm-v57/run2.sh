#!/usr/bin/env bash
# v57: issue 15's table in one call beside `llama-batched-bench` (every model at 1 / 8 / 32 /
# 64 streams, b = HEAD's build), a second round of the Llama shapes as time allows. On a warm
# machine after run1.sh (llama.cpp and the models already there) it takes ~3 minutes.
set -u
. docs/bench/device.sh
device_setup "xtask-b" "s g l e" llama
timeout 20 ./.devbin/xtask-b bench --shapes large --tuned --types q4_K --kernel gemv_q8 >/dev/null 2>&1
wait_llama 330
for m in s g l e; do par $m b 1,8,32,64 X=1 ""; bb $m; done
for m in e l; do [ "$(el)" -lt 450 ] && { par $m b 8,32,64 X=1 -2; bb $m; }; done
device_finish
