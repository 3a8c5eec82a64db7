#!/usr/bin/env bash
# The next device call (~9 minutes, no llama.cpp: its figures are v38 call 2's on an H100;
# compare only on the same card type). What the v38 profile asked for: 1. registers of the
# batched attention (attn_prefill, attn_combine) and of the tensor-core GEMM (the 32-token tile,
# TF=1, included); 2. kvc coop (every tile — the 32-token ones new — against the CPU); 3. the
# latency-bound kernels alone (`bench --other-kernels`: batched attention at 8 / 64 rows of 192
# keys); 4. GEMMs of the Llama shapes at 32 rows — tensor cores with the 64-token tile and
# with the 32-token one (GPUPORT_COOP_NARROW_TOKENS=1), each beside the int8 few-row kernel,
# interleaved twice; 5. 32 streams: SmolLM2 / Gemma 3 (tensor cores on f32 rows) with and
# without the 32-token tile, the 8B/1B on tensor cores (GPUPORT_COOP_MIN_Q8_TOKENS=32) with
# and without it against their int8 default; 64 streams at split targets 0 / 128 / 256 (the
# default). Build and carry as docs/bench/llm-v38/run1.sh says.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
xz -d .devbin/xtask-t.xz .devbin/kvc.xz; chmod +x .devbin/xtask-t .devbin/kvc
X=./.devbin/xtask-t
(cd .devbin && for m in s:smollm2-135m-q4_1 g:gemma-3-270m-q4_k_m l:llama1b-q4_k_m e:llama8b-q4_k_m; do
  python3 gguf_rebuild.py ${m#*:}.skel /tmp/${m%%:*}.gguf >/dev/null; done) &
G=$!
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
save() { (cd $OUT && tar czf r.tgz r); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for f in attn_prefill attn_combine gemm_coop,q4_K,XH=1; do timeout 40 $X kernel-stats --filter $f > $R/ks-${f%%,*}.txt 2>&1; echo "ks $f rc=$? at $(el) s"; grep -o "^[a-z_]*\.[^ ]*\|Register Count=[0-9]*" $R/ks-${f%%,*}.txt | paste -sd' ' | sed 's/ \([a-z_]*\.\)/\n\1/g' | head -24; done
timeout 90 ./.devbin/kvc coop > $R/kvc-coop.txt 2>&1; echo "kvc coop rc=$? at $(el) s"; grep "test result\|panicked" $R/kvc-coop.txt | head -3
save
timeout 60 $X bench --other-kernels --json $R/other.json > $R/other.txt 2>&1; echo "other kernels rc=$? at $(el) s"; grep "attention rows" $R/other.txt
save
gm() { timeout 40 env $3 $X bench --gemm-only --tuned --shapes llama --gemm-tokens $1 --json $R/t$1-$2.json > $R/t$1-$2.txt 2>&1; echo "t$1 $2 rc=$? at $(el) s: $(grep -v best $R/t$1-$2.txt | grep -o '[0-9.]* µs' | awk '{print $1}' | paste -sd' ')"; save; }
for i in 1 2; do gm 32 base$i ""; gm 32 narrow$i GPUPORT_COOP_NARROW_TOKENS=1; done
wait $G
par() { timeout 60 env $4 $X bench-llm /tmp/$1.gguf --steps 8 --parallel $3 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-par-$2.json > $R/$1-par-$2.txt 2>&1; echo "$1 par $2 rc=$? at $(el) s"; grep "S_TG" $R/$1-par-$2.txt; save; }
for m in s g; do
  par $m base 32 ""; par $m narrow 32 GPUPORT_COOP_NARROW_TOKENS=1
done
for m in e l; do
  par $m base 32,64 ""
  par $m coop32 32 GPUPORT_COOP_MIN_Q8_TOKENS=32
  par $m coop32narrow 32 "GPUPORT_COOP_MIN_Q8_TOKENS=32 GPUPORT_COOP_NARROW_TOKENS=1"
  par $m split0 64 GPUPORT_COOP_SPLIT_TARGET=0
  par $m split128 64 GPUPORT_COOP_SPLIT_TARGET=128
done
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
