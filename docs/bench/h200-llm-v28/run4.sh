#!/usr/bin/env bash
# H200 call 4 (v28): "new2" (b9ca6fe: a batch's greedy rows in one argmax) beside call 3's "new"
# and llama.cpp built in the same call: the many-stream figures of all four layouts, Gemma 3
# decode at depth 16k against llama-bench -d 16384, and the GEMV sweep at 256 MB.
# Carry .gl and .devbin: xtask-new2 / xtask-new, rowk (release row_kernels of new2), the
# skeletons, gguf_rebuild.py, build_llama_cpp.sh, llama-src.tar.xz.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
(bash .devbin/build_llama_cpp.sh $PWD/.devbin/llama-src.tar.xz /tmp/lc > $R/llama-build.txt 2>&1) &
B=$!
for b in .devbin/*.xz; do [ "$b" = .devbin/llama-src.tar.xz ] || xz -d "$b"; done; chmod +x .devbin/xtask-* .devbin/rowk
(cd .devbin && for m in l:llama1b-q4_k_m e:llama8b-q4_k_m s:smollm2-135m-q4_1 g:gemma-3-270m-q4_k_m; do
  python3 gguf_rebuild.py ${m#*:}.skel /tmp/${m%%:*}.gguf >/dev/null; done) &
G=$!
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
timeout 60 ./.devbin/rowk > $R/rowk.txt 2>&1; echo "rowk rc=$? at $(el) s"; grep "test result\|panicked" $R/rowk.txt | head -3
wait $G; echo "rebuilt at $(el) s"
par() { [ $(el) -lt $3 ] || return; timeout 150 ./.devbin/xtask-$2 bench-llm /tmp/$1.gguf --steps 8 --parallel 1,8,32,64 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-par-$2.json > $R/$1-par-$2.txt 2>&1; echo "$1 par $2 rc=$? at $(el) s"; grep "S_TG" $R/$1-par-$2.txt; }
par l new2 300; par l new 300; par s new2 300; par s new 300; par g new2 300; par g new 300; par e new2 300
deep() { [ $(el) -lt 340 ] || return; timeout 60 ./.devbin/xtask-new2 bench-llm /tmp/g.gguf --steps 8 --prompt-tokens $1 --gen-tokens 128 --json $R/g-depth-$1.json > $R/g-depth-$1.txt 2>&1; echo "depth $1 rc=$? at $(el) s: $(sed -n 2p $R/g-depth-$1.txt) | $(sed -n 5p $R/g-depth-$1.txt)"; }
deep 16384; deep 4096
[ $(el) -lt 330 ] && timeout 100 ./.devbin/xtask-new2 bench --shapes large --json $R/gemv-large.json > $R/gemv-large.txt 2>&1; echo "gemv large rc=$? at $(el) s"; grep -i "ceiling\|large" $R/gemv-large.txt | tail -14
while kill -0 $B 2>/dev/null && [ $(el) -lt 470 ]; do sleep 2; done
echo "llama built at $(el) s"; tail -1 $R/llama-build.txt
bb() { timeout 60 /tmp/lc/b/bin/llama-batched-bench -m /tmp/$1.gguf -ngl 99 -fa on -c 20480 -b 2048 -ub 512 -npp 128 -ntg 128 -npl 1,8,32,64 --output-format jsonl > $R/$1-bb.jsonl 2>$R/$1-bb.err; echo "bb $1 rc=$? at $(el) s"; grep -o '"pl": [0-9]*\|"speed_tg": [0-9.]*' $R/$1-bb.jsonl | tr '\n' ' '; echo; }
for m in l s g e; do [ $(el) -lt 495 ] && bb $m; done
[ $(el) -lt 515 ] && timeout 30 /tmp/lc/b/bin/llama-bench -m /tmp/g.gguf -ngl 99 -p 0 -n 128 -d 16384 -fa 1 -r 2 -o jsonl > $R/g-depth-llama.jsonl 2>/dev/null; echo "llama depth 16384: $(grep -o '"avg_ts": [0-9.]*' $R/g-depth-llama.jsonl)"
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
cd $OUT && tar czf r.tgz r && rm -rf r
