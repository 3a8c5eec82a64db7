#!/usr/bin/env bash
# v56's last device time (~280 s, most of it a fresh start): run4.sh cut to the 1B, whose
# Q6_K down projection gained most from q (−16%): r's Q6_K tensor-core test (r = HEAD with
# q6k-run-scales.patch applied), then the 1B at 32 / 64 streams, q and r interleaved.
set -u
. docs/bench/device.sh
device_setup "xtask-q xtask-r kvc-r" "l"
GPUPORT_KVC_TYPES=q6_K timeout 40 ./.devbin/kvc-r coop_gemm_matches >"$R/kvc-r.txt" 2>&1
echo "kvc r q6_K rc=$? at $(el) s: $(grep -E 'test result|panicked' "$R/kvc-r.txt" | head -3)"; save
for k in 1 2 3; do par l q 32,64 X=1 "-$k"; par l r 32,64 X=1 "-$k"; done
device_finish
