#!/usr/bin/env bash
# v55 call (any NVIDIA card, ~590 s). b = HEAD's build (`xtask-b`, `kvc-b`), n = ca601ef's
# (v54's head, before the tensor-core kernel's tile loop became a function): carry all three.
# 1. Streamed tensor-core GEMMs (stream-K, `GPUPORT_COOP_STREAM`): `kvc coop_gemm_matches`
#    holds them to the CPU (3, 7 and 13 workgroups on every type's tiles) while the models
#    rebuild; the Llama shapes at 32 and 64 rows on the engine's path, split 1/2/4 and
#    streamed by 132 and 264 workgroups; the 8B at 32 / 64 streams end to end as the rule
#    runs it, streamed by 132 everywhere, and streamed only where the grid runs unsplit
#    (`GPUPORT_COOP_STREAM_MIN_TILES=128`: the gate|up projections), two interleaved rounds;
#    n beside b's rule in the first (the same grids: what the refactor alone moves).
#    Q6_K in chunks of 64 columns (neighbouring sub-blocks, `GPUPORT_COOP_Q6_PAIRS=1`): the
#    Q6_K shapes at 32 and 64 rows, and end to end with and without the stream.
# 2. v54's int8 few-row rule below 32 rows (b's default) against v53's (`OLD`) at 8 streams
#    on the four models, the 8B twice, and one stream of the 8B (issue 15: 8 streams >= 4x).
set -u
. docs/bench/device.sh
device_setup "xtask-b xtask-n kvc-b" "e l s g" ""
timeout 20 ./.devbin/xtask-b bench --shapes large --tuned --types q4_K --kernel gemv_q8 >/dev/null 2>&1
timeout 170 ./.devbin/kvc-b coop_gemm_matches >"$R/kvc-coop.txt" 2>&1
echo "kvc coop rc=$? at $(el) s: $(grep -E 'test result' "$R/kvc-coop.txt")"; save
gs() {
    timeout 60 env $3 "./.devbin/xtask-b" bench --gemm-only --tuned --shapes llama --gemm-tokens "$1" \
        --splits 1,2,4 --streams 132,264 $4 --json "$R/g$1$2.json" >"$R/g$1$2.txt" 2>&1
    echo "g$1$2 rc=$? at $(el) s: $(grep -E '^gemm .*tokens.*coop' "$R/g$1$2.txt" | grep -v best |
        awk '{sub("llama","",$2); s=""; for(i=1;i<=NF;i++) { if($i ~ /^splits=/) s=substr($i,8); if($i ~ /^streamed=/) s="K" substr($i,10); if($i ~ /^KC=/) k=substr($i,4) } printf "%s/%s/%s:%s ", $2, k, s, $10}')"
    save
}
gs 32 "" X=1 ""
gs 64 "" X=1 ""
gs 32 -q6p GPUPORT_COOP_Q6_PAIRS=1 "--types q6_K"
gs 64 -q6p GPUPORT_COOP_Q6_PAIRS=1 "--types q6_K"
S1="GPUPORT_COOP_STREAM=132"
S2="GPUPORT_COOP_STREAM=132 GPUPORT_COOP_STREAM_MIN_TILES=128"
P="GPUPORT_COOP_Q6_PAIRS=1"
par e b 32,64 X=1 -rule1
par e n 32,64 X=1 ""
par e b 32,64 "$S1" -k132-1
par e b 32,64 "$S2" -k132g-1
par e b 32,64 "$P" -q6p-1
par e b 32,64 "$S1 $P" -k132q6p-1
par e b 32,64 X=1 -rule2
OLD="GPUPORT_Q8_ROWS_RPT=2 GPUPORT_Q8_ROWS_THREADS=131072"
par e b 1,8 X=1 -new8
par e b 8 "$OLD" -old8
for m in l s g; do
    [ "$(el)" -lt 560 ] || break
    par $m b 8 X=1 -new8
    par $m b 8 "$OLD" -old8
done
[ "$(el)" -lt 570 ] && par e b 8 X=1 -new8b
device_finish
