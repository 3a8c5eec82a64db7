#!/usr/bin/env bash
# v56 call 1 (any NVIDIA card): Q6_K's tensor-core runs as 16-byte loads (q = 2e51d7d) against
# HEAD before it (b = aadd1ec). While llama.cpp builds: q's tensor-core test on the two run
# types (`GPUPORT_KVC_TYPES=q6_K,q4_K kvc coop_gemm_matches`), the Llama shapes' GEMMs at 32
# rows on b and q, then the 8B and the 1B at 32 / 64 streams on b and q (ids digests must be
# equal: the same values in the same order), q with the split waves of v55
# (`GPUPORT_COOP_SPLIT_WAVE=132`), and v55's unsplit row attention at 8 rows on SmolLM2 and
# Gemma 3 (`GPUPORT_ROW_SPLIT_WORKGROUPS=8`). run3.sh on the warm machine: issue 15's table.
set -u
. docs/bench/device.sh
device_setup "xtask-b xtask-q kvc-q" "e l s g" llama
timeout 20 ./.devbin/xtask-q bench --shapes large --tuned --types q4_K --kernel gemv_q8 >/dev/null 2>&1
GPUPORT_KVC_TYPES=q6_K,q4_K timeout 150 ./.devbin/kvc-q coop_gemm_matches >"$R/kvc-q.txt" 2>&1
echo "kvc q rc=$? at $(el) s: $(grep -E 'test result|panicked' "$R/kvc-q.txt" | head -3)"; save
gt 32 b "" b32 1,2,4
gt 32 q "" q32 1,2,4
par e b 32,64 X=1 -1
par e q 32,64 X=1 -1
par e q 32,64 GPUPORT_COOP_SPLIT_WAVE=132 -w
par l b 32,64 X=1 -1
par l q 32,64 X=1 -1
par l q 32,64 GPUPORT_COOP_SPLIT_WAVE=132 -w
U="GPUPORT_ROW_SPLIT_WORKGROUPS=8"
for m in s g; do
    [ "$(el)" -lt 470 ] || break
    par $m q 8 X=1 -t8
    par $m q 8 "$U" -u8
done
[ "$(el)" -lt 500 ] && par e b 32,64 X=1 -2
[ "$(el)" -lt 540 ] && par e q 32,64 X=1 -2
wait_llama 560
device_finish
