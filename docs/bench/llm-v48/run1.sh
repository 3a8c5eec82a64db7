#!/usr/bin/env bash
# v48 call 1 — v47's run4.sh (does a second workgroup of the 48-KiB 32-token tensor-core tile
# share a core?) and the first half of its run5.sh (the staged-input tile a subgroup: its test
# and the Llama shapes' GEMMs) in one call. h = the build of main at 565c428 (`bench --matrix`),
# x / kvc-x = branch exp/coop-sg-staged (390574c + docs/bench/llm-v47/coop-sg-staged.patch).
# The models rebuild in the background for call 2 (run2.sh).
set -u
. docs/bench/device.sh
device_setup "xtask-h xtask-x kvc-x" "e l" ""
M=q4_K:8448x4096,q4_K:16896x4096,q4_K:25344x4096,q4_K:33792x4096
gw() {  # tokens env tag
    timeout 60 env $2 ./.devbin/xtask-h bench --gemm-only --tuned --shapes matrix --matrix "$M" \
        --gemm-tokens "$1" --splits 1 --json "$R/w$1-$3.json" >"$R/w$1-$3.txt" 2>&1
    echo "w$1 $3 rc=$? at $(el) s: $(grep -E '^gemm matrix.*splits=1 ' "$R/w$1-$3.txt" |
        awk '{printf "%s:%s ", $2, $10}')"
    save
}
# Warm-up: >= 2 s of steady GEMMs.
timeout 30 ./.devbin/xtask-h bench --gemm-only --tuned --shapes llama --gemm-tokens 32 >/dev/null 2>&1
for round in 1 2; do
    gw 32 X=1 kc64-$round
    gw 32 GPUPORT_COOP_KC=32 kc32-$round
    gw 64 X=1 kc64-$round
done
grep -m3 -E '^gemm matrix' "$R/w32-kc64-1.txt"
timeout 90 ./.devbin/xtask-h kernel-stats --filter gemm_coop.q4_K --filter XH=1 >"$R/kstats.txt" 2>&1
grep -A1 -E "WM=2.WN=4.KC=(32|64).TF=1.RF=2" "$R/kstats.txt" | grep -oE "KC=[0-9]+|Register Count=[0-9]+|Shared Memory Size=[0-9]+" | paste -sd' '
timeout 60 ./.devbin/xtask-h kernel-stats --filter gemm_coop.q4_K.WM=2.WN=4.KC=64.TF=1.RF=2 \
    --filter XH=1 --out "$R/ir" >"$R/kstats-ir.txt" 2>&1; ls -la "$R/ir" 2>&1 | head
save
timeout 90 ./.devbin/kvc-x coop_sg >"$R/kvc-sg.txt" 2>&1
echo "kvc coop_sg rc=$? at $(el) s"; grep -E "test result|panicked|differs|FAILED" "$R/kvc-sg.txt" | head -5; save
for t in 32 64; do
    gt $t x GPUPORT_COOP_SG=0 wg
    gt $t x GPUPORT_COOP_SG=1 xs1
    gt $t x "GPUPORT_COOP_SG=1 GPUPORT_COOP_SG_XS=0" xs0
done
gt 32 x "GPUPORT_COOP_SG=1 GPUPORT_COOP_SG_WN=8" xs1w8
device_finish
