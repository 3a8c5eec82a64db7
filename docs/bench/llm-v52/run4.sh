#!/usr/bin/env bash
# v52 call 3 (any NVIDIA card): the tensor-core GEMM's test on 1f9955f's build (kvc-g) — Q6_K
# in groups through the tensor-core fetch, every type × tile × split against the CPU, never
# run under its test since the layout changed (v51 ran it end to end only).
set -u
. docs/bench/device.sh
device_setup "kvc-g" "" ""
timeout 280 ./.devbin/kvc-g coop_gemm_matches coop_gemm_norms >"$R/kvc-g-coop.txt" 2>&1
echo "kvc g coop rc=$? at $(el) s: $(grep -E 'test result' "$R/kvc-g-coop.txt")"
grep -E "^test |panicked|GPU .* CPU" "$R/kvc-g-coop.txt" | head -8
device_finish
