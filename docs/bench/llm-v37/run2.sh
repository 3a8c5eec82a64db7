#!/usr/bin/env bash
# Device call 2 (v37). The tensor-core GEMM's weights two chunks ahead (CoopFetch::RunsAhead,
# GPUPORT_COOP_FETCH=2, the new default) against runs one chunk ahead (1, call 1's) and a step
# at a time (0, v36's); the f16 cache's rounding fix on NVIDIA; then all four models' streams
# beside llama-batched-bench in one call (issue 15's table), and Gemma 3 at depth 16k.
# 1. kernel-stats (q4_K, q6_K, f16 input; every fetch); 2. kvc coop (every type and fetch
# against the CPU), rowk decode_attention (f16 edge values); 3. GEMMs of the Llama shapes at
# 64 rows, fetch 2/1/0, and at 32 rows; 4. the 8B/1B streams (fetch 2 and,
# for the 8B, fetch 1) and SmolLM2/Gemma 3 beside llama-batched-bench, the 8B/1B's 32 streams
# on tensor cores (GPUPORT_COOP_MIN_Q8_TOKENS=32); 5. Gemma 3 after
# 16,384 prompt tokens, f32 against f16 caches.
# Build and carry as run1.sh says.
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
for ty in q4_K q6_K; do timeout 60 $X kernel-stats --filter gemm_coop,$ty,XH=1 > $R/ks-$ty.txt 2>&1; echo "ks $ty rc=$? at $(el) s"; grep -o "^gemm_coop[^ ]*\|Register Count=[0-9]*" $R/ks-$ty.txt | paste -sd' ' | sed 's/ gemm_coop/\ngemm_coop/g'; done
timeout 120 ./.devbin/kvc coop > $R/kvc-coop.txt 2>&1; echo "kvc coop rc=$? at $(el) s"; grep "test result\|panicked" $R/kvc-coop.txt | head -3
timeout 60 ./.devbin/rowk decode_attention > $R/rowk-decode.txt 2>&1; echo "rowk decode rc=$? at $(el) s"; grep "test result\|panicked" $R/rowk-decode.txt | head -2
save
gm() { timeout 60 env GPUPORT_COOP_FETCH=$3 $X bench --gemm-only --tuned --shapes llama --gemm-tokens $2 --json $R/t$2-f$3-$1.json > $R/t$2-f$3-$1.txt 2>&1; echo "t$2 fetch $3 $1 rc=$? at $(el) s: $(grep -v best $R/t$2-f$3-$1.txt | grep -o '[0-9.]* µs' | awk '{print $1}' | paste -sd' ')"; save; }
gm 1 64 2; gm 1 64 1; gm 1 64 0
gm 1 32 2
wait $G
deep() { timeout 60 env GPUPORT_KV_TYPE=$2 $X bench-llm /tmp/g.gguf --steps 8 --prompt-tokens $1 --gen-tokens 128 --json $R/g-$1-$2.json > $R/g-$1-$2.txt 2>&1; echo "g depth $1 $2 rc=$? at $(el) s: $(grep -A1 'steps/submit' $R/g-$1-$2.txt | tail -1)"; save; }
for kv in f32 f16; do [ $(el) -lt 230 ] && deep 16384 $kv; done
while kill -0 $B 2>/dev/null && [ $(el) -lt 300 ]; do sleep 2; done
echo "llama built at $(el) s"; tail -1 $R/llama-build.txt
par() { timeout 80 env $3 $X bench-llm /tmp/$1.gguf --steps 8 --parallel 1,8,32,64 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-par-$2.json > $R/$1-par-$2.txt 2>&1; echo "$1 par $2 rc=$? at $(el) s"; grep "S_TG" $R/$1-par-$2.txt; save; }
bb() { timeout 45 /tmp/lc/b/bin/llama-batched-bench -m /tmp/$1.gguf -ngl 99 -fa on -c 20480 -b 2048 -ub 512 -npp 128 -ntg 128 -npl 1,8,32,64 --output-format jsonl > $R/$1-bb.jsonl 2>$R/$1-bb.err; echo "bb $1 rc=$? at $(el) s"; grep -o '"pl": [0-9]*\|"speed_tg": [0-9.]*' $R/$1-bb.jsonl | tr '\n' ' '; echo; save; }
p32() { timeout 40 env GPUPORT_COOP_MIN_Q8_TOKENS=32 $X bench-llm /tmp/$1.gguf --steps 8 --parallel 32 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-p32-coop.json > $R/$1-p32-coop.txt 2>&1; echo "$1 32 streams on tensor cores rc=$? at $(el) s"; grep "S_TG" $R/$1-p32-coop.txt; save; }
par e f2 ""; bb e
[ $(el) -lt 350 ] && { par l f2 ""; bb l; }
[ $(el) -lt 360 ] && p32 e
[ $(el) -lt 370 ] && p32 l
[ $(el) -lt 320 ] && { par s f2 ""; bb s; }
[ $(el) -lt 340 ] && { par g f2 ""; bb g; }
[ $(el) -lt 340 ] && par e f1 "GPUPORT_COOP_FETCH=1"
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
