#!/usr/bin/env bash
# v46 call 2 — refused three times (no machine lent), not run: the next session's first call
# (docs/design/next-kernels.md, "as of v46"). b = 941b07a (32 rows a subgroup the default up
# to 64 tokens; GPUPORT_COOP_SUB_ROWS=64 gives the tiles before); kvc = its test binary.
# (1) `kvc coop`; (2) the Llama shapes' GEMMs at 32 and 64 rows split 1-4 ways; (3) the 8B and
# 1B at 32/64 streams, the split target at 256 (the rule) and 128 (v46's sweep: two splits
# ahead on the q|k|v and attention-output shapes); (4) issue 15's table for the 8B and the 1B
# beside llama-batched-bench (built in the background), the small models if time is left.
set -u
. docs/bench/device.sh
device_setup "xtask-b kvc" "e l s g" llama
timeout 150 ./.devbin/kvc coop >"$R/kvc-coop.txt" 2>&1
echo "kvc coop rc=$? at $(el) s"; grep -E "test result|panicked|FAILED" "$R/kvc-coop.txt" | head -5; save
for t in 32 64; do gm $t b X=1; done
for m in e l; do
    par $m b 32,64 X=1 -t256
    par $m b 32,64 GPUPORT_COOP_SPLIT_TARGET=128 -t128
done
wait_llama 400
for m in e l s g; do [ "$(el)" -lt 500 ] && { bb $m; par $m b 1,8,32,64 X=1; }; done
device_finish
