#!/usr/bin/env bash
# v45 call 6 (written, not run: the session's device time was spent). z = aafd3c3 (v45's
# head: quadruple tiles, two stages at 32 tokens, the norms and GLU in the f16-input pass).
# Issue 15's table beside llama-batched-bench in one call on whichever card comes (the issue
# names the H200), then, time left, the 8B's and 1B's batched steps at 32 rows profiled
# (`--batch 32`) and issue 13's GEMV line (`bench --shapes large --tuned`). ~520 s on a fresh
# machine. Carry [.gl, .devbin] (xtask-z.xz, the four skeletons, gguf_rebuild.py,
# llama-src.tar.xz, build_llama_cpp.sh).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R target/m
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -e target/lc.done ] || (nice -n 10 bash .devbin/build_llama_cpp.sh $PWD/.devbin/llama-src.tar.xz $PWD/target/lc > $R/llama-build.txt 2>&1; touch target/lc.done) &
xz -dkf .devbin/xtask-z.xz; chmod +x .devbin/xtask-z
(cd .devbin && for m in e:llama8b-q4_k_m l:llama1b-q4_k_m s:smollm2-135m-q4_1 g:gemma-3-270m-q4_k_m; do
  [ -e ../target/m/${m%%:*}.done ] || nice python3 gguf_rebuild.py ${m#*:}.skel ../target/m/${m%%:*}.gguf >/dev/null; touch ../target/m/${m%%:*}.done; done) &
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
save() { (cd $OUT && tar czf r.tgz r); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
wait_m() { while [ ! -e target/m/$1.done ]; do sleep 1; done; }
timeout 60 ./.devbin/xtask-z bench --shapes large --tuned --json $R/gemv-tuned.json > $R/gemv-tuned.txt 2>&1; echo "gemv tuned rc=$? at $(el) s"; grep large $R/gemv-tuned.txt | awk '{print $2, $3, $8}' | paste -sd' '; save
prof() { wait_m $1; timeout 70 ./.devbin/xtask-z bench-llm target/m/$1.gguf --steps 8 --batch $2 --prompt-tokens 64 --gen-tokens 16 --json $R/$1-batch.json > $R/$1-batch.txt 2>&1; echo "$1 batch $2 rc=$? at $(el) s"; grep -A5 "^batch of" $R/$1-batch.txt | grep -v "prompts"; save; }
prof e 32; prof l 32
while [ ! -e target/lc.done ] && [ $(el) -lt 330 ]; do sleep 2; done
echo "llama built at $(el) s"; tail -1 $R/llama-build.txt; save
par() { wait_m $1; timeout 80 ./.devbin/xtask-z bench-llm target/m/$1.gguf --steps 8 --parallel 1,8,32,64 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-par.json > $R/$1-par.txt 2>&1; echo "$1 rc=$? at $(el) s: $(grep -o 'S_TG *[0-9.]* tok/s' $R/$1-par.txt | paste -sd' ')"; save; }
bb() { [ -x target/lc/b/bin/llama-batched-bench ] || return; timeout 50 target/lc/b/bin/llama-batched-bench -m target/m/$1.gguf -ngl 99 -fa on -c 20480 -b 2048 -ub 512 -npp 128 -ntg 128 -npl 1,8,32,64 --output-format jsonl > $R/$1-bb.jsonl 2>$R/$1-bb.err; echo "bb $1 rc=$? at $(el) s"; grep -o '"pl": [0-9]*\|"speed_tg": [0-9.]*' $R/$1-bb.jsonl | tr '\n' ' '; echo; save; }
for m in e l s g; do bb $m; par $m; done
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
