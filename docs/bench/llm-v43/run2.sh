#!/usr/bin/env bash
# v43 call 2 (right after call 1, on the machine it warmed: target/lc holds llama.cpp's build
# and target/m the model files; on a fresh machine both are made again first). Issue 15's
# table for Gemma 3 and SmolLM2 (llama-batched-bench and bench-llm at 1/8/32/64 streams), then
# A/Bs at 1 and 8 streams, a2fe5e6's build (xtask-a: a branch around each unrolled GEMV
# step's and each extra row's loads) against this commit's branch-free loops (xtask-t), one
# round per model, interleaved. Carry [.gl, .devbin].
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R target/m
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -e target/lc.done ] || (nice -n 10 bash .devbin/build_llama_cpp.sh $PWD/.devbin/llama-src.tar.xz $PWD/target/lc > $R/llama-build.txt 2>&1; touch target/lc.done) &
xz -dkf .devbin/xtask-t.xz .devbin/xtask-a.xz; chmod +x .devbin/xtask-t .devbin/xtask-a
X=./.devbin/xtask-t
(cd .devbin && for m in g:gemma-3-270m-q4_k_m s:smollm2-135m-q4_1 l:llama1b-q4_k_m e:llama8b-q4_k_m; do
  [ -e ../target/m/${m%%:*}.done ] || nice python3 gguf_rebuild.py ${m#*:}.skel ../target/m/${m%%:*}.gguf >/dev/null; touch ../target/m/${m%%:*}.done; done) &
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
save() { (cd $OUT && tar czf r.tgz r); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
bb() { [ -x target/lc/b/bin/llama-batched-bench ] || return; timeout 45 target/lc/b/bin/llama-batched-bench -m target/m/$1.gguf -ngl 99 -fa on -c 20480 -b 2048 -ub 512 -npp 128 -ntg 128 -npl 1,8,32,64 --output-format jsonl > $R/$1-bb.jsonl 2>$R/$1-bb.err; echo "bb $1 rc=$? at $(el) s"; grep -o '"pl": [0-9]*\|"speed_tg": [0-9.]*' $R/$1-bb.jsonl | tr '\n' ' '; echo; save; }
par() { while [ ! -e target/m/$1.done ]; do sleep 1; done; timeout 60 env $4 ./.devbin/xtask-${5:-t} bench-llm target/m/$1.gguf --steps 8 --parallel $3 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-par-$2.json > $R/$1-par-$2.txt 2>&1; echo "$1 $3 $2 rc=$? at $(el) s: $(grep -o 'S_TG *[0-9.]* tok/s' $R/$1-par-$2.txt | paste -sd' ')"; save; }
while [ ! -e target/lc.done ] && [ $(el) -lt 330 ]; do sleep 2; done
for m in g s; do bb $m; par $m default 1,8,32,64 ""; done
for m in s g l e; do [ $(el) -lt 500 ] && par $m a1 1,8 "" a && par $m t1 1,8 "" t; done
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
