#!/usr/bin/env bash
# v45 call 4, on an H200 (the issue's card): issue 15's hard rows beside llama-batched-bench
# in one call — the 8B and 1B at 1/8/32/64 streams on x (w + the gated activation formed by
# the f16-input pass instead of a pass of its own) — after `tiny` (llm_tiny: the forward
# against its CPU reference, prompts through the tensor cores) and the 8B's 32/64 streams
# w against x. llama.cpp's CUDA build starts first, niced, into target/lc.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R target/m
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -e target/lc.done ] || (nice -n 10 bash .devbin/build_llama_cpp.sh $PWD/.devbin/llama-src.tar.xz $PWD/target/lc > $R/llama-build.txt 2>&1; touch target/lc.done) &
for b in w x tiny; do xz -dkf .devbin/$([ $b = tiny ] || echo xtask-)$b.xz; done; chmod +x .devbin/xtask-w .devbin/xtask-x .devbin/tiny
(cd .devbin && for m in e:llama8b-q4_k_m l:llama1b-q4_k_m; do
  [ -e ../target/m/${m%%:*}.done ] || nice python3 gguf_rebuild.py ${m#*:}.skel ../target/m/${m%%:*}.gguf >/dev/null; touch ../target/m/${m%%:*}.done; done) &
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
save() { (cd $OUT && tar czf r.tgz r); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
timeout 120 ./.devbin/tiny > $R/tiny.txt 2>&1; echo "tiny rc=$? at $(el) s"; grep -E "test result|panicked|FAILED" $R/tiny.txt | head -5; save
wait_m() { while [ ! -e target/m/$1.done ]; do sleep 1; done; }
par() { wait_m $1; timeout 80 env $5 ./.devbin/xtask-$2 bench-llm target/m/$1.gguf --steps 8 --parallel $4 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-par-$2$3.json > $R/$1-par-$2$3.txt 2>&1; echo "$1 $4 $2$3 rc=$? at $(el) s: $(grep -o 'S_TG *[0-9.]* tok/s' $R/$1-par-$2$3.txt | paste -sd' ')"; save; }
par e w 1 32,64 X=1; par e x 1 32,64 X=1
while [ ! -e target/lc.done ] && [ $(el) -lt 330 ]; do sleep 2; done
echo "llama built at $(el) s"; tail -1 $R/llama-build.txt; save
bb() { [ -x target/lc/b/bin/llama-batched-bench ] || return; timeout 50 target/lc/b/bin/llama-batched-bench -m target/m/$1.gguf -ngl 99 -fa on -c 20480 -b 2048 -ub 512 -npp 128 -ntg 128 -npl 1,8,32,64 --output-format jsonl > $R/$1-bb.jsonl 2>$R/$1-bb.err; echo "bb $1 rc=$? at $(el) s"; grep -o '"pl": [0-9]*\|"speed_tg": [0-9.]*' $R/$1-bb.jsonl | tr '\n' ' '; echo; save; }
for m in e l; do bb $m; par $m x all 1,8,32,64 X=1; done
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
