#!/usr/bin/env bash
# H200 call 4 (v32): call 3's "new" binary (this stop's code). The tensor-core GEMM's split
# target at batched-decode sizes: `bench-llm F --batch 32,64` (8B, 1B) and `--batch 64`
# (SmolLM2, Gemma 3) at GPUPORT_COOP_SPLIT_TARGET 256 (the default, chosen at 512-row prompts)
# / 1024 / 2048, and the 1B/8B's int8 rows on tensor cores from 32 rows at the larger
# targets (GPUPORT_COOP_MIN_Q8_TOKENS=32); then each layout's engine streams (`--parallel
# 1,8,32,64 --prompt-tokens 128 --gen-tokens 128`) at the target that scored best for it
# (sum of its batch figures over the default's), beside llama-batched-bench built in the same
# call.
# Carry .gl and .devbin (xtask-new as .xz; skeletons, gguf_rebuild.py, build_llama_cpp.sh,
# llama-src.tar.xz).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
(bash .devbin/build_llama_cpp.sh $PWD/.devbin/llama-src.tar.xz /tmp/lc > $R/llama-build.txt 2>&1) &
B=$!
xz -d .devbin/xtask-new.xz; chmod +x .devbin/xtask-new
(cd .devbin && for m in l:llama1b-q4_k_m e:llama8b-q4_k_m s:smollm2-135m-q4_1 g:gemma-3-270m-q4_k_m; do
  python3 gguf_rebuild.py ${m#*:}.skel /tmp/${m%%:*}.gguf >/dev/null; done)
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
save() { (cd $OUT && tar czf r.tgz r); }
X=./.devbin/xtask-new
# bat MODEL TAG "ENV" COUNTS: prints "TAG sum-of-tok/s"
bat() { timeout 60 env $3 $X bench-llm /tmp/$1.gguf --steps 8 --prompt-tokens 64 --gen-tokens 64 --batch $4 --json $R/$1-bat-$2.json > $R/$1-bat-$2.txt 2>&1; echo "$1 bat $2 rc=$? at $(el) s: $(grep 'batch of' $R/$1-bat-$2.txt | awk '{print $3, $4}' | paste -sd' ')"; save; }
score() { grep 'batch of' $R/$1-bat-$2.txt | awk '{s += $4} END {print s + 0}'; }
for T in 256 1024 2048; do
  bat e t$T GPUPORT_COOP_SPLIT_TARGET=$T 32,64; bat l t$T GPUPORT_COOP_SPLIT_TARGET=$T 32,64
  bat s t$T GPUPORT_COOP_SPLIT_TARGET=$T 64; bat g t$T GPUPORT_COOP_SPLIT_TARGET=$T 64
done
for T in 1024 2048; do for m in e l; do bat $m q$T "GPUPORT_COOP_SPLIT_TARGET=$T GPUPORT_COOP_MIN_Q8_TOKENS=32" 32; done; done
best() { b=256; bs=$(score $1 t256); for T in 1024 2048; do s=$(score $1 t$T); if awk "BEGIN {exit !($s > $bs)}"; then b=$T; bs=$s; fi; done; echo $b; }
while kill -0 $B 2>/dev/null && [ $(el) -lt 330 ]; do sleep 2; done
echo "llama built at $(el) s"; tail -1 $R/llama-build.txt
par() { T=$(best $1); timeout 60 env GPUPORT_COOP_SPLIT_TARGET=$T $X bench-llm /tmp/$1.gguf --steps 8 --parallel 1,8,32,64 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-par-t$T.json > $R/$1-par-t$T.txt 2>&1; echo "$1 par t$T rc=$? at $(el) s"; grep "S_TG" $R/$1-par-t$T.txt; save; }
bb() { timeout 60 /tmp/lc/b/bin/llama-batched-bench -m /tmp/$1.gguf -ngl 99 -fa on -c 20480 -b 2048 -ub 512 -npp 128 -ntg 128 -npl 1,8,32,64 --output-format jsonl > $R/$1-bb.jsonl 2>$R/$1-bb.err; echo "bb $1 rc=$? at $(el) s"; grep -o '"pl": [0-9]*\|"speed_tg": [0-9.]*' $R/$1-bb.jsonl | tr '\n' ' '; echo; save; }
for m in e l s g; do [ $(el) -lt 400 ] && par $m; [ $(el) -lt 420 ] && bb $m; done
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
