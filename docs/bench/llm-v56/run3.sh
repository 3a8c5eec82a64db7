#!/usr/bin/env bash
# v56 call 2 (the warm machine after run2.sh): issue 15's table on q (Q6_K's runs as 16-byte
# loads) beside llama-batched-bench, every model at 1 / 8 / 32 / 64 streams; then, with the
# time left, q's tensor-core test on Q6_K alone (run2.sh's on Q6_K and Q4_K did not finish in
# 150 s while models and llama.cpp were being built).
set -u
. docs/bench/device.sh
device_setup "xtask-q kvc-q" "e l s g" llama
timeout 20 ./.devbin/xtask-q bench --shapes large --tuned --types q4_K --kernel gemv_q8 >/dev/null 2>&1
wait_llama 300
for m in s g l e; do par $m q 1,8,32,64 X=1 ""; bb $m; done
left=$((585 - $(el)))
if [ "$left" -gt 30 ]; then
    GPUPORT_KVC_TYPES=q6_K timeout "$left" ./.devbin/kvc-q coop_gemm_matches >"$R/kvc-q6.txt" 2>&1
    echo "kvc q q6_K rc=$? at $(el) s: $(grep -E 'test result|panicked' "$R/kvc-q6.txt" | head -3)"
fi
device_finish
