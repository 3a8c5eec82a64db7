#!/usr/bin/env bash
# v53 call 2 (H100, a fresh machine; n = 4da72e8's build): (1) the machine code of the
# tensor-core GEMM — the 8B's shapes at 32 rows compiled into a fresh pipeline cache and the
# driver's shader cache, ELF objects carved out of both and disassembled (carve_sass.py);
# (2) the 8B at 32 / 64 streams, two interleaved rounds: the default, the next norm's rows in
# the split sum (GPUPORT_NORM_ROWS=1, measured slower in v50 at four tokens a workgroup; now
# one), and the row-table attention's split target at 256 / 2,048 workgroups (1,024 default);
# (3) 8 streams of the 8B on tensor cores from 8 rows against the int8 few-row kernel.
set -u
. docs/bench/device.sh
device_setup "xtask-n" "e" ""
timeout 20 ./.devbin/xtask-n bench --shapes large --tuned --types q4_K --kernel gemv_q8 >/dev/null 2>&1
rm -rf target/pc target/glc target/sass
mkdir -p target/pc target/glc
__GL_SHADER_DISK_CACHE=1 __GL_SHADER_DISK_CACHE_PATH=$PWD/target/glc __GL_SHADER_DISK_CACHE_SKIP_CLEANUP=1 \
    GPUPORT_PIPELINE_CACHE=$PWD/target/pc timeout 60 ./.devbin/xtask-n bench --gemm-only --tuned \
    --shapes llama8b --gemm-tokens 32 >"$R/g32-sass.txt" 2>&1
echo "g32 (for the caches) rc=$? at $(el) s"
ls -laR target/pc target/glc >"$R/caches.txt" 2>&1
timeout 120 python3 docs/bench/llm-v53/carve_sass.py target/sass target/pc target/glc "$HOME/.cache/nvidia" \
    >"$R/carve.txt" 2>&1
echo "carve rc=$? at $(el) s"; grep -v '^ *elf.* 0 instructions' "$R/carve.txt" | cut -c1-400 | head -40
n=0
for f in target/sass/*.sass; do
    [ -e "$f" ] || continue
    grep -q HMMA "$f" && [ $n -lt 12 ] && { cp "$f" "$R/"; n=$((n + 1)); }
done
echo "kept $n disassemblies with HMMA"; save
for r in 1 2; do
    par e n 32,64 X=1 -base-$r
    par e n 32,64 GPUPORT_NORM_ROWS=1 -nr-$r
    par e n 32,64 GPUPORT_ROW_SPLIT_WORKGROUPS=256 -rs256-$r
    par e n 32,64 GPUPORT_ROW_SPLIT_WORKGROUPS=2048 -rs2048-$r
done
for r in 1 2; do
    [ "$(el)" -lt 500 ] || break
    par e n 8 X=1 -b8-$r
    par e n 8 "GPUPORT_COOP_MIN_TOKENS=8 GPUPORT_COOP_MIN_Q8_TOKENS=8" -c8-$r
done
device_finish
