#!/usr/bin/env bash
# Written in v53, not run: the 8B's 8-stream step (3.71× one stream; issue 15 asks 4×) runs
# its GEMMs on the int8 few-row kernel at the rule's variant (`ops::q8_rows_rule`), which no
# sweep has checked at 8 rows (v35's, at 32 rows, found the rule's pick far from the best).
# Every few-row variant of the 8B's four projections at 8 rows (and the tensor-core and
# tiled paths beside them), then 8 streams end to end for reference. a = HEAD's build.
set -u
. docs/bench/device.sh
device_setup "xtask-a" "e" ""
timeout 20 ./.devbin/xtask-a bench --shapes large --tuned --types q4_K --kernel gemv_q8 >/dev/null 2>&1
timeout 330 ./.devbin/xtask-a bench --gemm-only --shapes llama8b.attn,llama8b.ffn --gemm-tokens 8 \
    --json "$R/g8-a.json" >"$R/g8-a.txt" 2>&1
echo "g8 sweep rc=$? at $(el) s"
for s in llama8b.attn_qkv llama8b.attn_output llama8b.ffn_gate_up llama8b.ffn_down; do
    echo "$s: $(grep -E "^gemm $s " "$R/g8-a.txt" | grep -v best: | sort -k10 -n | head -4 |
        awk '{p=""; for(i=14;i<=NF;i++) p=p" "$i; printf "%s µs%s; ", $10, p}')"
    grep -E "^gemm $s +best:" "$R/g8-a.txt"
done
save
par e a 1,8 X=1 ""
device_finish
