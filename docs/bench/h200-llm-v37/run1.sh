#!/usr/bin/env bash
# H200 call 1 (v37): v36's queue (docs/bench/h200-llm-v36/run1.sh, which no device ran), with
# the tensor-core GEMM's kernel-stats first (v33 queued it; no call reached it): registers,
# shared and local memory of its Q4_K and Q6_K variants, then the few-row int8 kernel's.
# 1. kernel-stats; 2. rowk (attention over f32/f16 caches), kvc few_row (the norm forms);
# 3. SmolLM2 at 8/32 streams, norms in the GEMMs against v35's norm dispatch, interleaved;
# 4. Gemma 3 at depth 4k/16k, f32 against f16 caches; 5. the 8B/1B streams f32 against f16
# beside llama-batched-bench; 6. the output projections at 32 rows under both int8 row rules.
# Build and carry as v36's header says (xtask-t.xz, rowk.xz, kvc.xz in .devbin).
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
for f in gemm_coop,q4_K gemm_coop,q6_K gemm_rows_q8,q4_K,NX=8; do n=$(echo $f | tr , -); timeout 60 $X kernel-stats --filter $f --out $R/ks-$n > $R/ks-$n.txt 2>&1; echo "ks $f rc=$? at $(el) s"; head -30 $R/ks-$n.txt; done
save
for t in decode_attention prefill_attention row_table_attention; do
  timeout 60 ./.devbin/rowk $t > $R/rowk-$t.txt 2>&1; echo "rowk $t rc=$? at $(el) s"; grep "test result\|panicked" $R/rowk-$t.txt | head -2
done
timeout 90 ./.devbin/kvc few_row > $R/kvc.txt 2>&1; echo "kvc few_row rc=$? at $(el) s"; grep "test result\|panicked" $R/kvc.txt | head -2
save
wait $G
norm() { timeout 60 env GPUPORT_GEMM_NORM=$2 $X bench-llm /tmp/s.gguf --steps 8 --parallel 8,32 --prompt-tokens 128 --gen-tokens 128 --json $R/s-norm$2-$1.json > $R/s-norm$2-$1.txt 2>&1; echo "s norm=$2 $1 rc=$? at $(el) s"; grep "S_TG" $R/s-norm$2-$1.txt; save; }
for r in 1 2; do norm $r 1; norm $r 0; done
deep() { timeout 90 env GPUPORT_KV_TYPE=$2 $X bench-llm /tmp/g.gguf --steps 8 --prompt-tokens $1 --gen-tokens 128 --json $R/g-$1-$2-$3.json > $R/g-$1-$2-$3.txt 2>&1; echo "g depth $1 $2 $3 rc=$? at $(el) s: $(grep -A1 'steps/submit' $R/g-$1-$2-$3.txt | tail -1)"; save; }
for r in 1 2; do for kv in f32 f16; do deep 4096 $kv $r; done; done
for kv in f32 f16; do [ $(el) -lt 300 ] && deep 16384 $kv 1; done
while kill -0 $B 2>/dev/null && [ $(el) -lt 360 ]; do sleep 2; done
echo "llama built at $(el) s"; tail -1 $R/llama-build.txt
par() { timeout 80 env GPUPORT_KV_TYPE=$2 $X bench-llm /tmp/$1.gguf --steps 8 --parallel 8,32,64 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-par-$2.json > $R/$1-par-$2.txt 2>&1; echo "$1 par $2 rc=$? at $(el) s"; grep "S_TG" $R/$1-par-$2.txt; save; }
bb() { timeout 45 /tmp/lc/b/bin/llama-batched-bench -m /tmp/$1.gguf -ngl 99 -fa on -c 20480 -b 2048 -ub 512 -npp 128 -ntg 128 -npl 8,32,64 --output-format jsonl > $R/$1-bb.jsonl 2>$R/$1-bb.err; echo "bb $1 rc=$? at $(el) s"; grep -o '"pl": [0-9]*\|"speed_tg": [0-9.]*' $R/$1-bb.jsonl | tr '\n' ' '; echo; save; }
bb s
for m in e l; do [ $(el) -lt 480 ] && par $m f32; [ $(el) -lt 500 ] && par $m f16; [ $(el) -lt 540 ] && bb $m; done
OLD="GPUPORT_Q8_ROWS_RPT=2 GPUPORT_Q8_ROWS_THREADS=131072"
t() { timeout 30 env $3 $X bench --gemm-only --tuned --shapes llama1b.lm_head,llama8b.lm_head --gemm-tokens 32 --json $R/lm-$1.json > $R/lm-$1.txt 2>&1; echo "lm $1 rc=$? at $(el) s: $(grep -o '[0-9.]* µs' $R/lm-$1.txt | paste -sd' ')"; save; }
[ $(el) -lt 560 ] && { t new 32 ""; t old 32 "$OLD"; }
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
