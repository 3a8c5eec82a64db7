#!/usr/bin/env bash
# Written in v55, not run: issue 15's table in one call beside `llama-batched-bench` (every
# model at 1 / 8 / 32 / 64 streams: v55 moved the 8B's 8 and 64 streams), and while
# llama.cpp builds two A/Bs from v55's queue (docs/design/next-kernels.md): the row-table
# attention unsplit at 8 rows (`GPUPORT_ROW_SPLIT_WORKGROUPS=8`: SmolLM2's 24 and Gemma 3's
# 8 (KV head, row) pairs one workgroup each, no combining pass) and batched decode's
# tensor-core splits aimed at one wave of 132 cores by each tile's residency
# (`GPUPORT_COOP_SPLIT_WAVE=132`: two splits for the 8B's and the 1B's q|k|v and the 8B's
# attention output, which v55's GEMM table favours at 32 rows; the Q6_K down projections keep
# theirs) on the 8B and the 1B at 32 / 64 streams. b = HEAD's build (`xtask-b`).
set -u
. docs/bench/device.sh
device_setup "xtask-b" "s g l e" llama
timeout 20 ./.devbin/xtask-b bench --shapes large --tuned --types q4_K --kernel gemv_q8 >/dev/null 2>&1
U="GPUPORT_ROW_SPLIT_WORKGROUPS=8"
for m in s g; do
    par $m b 8 X=1 -t8
    par $m b 8 "$U" -u8
done
par e b 32,64 X=1 -t
par e b 32,64 GPUPORT_COOP_SPLIT_WAVE=132 -w132
par l b 32,64 X=1 -t
par l b 32,64 GPUPORT_COOP_SPLIT_WAVE=132 -w132
for m in s g; do
    [ "$(el)" -lt 200 ] || break
    par $m b 8 "$U" -u8b
    par $m b 8 X=1 -t8b
done
wait_llama 330
for m in s g l e; do par $m b 1,8,32,64 X=1 ""; bb $m; done
device_finish
