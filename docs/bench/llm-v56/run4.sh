#!/usr/bin/env bash
# Written in v56, not run (every later start was refused): Q6_K's run scales once a run (r =
# HEAD with docs/bench/llm-v56/q6k-run-scales.patch applied: `git apply`, then build `xtask-r`
# and `kvc-r`) against q (HEAD: Q6_K's runs as 16-byte loads) — r's Q6_K tensor-core test, the
# 8B (then the 1B) at 32 / 64 streams (the same ids digests: the same values in the same order)
# — v49's fused norm rows (`GPUPORT_NORM_ROWS=1`, 9% slower in v50 at four tokens a workgroup;
# batched decode's norm is one token a workgroup since v52), the 8B's step at 64 rows profiled
# by kernel (`--batch 64`), the Llama shapes' GEMMs at 32 rows, SmolLM2's 8-row step profiled.
# Most important first: the call may be cut by the session's budget.
set -u
. docs/bench/device.sh
device_setup "xtask-q xtask-r kvc-r" "e l s"
timeout 20 ./.devbin/xtask-r bench --shapes large --tuned --types q4_K --kernel gemv_q8 >/dev/null 2>&1
GPUPORT_KVC_TYPES=q6_K timeout 60 ./.devbin/kvc-r coop_gemm_matches >"$R/kvc-r.txt" 2>&1
echo "kvc r q6_K rc=$? at $(el) s: $(grep -E 'test result|panicked' "$R/kvc-r.txt" | head -3)"; save
par e q 32,64 X=1 -1
par e r 32,64 X=1 -1
par e r 32,64 GPUPORT_NORM_ROWS=1 -n
timeout 60 ./.devbin/xtask-r bench-llm target/m/e.gguf --steps 8 --batch 64 --prompt-tokens 64 \
    --gen-tokens 16 --json "$R/e-batch64.json" >"$R/e-batch64.txt" 2>&1
echo "e batch 64 rc=$? at $(el) s"; grep -A25 "^batch of" "$R/e-batch64.txt" | head -26; save
par e q 32,64 X=1 -2
par e r 32,64 X=1 -2
par l q 32,64 X=1 -1
par l r 32,64 X=1 -1
gt 32 q "" q32 1,4
gt 32 r "" r32 1,4
timeout 30 ./.devbin/xtask-r bench-llm target/m/s.gguf --steps 8 --batch 8 --prompt-tokens 64 \
    --gen-tokens 16 --json "$R/s-batch8.json" >"$R/s-batch8.txt" 2>&1
echo "s batch 8 rc=$? at $(el) s"; grep -A25 "^batch of" "$R/s-batch8.txt" | head -26; save
device_finish
