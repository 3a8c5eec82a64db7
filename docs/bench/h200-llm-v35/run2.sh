#!/usr/bin/env bash
# H200 call 2 (v35): the int8 few-row kernel's default variant from 32 rows, four rows a
# thread at ~20k threads (gemm::Q8_ROWS_RPT, Q8_TARGET_THREADS; the fastest variants of call
# 1's sweep at 32 tokens) against the rule before it (GPUPORT_Q8_ROWS_RPT=2
# GPUPORT_Q8_ROWS_THREADS=131072, still the default below 32 rows), interleaved: `bench
# --gemm-only --tuned --shapes llama` at 32 tokens, and at 8 the new rule forced
# (GPUPORT_Q8_ROWS_RPT=4 GPUPORT_Q8_ROWS_THREADS=20480) against the default; then the 8B/1B
# engines at 8 and 32 streams, default against the old rule. No llama.cpp in this call (the session's device time was
# nearly spent): its figures are call 1's.
# Build here: cargo build --release -p gpuport-xtask; strip -o .devbin/xtask-t
# target/release/xtask; xz -T2 .devbin/xtask-t. Carry .gl and .devbin.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
xz -d .devbin/xtask-t.xz; chmod +x .devbin/xtask-t
X=./.devbin/xtask-t
(cd .devbin && for m in l:llama1b-q4_k_m e:llama8b-q4_k_m; do
  python3 gguf_rebuild.py ${m#*:}.skel /tmp/${m%%:*}.gguf >/dev/null; done) &
G=$!
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
save() { (cd $OUT && tar czf r.tgz r); }
OLD="GPUPORT_Q8_ROWS_RPT=2 GPUPORT_Q8_ROWS_THREADS=131072"
t() { timeout 60 env $3 $X bench --gemm-only --tuned --shapes llama --gemm-tokens $2 --json $R/t$2-$1.json > $R/t$2-$1.txt 2>&1; echo "t$2 $1 rc=$? at $(el) s: $(grep -v best $R/t$2-$1.txt | grep -o '[0-9.]* µs .*int8' | awk '{print $1}' | paste -sd' ')"; save; }
t warm 32 ""; t new 32 ""; t old 32 "$OLD"
t old 8 ""; t new 8 "GPUPORT_Q8_ROWS_RPT=4 GPUPORT_Q8_ROWS_THREADS=20480"
wait $G
par() { timeout 60 env $3 $X bench-llm /tmp/$1.gguf --steps 8 --parallel 8,32 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-par-$2.json > $R/$1-par-$2.txt 2>&1; echo "$1 par $2 rc=$? at $(el) s"; grep "S_TG" $R/$1-par-$2.txt; save; }
for m in e l; do par $m new ""; par $m old "$OLD"; done
for m in e l; do [ $(el) -lt 220 ] && par $m new2 ""; [ $(el) -lt 240 ] && par $m old2 "$OLD"; done
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
