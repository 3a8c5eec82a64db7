#!/usr/bin/env bash
# v48 call 2. n = HEAD's build (the unrolled input-norm pass with GPUPORT_X16_NORM_TOKENS,
# DEPTH 2 branch-free, GPUPORT_COOP_STAGES=1: the tensor-core tiles in one stage), h = 565c428
# (v47's code). (1) Does the 32-token tile of 128 rows in one stage (25 KiB) run two
# workgroups a core? The `bench --matrix` grids of call 1.
# (2) End to end, 32 / 64 streams of the 1B and the 8B: n, n with one token a workgroup in
# the input norm, h; n in one stage where (1) says two workgroups share a core.
set -u
. docs/bench/device.sh
device_setup "xtask-h xtask-n" "e l" ""
timeout 12 ./.devbin/xtask-n bench --gemm-only --tuned --shapes llama --gemm-tokens 32 >/dev/null 2>&1
M=q4_K:8448x4096,q4_K:16896x4096,q4_K:25344x4096,q4_K:33792x4096
timeout 60 env GPUPORT_COOP_STAGES=1 ./.devbin/xtask-n bench --gemm-only --tuned --shapes matrix \
    --matrix "$M" --gemm-tokens 32 --splits 1 --json "$R/w32-s1.json" >"$R/w32-s1.txt" 2>&1
echo "w32 s1 rc=$? at $(el) s: $(grep -E '^gemm matrix.*splits=1 ' "$R/w32-s1.txt" | awk '{printf "%s:%s ", $2, $10}')"
save
# The 8B first (the gap); each later run only while the call has time left.
for v in "X=1 -nt4" "GPUPORT_X16_NORM_TOKENS=1 -nt1" "X=1 -h"; do
    set -- $v
    b=n; [ "$2" = -h ] && b=h
    par e $b 32,64 "$1" "$2"
done
for v in "X=1 -nt4" "GPUPORT_X16_NORM_TOKENS=1 -nt1"; do
    set -- $v
    [ "$(el)" -lt 230 ] && par l n 32,64 "$1" "$2"
done
# One stage end to end only where its 264 workgroups took under 100 µs (two waves: ~128).
s1=$(grep -E '^gemm matrix.q4_K.33792x4096.*splits=1 ' "$R/w32-s1.txt" | head -1 | awk '{print int($10)}')
if [ -n "$s1" ] && [ "$s1" -lt 100 ] && [ "$(el)" -lt 230 ]; then
    par e n 32,64 GPUPORT_COOP_STAGES=1 -s1
fi
device_finish
