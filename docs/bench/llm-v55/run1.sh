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
# 2. v54's int8 few-row rule below 32 rows (b's default) against v53's (`OLD`) at 8 streams
#    on the four models, the 8B twice, and one stream of the 8B (issue 15: 8 streams >= 4x).
set -u
. docs/bench/device.sh
device_setup "xtask-b xtask-n kvc-b" "e l s g" ""
timeout 20 ./.devbin/xtask-b bench --shapes large --tuned --types q4_K --kernel gemv_q8 >/dev/null 2>&1
timeout 150 ./.devbin/kvc-b coop_gemm_matches >"$R/kvc-coop.txt" 2>&1
echo "kvc coop rc=$? at $(el) s: $(grep -E 'test result' "$R/kvc-coop.txt")"; save
gs() {
    timeout 60 "./.devbin/xtask-b" bench --gemm-only --tuned --shapes llama --gemm-tokens "$1" \
        --splits 1,2,4 --streams 132,264 --json "$R/g$1.json" >"$R/g$1.txt" 2>&1
    echo "g$1 rc=$? at $(el) s: $(grep -E '^gemm .*tokens.*coop' "$R/g$1.txt" | grep -v best |
        awk '{sub("llama","",$2); s=""; for(i=1;i<=NF;i++) { if($i ~ /^splits=/) s=substr($i,8); if($i ~ /^streamed=/) s="K" substr($i,10) } printf "%s/%s:%s ", $2, s, $10}')"
    save
}
gs 32
gs 64
S1="GPUPORT_COOP_STREAM=132"
S2="GPUPORT_COOP_STREAM=132 GPUPORT_COOP_STREAM_MIN_TILES=128"
for r in 1 2; do
    par e b 32,64 X=1 "-rule$r"
    [ $r = 1 ] && par e n 32,64 X=1 ""
    par e b 32,64 "$S1" "-k132-$r"
    par e b 32,64 "$S2" "-k132g-$r"
done
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
