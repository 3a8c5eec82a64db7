#!/usr/bin/env bash
# v51 call 2 (H200, the machine of call 1 if still warm: models and llama.cpp kept) — issue 15's
# table: bench-llm at 1, 8, 32 and 64 streams (128-token prompts, 128 tokens each) beside
# `llama-batched-bench -fa on -npp 128 -ntg 128 -npl 1,8,32,64`, the four models, g = HEAD (Q6_K in groups).
# Then, as time allows, v50's run3.sh grids on this card: the 128-row tiles in chunks of 32 in
# one stage with two staging blocks (14.5 KiB) or eight (20.5 KiB) against the engine's, over
# 132-528 workgroups, and the Llama GEMMs at 32 rows on each.
set -u
. docs/bench/device.sh
device_setup "xtask-g" "s g l e" llama
timeout 20 ./.devbin/xtask-g bench --shapes large --tuned --types q4_K --kernel gemv_q8 >/dev/null 2>&1
wait_llama 300
for m in s g l e; do par $m g 1,8,32,64 X=1 -1; bb $m; done
G=q4_K:16896x4096,q4_K:33792x4096,q4_K:50688x4096,q4_K:67584x4096
ONE="GPUPORT_COOP_KC=32 GPUPORT_COOP_ONE_INPUT=1 GPUPORT_COOP_STAGES=1"
declare -A ENVS=([s2]=X=1 [one2s1]="$ONE GPUPORT_COOP_SLOTS=2" [one8s1]="$ONE")
for tag in s2 one2s1 one8s1; do [ "$(el)" -lt 470 ] && gw 32 g "${ENVS[$tag]}" $tag "$G"; done
for tag in s2 one2s1 one8s1; do [ "$(el)" -lt 520 ] && gt 32 g "${ENVS[$tag]}" $tag 1,2,4; done
device_finish
