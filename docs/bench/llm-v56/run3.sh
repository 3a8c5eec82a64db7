#!/usr/bin/env bash
# v56 call 2 (the warm machine after run2.sh): issue 15's table on q (Q6_K's runs as 16-byte
# loads) beside llama-batched-bench, every model at 1 / 8 / 32 / 64 streams. Pass the
# variant's environment as $1 (X=1 for the defaults).
set -u
. docs/bench/device.sh
device_setup "xtask-q" "e l s g" llama
timeout 20 ./.devbin/xtask-q bench --shapes large --tuned --types q4_K --kernel gemv_q8 >/dev/null 2>&1
wait_llama 300
for m in s g l e; do par $m q 1,8,32,64 "${1:-X=1}" ""; bb $m; done
device_finish
