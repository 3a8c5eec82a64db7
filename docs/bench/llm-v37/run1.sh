#!/usr/bin/env bash
# Device call 1 (v37; ran on an H100, the H200 kind was not lent). v36's queue (docs/bench/h200-llm-v36/run1.sh, which no device ran) and
# the tensor-core GEMM fetching Q4_K and Q6_K weights in runs (CoopTile::runs;
# GPUPORT_COOP_RUNS=0 is v36's step-at-a-time fetch):
# 1. kernel-stats of gemm_coop q4_K and q6_K, f16 input (registers, local memory; RUN 0, 1);
# 2. kvc coop (the run form against the CPU reference, every type), kvc few_row (the norm
#    forms), rowk attention over f32 and f16 caches;
# 3. GEMMs of the Llama shapes at 64 rows, runs against steps, interleaved; at 32 rows the
#    int8 few-row kernel (default) against the tensor cores (GPUPORT_COOP_MIN_Q8_TOKENS=32);
# 4. SmolLM2 at 8/32 streams, norms in the GEMMs against v35's norm dispatch, interleaved;
# 5. Gemma 3 at depth 4k, f32 against f16 caches;
# 6. the 8B and 1B streams beside llama-batched-bench (runs; f16 cache where time is left).
# Build here: cargo build --release -p gpuport-xtask; strip -o .devbin/xtask-t
# target/release/xtask; cargo test --release -p gpuport-runtime --test row_kernels --no-run and
# --test kernels_vs_cpu --no-run, strip -o .devbin/rowk and .devbin/kvc those binaries; xz -T2
# the three. Carry .gl and .devbin (with the skeletons, gguf_rebuild.py, build_llama_cpp.sh,
# llama-src.tar.xz from ../shared/tools).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
(bash .devbin/build_llama_cpp.sh $PWD/.devbin/llama-src.tar.xz /tmp/lc > $R/llama-build.txt 2>&1) &
B=$!
xz -d .devbin/xtask-t.xz .devbin/rowk.xz .devbin/kvc.xz; chmod +x .devbin/xtask-t .devbin/rowk .devbin/kvc
X=./.devbin/xtask-t
(cd .devbin && for m in s:smollm2-135m-q4_1 g:gemma-3-270m-q4_k_m l:llama1b-q4_k_m e:llama8b-q4_k_m; do
  python3 gguf_rebuild.py ${m#*:}.skel /tmp/${m%%:*}.gguf >/dev/null; done) &
G=$!
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
save() { (cd $OUT && tar czf r.tgz r); }
for ty in q4_K q6_K; do timeout 60 $X kernel-stats --filter gemm_coop,$ty,XH=1 > $R/ks-$ty.txt 2>&1; echo "ks $ty rc=$? at $(el) s"; grep -o "^gemm_coop[^ ]*\|Register Count=[0-9]*\|Local Memory Size=[0-9]*" $R/ks-$ty.txt | paste -sd' ' | sed 's/ gemm_coop/\ngemm_coop/g'; done
save
timeout 120 ./.devbin/kvc coop > $R/kvc-coop.txt 2>&1; echo "kvc coop rc=$? at $(el) s"; grep "test result\|panicked" $R/kvc-coop.txt | head -3
timeout 90 ./.devbin/kvc few_row > $R/kvc-few.txt 2>&1; echo "kvc few_row rc=$? at $(el) s"; grep "test result\|panicked" $R/kvc-few.txt | head -2
for t in decode_attention prefill_attention row_table_attention; do
  timeout 60 ./.devbin/rowk $t > $R/rowk-$t.txt 2>&1; echo "rowk $t rc=$? at $(el) s"; grep "test result\|panicked" $R/rowk-$t.txt | head -2
done
save
gm() { timeout 60 env $3 $X bench --gemm-only --tuned --shapes llama --gemm-tokens $2 --json $R/t$2-$1.json > $R/t$2-$1.txt 2>&1; echo "t$2 $1 rc=$? at $(el) s: $(grep -v best $R/t$2-$1.txt | grep -o '[0-9.]* µs' | awk '{print $1}' | paste -sd' ')"; save; }
gm runs 64 ""; gm steps 64 "GPUPORT_COOP_RUNS=0"; gm runs2 64 ""; gm steps2 64 "GPUPORT_COOP_RUNS=0"
gm q8 32 ""; gm coop 32 "GPUPORT_COOP_MIN_Q8_TOKENS=32"
wait $G
norm() { timeout 60 env GPUPORT_GEMM_NORM=$2 $X bench-llm /tmp/s.gguf --steps 8 --parallel 8,32 --prompt-tokens 128 --gen-tokens 128 --json $R/s-norm$2-$1.json > $R/s-norm$2-$1.txt 2>&1; echo "s norm=$2 $1 rc=$? at $(el) s"; grep "S_TG" $R/s-norm$2-$1.txt; save; }
for r in 1 2; do norm $r 1; norm $r 0; done
deep() { timeout 90 env GPUPORT_KV_TYPE=$2 $X bench-llm /tmp/g.gguf --steps 8 --prompt-tokens $1 --gen-tokens 128 --json $R/g-$1-$2-$3.json > $R/g-$1-$2-$3.txt 2>&1; echo "g depth $1 $2 $3 rc=$? at $(el) s: $(grep -A1 'steps/submit' $R/g-$1-$2-$3.txt | tail -1)"; save; }
for kv in f32 f16; do deep 4096 $kv 1; done
while kill -0 $B 2>/dev/null && [ $(el) -lt 380 ]; do sleep 2; done
echo "llama built at $(el) s"; tail -1 $R/llama-build.txt
par() { timeout 80 env $3 $X bench-llm /tmp/$1.gguf --steps 8 --parallel 8,32,64 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-par-$2.json > $R/$1-par-$2.txt 2>&1; echo "$1 par $2 rc=$? at $(el) s"; grep "S_TG" $R/$1-par-$2.txt; save; }
bb() { timeout 45 /tmp/lc/b/bin/llama-batched-bench -m /tmp/$1.gguf -ngl 99 -fa on -c 20480 -b 2048 -ub 512 -npp 128 -ntg 128 -npl 8,32,64 --output-format jsonl > $R/$1-bb.jsonl 2>$R/$1-bb.err; echo "bb $1 rc=$? at $(el) s"; grep -o '"pl": [0-9]*\|"speed_tg": [0-9.]*' $R/$1-bb.jsonl | tr '\n' ' '; echo; save; }
[ $(el) -lt 440 ] && par e runs ""
[ $(el) -lt 480 ] && bb e
[ $(el) -lt 500 ] && par l runs ""
[ $(el) -lt 540 ] && bb l
[ $(el) -lt 540 ] && par e f16 "GPUPORT_KV_TYPE=f16"
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
