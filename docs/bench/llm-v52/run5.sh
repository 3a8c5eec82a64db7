#!/usr/bin/env bash
# v52 call 4 (any NVIDIA card, short): does the input norm's one token a workgroup pay for
# prompts too? g = 1f9955f's build (four tokens a workgroup at every row count unless the
# knob says): bench-llm's 512-token prompt of the 1B and 8B, GPUPORT_X16_NORM_TOKENS=1
# against 4, two interleaved rounds.
set -u
. docs/bench/device.sh
device_setup "xtask-g" "l e" ""
timeout 20 ./.devbin/xtask-g bench --shapes large --tuned --types q4_K --kernel gemv_q8 >/dev/null 2>&1
for m in l e; do
    wait_model $m
    for r in 1 2; do
        for nt in 1 4; do
            out="$R/$m-pre-nt$nt-$r"
            timeout 60 env GPUPORT_X16_NORM_TOKENS=$nt ./.devbin/xtask-g bench-llm "target/m/$m.gguf" --steps 8 \
                --prompt-tokens 512 --gen-tokens 32 --json "$out.json" >"$out.txt" 2>&1
            echo "$m nt$nt r$r rc=$? at $(el) s: $(grep -E '^prefill' "$out.txt")"
            save
        done
    done
done
device_finish
