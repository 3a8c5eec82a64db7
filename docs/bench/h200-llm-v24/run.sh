#!/usr/bin/env bash
# H200 call (v24): the norm's blocks from a workgroup per 256-value chunk (7b37b79, "norm2")
# against one workgroup per row (the commit before, "norm": v23's fastest), interleaved; the changed
# kernels' tests there; then many streams (bench-llm --parallel) beside llama-batched-bench built
# in the same call. Carry .gl and .devbin: xtask-norm / xtask-norm2, kvc / rowk / tiny (release
# test binaries of norm2), the skeletons, gguf_rebuild.py, build_llama_cpp.sh, llama-src.tar.xz.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
(bash .devbin/build_llama_cpp.sh $PWD/.devbin/llama-src.tar.xz /tmp/lc > $R/llama-build.txt 2>&1) &
B=$!
for b in .devbin/*.xz; do [ "$b" = .devbin/llama-src.tar.xz ] || xz -d "$b"; done; chmod +x .devbin/xtask-norm .devbin/xtask-norm2 .devbin/kvc .devbin/rowk .devbin/tiny
(cd .devbin && for m in l:llama1b-q4_k_m e:llama8b-q4_k_m; do
  python3 gguf_rebuild.py ${m#*:}.skel /tmp/${m%%:*}.gguf >/dev/null; done)
echo "rebuilt at $(el) s"
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
timeout 60 ./.devbin/kvc int8_blocks q8_rounding gated_rows > $R/kvc.txt 2>&1; echo "kvc rc=$? at $(el) s"; grep "test result" $R/kvc.txt
timeout 30 ./.devbin/rowk decode_attention norms > $R/rowk.txt 2>&1; echo "rowk rc=$?"; grep "test result\|panicked" $R/rowk.txt
timeout 60 ./.devbin/tiny int8_projections > $R/tiny.txt 2>&1; echo "tiny rc=$?"; grep "test result" $R/tiny.txt
ours() { timeout 80 ./.devbin/xtask-$2 bench-llm /tmp/$1.gguf --steps 8 --prompt-tokens 512 --gen-tokens 128 --json $R/$1-$2-$3.json > $R/$1-$2-$3.txt 2>&1; echo "$1 $2 $3 rc=$? at $(el) s: $(sed -n 2p $R/$1-$2-$3.txt) | $(sed -n 5p $R/$1-$2-$3.txt)"; }
for r in 1 2; do for m in e l; do ours $m norm $r; ours $m norm2 $r; done; done
many() { timeout 120 ./.devbin/xtask-norm2 bench-llm /tmp/$1.gguf --steps 8 --parallel 8,32,64 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-par.json > $R/$1-par.txt 2>&1; echo "par $1 rc=$? at $(el) s"; grep -i "streams\|S_TG\|parallel" $R/$1-par.txt | head -8; }
many l
while kill -0 $B 2>/dev/null && [ $(el) -lt 330 ]; do sleep 2; done
echo "llama built at $(el) s"; tail -1 $R/llama-build.txt
bb() { timeout 120 /tmp/lc/b/bin/llama-batched-bench -m /tmp/$1.gguf -ngl 99 -fa on -c 20480 -b 2048 -ub 512 -npp 128 -ntg 128 -npl 8,32,64 --output-format jsonl > $R/$1-bb.jsonl 2>$R/$1-bb.err; echo "llama-batched $1 rc=$? at $(el) s"; grep -o '"pl": [0-9]*\|"speed_tg": [0-9.]*' $R/$1-bb.jsonl | tr '\n' ' '; echo; }
bb l
[ $(el) -lt 420 ] && many e
[ $(el) -lt 480 ] && bb e
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
cd $OUT && tar czf r.tgz r && rm -rf r
