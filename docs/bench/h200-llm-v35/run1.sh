#!/usr/bin/env bash
# H200 call 1 (v35): v34's run (docs/bench/h200-llm-v34/run.sh, never run: no device was lent)
# reordered so the end-to-end streams come before the long sweeps, plus the fold A/B:
# 1. kernel-stats of gemm_tiles_q8 (registers, local memory: spills would show here);
# 2. `bench --gemm-only --tuned --shapes llama` at 64 and 32 tokens, interleaved: the forward's
#    path by default (few-row int8 below 64 rows, tensor cores at 64) against
#    GPUPORT_Q8_TILES_MIN_TOKENS=8 GPUPORT_COOP_MIN_Q8_TOKENS=65 (int8 rows on the tiled kernel
#    up to 64);
# 3. the full sweep at 32 tokens (the tiled kernel's RPT 1/2/4, token groups, splits) while
#    llama.cpp builds;
# 4. the engine's streams (`--parallel 8,32,64 --prompt-tokens 128 --gen-tokens 128`; `--batch
#    8,32,64` for a batched step's per-kernel profile) on the
#    1B/8B shapes with and without those knobs, beside llama-batched-bench;
# 5. Gemma 3 decode with the attention combine folded into the output projection past 16 key
#    blocks (GPUPORT_FOLD_MAX_BLOCKS=64) against the default, interleaved.
# Build here: cargo build --release -p gpuport-xtask; strip -o .devbin/xtask-t
# target/release/xtask; xz -T2 .devbin/xtask-t. Carry .gl and .devbin (xtask-t.xz; skeletons,
# gguf_rebuild.py, build_llama_cpp.sh, llama-src.tar.xz).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
(bash .devbin/build_llama_cpp.sh $PWD/.devbin/llama-src.tar.xz /tmp/lc > $R/llama-build.txt 2>&1) &
B=$!
xz -d .devbin/xtask-t.xz; chmod +x .devbin/xtask-t
X=./.devbin/xtask-t
(cd .devbin && for m in l:llama1b-q4_k_m e:llama8b-q4_k_m g:gemma-3-270m-q4_k_m; do
  python3 gguf_rebuild.py ${m#*:}.skel /tmp/${m%%:*}.gguf >/dev/null; done) &
G=$!
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
save() { (cd $OUT && tar czf r.tgz r); }
timeout 60 $X kernel-stats --filter gemm_tiles_q8,q4_K --out $R/ks > $R/ks.txt 2>&1; echo "ks rc=$? at $(el) s"; grep -A1 "RPT=4.NX=8" $R/ks.txt | head -6
save
TK="GPUPORT_Q8_TILES_MIN_TOKENS=8 GPUPORT_COOP_MIN_Q8_TOKENS=65"
t() { timeout 60 env $3 $X bench --gemm-only --tuned --shapes llama --gemm-tokens $2 --json $R/t$2-$1.json > $R/t$2-$1.txt 2>&1; echo "t$2 $1 rc=$? at $(el) s: $(grep -o '[0-9.]* µs' $R/t$2-$1.txt | paste -sd' ')"; save; }
t warm 64 ""; t base 64 ""; t tiles 64 "$TK"; t base2 64 ""; t tiles2 64 "$TK"
t base 32 ""; t tiles 32 "$TK"
timeout $(( 300 - $(el) > 30 ? 300 - $(el) : 30 )) $X bench --gemm-only --shapes llama --gemm-tokens 32 --json $R/g32.json > $R/g32.txt 2>&1; echo "g32 rc=$? at $(el) s"; grep best $R/g32.txt; save
wait $G
while kill -0 $B 2>/dev/null && [ $(el) -lt 330 ]; do sleep 2; done
echo "llama built at $(el) s"; tail -1 $R/llama-build.txt
par() { timeout 80 env $3 $X bench-llm /tmp/$1.gguf --steps 8 --parallel 8,32,64 --batch 8,32,64 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-par-$2.json > $R/$1-par-$2.txt 2>&1; echo "$1 par $2 rc=$? at $(el) s"; grep "S_TG\|one step" $R/$1-par-$2.txt; save; }
bb() { timeout 45 /tmp/lc/b/bin/llama-batched-bench -m /tmp/$1.gguf -ngl 99 -fa on -c 20480 -b 2048 -ub 512 -npp 128 -ntg 128 -npl 8,32,64 --output-format jsonl > $R/$1-bb.jsonl 2>$R/$1-bb.err; echo "bb $1 rc=$? at $(el) s"; grep -o '"pl": [0-9]*\|"speed_tg": [0-9.]*' $R/$1-bb.jsonl | tr '\n' ' '; echo; save; }
for m in e l; do par $m base ""; par $m tiles "$TK"; [ $(el) -lt 500 ] && bb $m; done
one() { timeout 25 env $2 $X bench-llm /tmp/g.gguf --steps 8 --json $R/g-one-$1.json > $R/g-one-$1.txt 2>&1; echo "g one $1 rc=$? at $(el) s: $(grep -A1 'steps/submit' $R/g-one-$1.txt | tail -1)"; save; }
for r in 1 2; do [ $(el) -lt 540 ] && one base$r ""; [ $(el) -lt 560 ] && one fold$r GPUPORT_FOLD_MAX_BLOCKS=64; done
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
