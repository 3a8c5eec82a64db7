#!/usr/bin/env bash
# v52's next call (written, not run: an H200, the card issue 15 names; after v51's run1.sh on
# the same warm machine if it comes) — issue 15's table: bench-llm at 1, 8, 32 and 64 streams
# (128-token prompts, 128 tokens each) beside `llama-batched-bench -fa on -npp 128 -ntg 128
# -npl 1,8,32,64`, the four models, n = HEAD's build (Q6_K in groups, the input norm at one
# token a workgroup up to 64 rows). Then, as time allows, the 8B at 32 / 64 streams with the
# norm at four tokens a workgroup (GPUPORT_X16_NORM_TOKENS=4, the rule before) on this card.
set -u
. docs/bench/device.sh
device_setup "xtask-n" "s g l e" llama
timeout 20 ./.devbin/xtask-n bench --shapes large --tuned --types q4_K --kernel gemv_q8 >/dev/null 2>&1
wait_llama 300
for m in s g l e; do par $m n 1,8,32,64 X=1 -1; bb $m; done
[ "$(el)" -lt 520 ] && par e n 32,64 GPUPORT_X16_NORM_TOKENS=4 -nt4
[ "$(el)" -lt 550 ] && par e n 32,64 X=1 -2
device_finish
