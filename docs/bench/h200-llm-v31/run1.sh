#!/usr/bin/env bash
# H200 call 1 (v31): the GEMVs with whole unrolled iterations unguarded and rows past the
# matrix clamped ("new", 1e7631c + the gemv.wgsl/gemv_q8.wgsl loop change) beside v30's head
# (1e7631c, "base"): the GEMV tests, the per-type GEMV table at 256 MB at the tuned variants
# (base/new interleaved), every int8 variant at 256 MB per type (--exhaustive), the f16
# float sweep, decode A/B on the 1B/8B shapes, then beside llama.cpp CUDA built in the same
# call: bench-llm F --steps 8 --prompt-tokens 512 --gen-tokens 128 and llama-bench -p 512
# -n 128 -fa 1 for all four models.
# Carry .gl and .devbin (xtask-base, xtask-new, kvc as .xz; skeletons, gguf_rebuild.py,
# build_llama_cpp.sh, llama-src.tar.xz).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
(bash .devbin/build_llama_cpp.sh $PWD/.devbin/llama-src.tar.xz /tmp/lc > $R/llama-build.txt 2>&1) &
B=$!
for b in .devbin/*.xz; do [ "$b" = .devbin/llama-src.tar.xz ] || xz -d "$b"; done; chmod +x .devbin/xtask-* .devbin/kvc
(cd .devbin && for m in l:llama1b-q4_k_m e:llama8b-q4_k_m s:smollm2-135m-q4_1 g:gemma-3-270m-q4_k_m; do
  python3 gguf_rebuild.py ${m#*:}.skel /tmp/${m%%:*}.gguf >/dev/null; done) &
G=$!
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
save() { (cd $OUT && tar czf r.tgz r); }
timeout 90 ./.devbin/kvc gemv q8_round > $R/kvc.txt 2>&1; echo "kvc rc=$? at $(el) s"; grep "test result\|panicked" $R/kvc.txt | head -3
tuned() { timeout 60 ./.devbin/xtask-$1 bench --shapes large --tuned --json $R/tuned-$1-$2.json > $R/tuned-$1-$2.txt 2>&1; echo "tuned $1 $2 rc=$? at $(el) s"; grep "large" $R/tuned-$1-$2.txt | awk '{print $2, $3, $8}' | paste -sd' '; }
tuned base 1; tuned new 1; tuned new 2; tuned base 2; save
for t in q4_K q6_K q4_0 q5_0 q8_0 q5_K q4_1 q5_1; do [ $(el) -lt 260 ] || break
  timeout 40 ./.devbin/xtask-new bench --shapes large --types $t --kernel gemv_q8 --exhaustive --json $R/sweep-$t.json > $R/sweep-$t.txt 2>&1; echo "sweep $t rc=$? at $(el) s"; grep "large" $R/sweep-$t.txt | head -2
done; save
timeout 60 ./.devbin/xtask-new bench --shapes large --types f16 --kernel gemv --json $R/sweep-f16.json > $R/sweep-f16.txt 2>&1; echo "sweep f16 rc=$? at $(el) s"; grep "large" $R/sweep-f16.txt | head -2; save
wait $G; echo "rebuilt at $(el) s"
dec() { timeout 40 ./.devbin/xtask-$2 bench-llm /tmp/$1.gguf --steps 8 --prompt-tokens 16 --gen-tokens 128 --json $R/$1-dec-$2-$3.json > $R/$1-dec-$2-$3.txt 2>&1; echo "$1 dec $2 $3 rc=$? at $(el) s"; grep -A1 "steps/submit" $R/$1-dec-$2-$3.txt | tail -1; }
for m in e l; do dec $m base 1; dec $m new 1; dec $m new 2; dec $m base 2; done; save
while kill -0 $B 2>/dev/null && [ $(el) -lt 400 ]; do sleep 2; done
echo "llama built at $(el) s"; tail -1 $R/llama-build.txt
both() { timeout 60 ./.devbin/xtask-new bench-llm /tmp/$1.gguf --steps 8 --prompt-tokens 512 --gen-tokens 128 --json $R/$1-new-$2.json > $R/$1-new-$2.txt 2>&1; echo "$1 new $2 rc=$? at $(el) s"; grep -A1 "prefill\|steps/submit" $R/$1-new-$2.txt | grep -v "^--\|sampling" | head -3;
  timeout 60 /tmp/lc/b/bin/llama-bench -m /tmp/$1.gguf -ngl 99 -p 512 -n 128 -fa 1 -r 3 -o jsonl > $R/$1-lb-$2.jsonl 2>$R/$1-lb-$2.err; echo "lb $1 $2 rc=$? at $(el) s"; grep -o '"n_prompt": [0-9]*\|"n_gen": [0-9]*\|"avg_ts": [0-9.]*' $R/$1-lb-$2.jsonl | paste -sd' '; save; }
for m in s g e l; do both $m 1; done
for m in s g e l; do [ $(el) -lt 540 ] && both $m 2; done
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
