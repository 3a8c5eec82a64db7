#!/usr/bin/env bash
# H200 call 2 (v33): "x" is call 1's binary (v32's code plus the experimental knobs, unset),
# "y" the same with the branch-free edge tests (`&` for `&&`, which naga lowers to an `if`) in
# the tensor-core GEMM, the per-row attention pass and attn_decode, and k_scale_min without
# its branch. Tests (`kvc coop`, the row kernels in parallel); `bench --gemm-only --tuned
# --shapes llama --gemm-tokens 64` x / y / y with PERM, WH4, both; 32 tokens x / y; then y's
# engine streams (`--parallel 1,8,32,64 --prompt-tokens 128 --gen-tokens 128`) at the knob set
# that scored best, beside llama-batched-bench built in this call.
# Both binaries were built from branch exp/coop-knobs (y is main's b2133a3 with the knobs).
# Carry .gl and .devbin (xtask-x, xtask-y, kvc-y, rowk-y as .xz; skeletons, gguf_rebuild.py,
# build_llama_cpp.sh, llama-src.tar.xz).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
(bash .devbin/build_llama_cpp.sh $PWD/.devbin/llama-src.tar.xz /tmp/lc > $R/llama-build.txt 2>&1) &
B=$!
for b in xtask-x xtask-y kvc-y rowk-y; do xz -d .devbin/$b.xz; chmod +x .devbin/$b; done
(cd .devbin && for m in l:llama1b-q4_k_m e:llama8b-q4_k_m s:smollm2-135m-q4_1 g:gemma-3-270m-q4_k_m; do
  python3 gguf_rebuild.py ${m#*:}.skel /tmp/${m%%:*}.gguf >/dev/null; done) &
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
save() { (cd $OUT && tar czf r.tgz r); }
timeout 60 ./.devbin/kvc-y coop > $R/kvc-y.txt 2>&1; echo "kvc y rc=$? at $(el) s"; grep "test result\|panicked" $R/kvc-y.txt | head -3
timeout 40 ./.devbin/rowk-y > $R/rowk-y.txt 2>&1; echo "rowk y rc=$? at $(el) s"; grep "test result\|panicked" $R/rowk-y.txt | head -3
save
# g BIN TAG KNOBS TOKENS
g() { timeout 60 env GPUPORT_COOP_X=$3 ./.devbin/xtask-$1 bench --gemm-only --tuned --shapes llama --gemm-tokens $4 --json $R/g$4-$2.json > $R/g$4-$2.txt 2>&1; echo "g$4 $2 rc=$? at $(el) s: $(grep -o '[0-9.]* µs' $R/g$4-$2.txt | paste -sd' ')"; save; }
score() { grep ' coop ' $R/g64-$1.txt | awk '{s += $10} END {print s + 0}'; }
g x warm "" 64; g x x "" 64; g y y "" 64; g y yp PERM=1 64; g y yw WH4=1 64; g y ypw PERM=1,WH4=1 64
g x x2 "" 64; g y y2 "" 64
g x x "" 32; g y y "" 32
for t in y yp yw ypw; do echo "$t $(score $t)"; done
BEST=$(for t in y yp yw ypw; do echo "$(score $t) $t"; done | sort -n | head -1 | awk '{print $2}')
case $BEST in y) K="";; yp) K=PERM=1;; yw) K=WH4=1;; ypw) K=PERM=1,WH4=1;; esac
echo "best $BEST ($K)"
while kill -0 $B 2>/dev/null && [ $(el) -lt 330 ]; do sleep 2; done
echo "llama built at $(el) s"; tail -1 $R/llama-build.txt
par() { timeout 60 env GPUPORT_COOP_X=$K ./.devbin/xtask-y bench-llm /tmp/$1.gguf --steps 8 --parallel 1,8,32,64 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-par.json > $R/$1-par.txt 2>&1; echo "$1 par rc=$? at $(el) s"; grep "S_TG" $R/$1-par.txt; save; }
bb() { timeout 50 /tmp/lc/b/bin/llama-batched-bench -m /tmp/$1.gguf -ngl 99 -fa on -c 20480 -b 2048 -ub 512 -npp 128 -ntg 128 -npl 1,8,32,64 --output-format jsonl > $R/$1-bb.jsonl 2>$R/$1-bb.err; echo "bb $1 rc=$? at $(el) s"; grep -o '"pl": [0-9]*\|"speed_tg": [0-9.]*' $R/$1-bb.jsonl | tr '\n' ' '; echo; save; }
for m in e l s g; do [ $(el) -lt 480 ] && par $m; [ $(el) -lt 510 ] && bb $m; done
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
