#!/usr/bin/env bash
# v39 call 1 (under 600 s; no llama.cpp: compare only within this call). 1. registers of the
# batched attention (attn_prefill, attn_combine) and of the tensor-core GEMM; 2. kvc coop
# (every tile, the 32-token ones and both decodes — conversions and through the bits — against
# the CPU and bit for bit against each other); 3. GEMMs of the Llama shapes at 64 and 32 rows,
# the decode through the bits (GPUPORT_COOP_DECODE=1) against conversions, and at 32 rows the
# 32-token tile (GPUPORT_COOP_NARROW_TOKENS=1), interleaved twice; 4. the batched attention
# alone (`bench --other-kernels`). run2.sh follows on the warm machine (streams).
# Build and carry: `cargo build --release -p gpuport-xtask; cargo test --release -p
# gpuport-runtime --test row_kernels --test kernels_vs_cpu --no-run`, stripped into .devbin
# (xtask-t, kvc, rowk) and xz'd; .gl holds the Vulkan loader debs.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
xz -dk .devbin/xtask-t.xz .devbin/kvc.xz; chmod +x .devbin/xtask-t .devbin/kvc
X=./.devbin/xtask-t
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
save() { (cd $OUT && tar czf r.tgz r); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for f in attn_prefill attn_combine gemm_coop,q4_K,XH=1; do timeout 40 $X kernel-stats --filter $f > $R/ks-${f%%,*}.txt 2>&1; echo "ks $f rc=$? at $(el) s"; grep -o "^[a-z_]*\.[^ ]*\|Register Count=[0-9]*" $R/ks-${f%%,*}.txt | paste -sd' ' | sed 's/ \([a-z_]*\.\)/\n\1/g' | head -12; done
timeout 120 ./.devbin/kvc coop > $R/kvc-coop.txt 2>&1; echo "kvc coop rc=$? at $(el) s"; grep "test result\|panicked" $R/kvc-coop.txt | head -3
save
gm() { timeout 45 env $3 $X bench --gemm-only --tuned --shapes llama --gemm-tokens $1 --json $R/t$1-$2.json > $R/t$1-$2.txt 2>&1; echo "t$1 $2 rc=$? at $(el) s: $(grep -v best $R/t$1-$2.txt | grep -o '[0-9.]* µs' | awk '{print $1}' | paste -sd' ')"; save; }
for i in 1 2; do
  gm 64 conv$i ""; gm 64 bits$i GPUPORT_COOP_DECODE=1
  gm 32 conv$i ""; gm 32 bits$i GPUPORT_COOP_DECODE=1
  gm 32 narrow$i GPUPORT_COOP_NARROW_TOKENS=1; gm 32 narrowbits$i "GPUPORT_COOP_NARROW_TOKENS=1 GPUPORT_COOP_DECODE=1"
done
timeout 60 $X bench --other-kernels --json $R/other.json > $R/other.txt 2>&1; echo "other kernels rc=$? at $(el) s"; grep "attention rows" $R/other.txt
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
