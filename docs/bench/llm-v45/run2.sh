#!/usr/bin/env bash
# v45 call 2 (first of two commands on one machine; run3.sh follows while it is warm).
# w = the head with v45's tiles (f16 quadruples, two stages for the 32-token tile) and the
# GPUPORT_COOP_NARROW_MAX knob; h = c70ab502. llama.cpp's CUDA build starts first, niced,
# into target/lc. (1) kernel-stats of the tensor-core GEMM; (2) where a batched step's time
# goes (`--batch`: the 8B at 32/64 rows, SmolLM2 at 8); (3) the 32-token tile at 64 rows
# (GPUPORT_COOP_NARROW_MAX=64); (4) issue 15's table beside llama-batched-bench: 8B, 1B.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R target/m
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -e target/lc.done ] || (nice -n 10 bash .devbin/build_llama_cpp.sh $PWD/.devbin/llama-src.tar.xz $PWD/target/lc > $R/llama-build.txt 2>&1; touch target/lc.done) &
for b in h w; do xz -dkf .devbin/xtask-$b.xz; chmod +x .devbin/xtask-$b; done
(cd .devbin && for m in e:llama8b-q4_k_m s:smollm2-135m-q4_1 l:llama1b-q4_k_m g:gemma-3-270m-q4_k_m; do
  [ -e ../target/m/${m%%:*}.done ] || nice python3 gguf_rebuild.py ${m#*:}.skel ../target/m/${m%%:*}.gguf >/dev/null; touch ../target/m/${m%%:*}.done; done) &
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
save() { (cd $OUT && tar czf r.tgz r); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
timeout 60 ./.devbin/xtask-w kernel-stats --filter gemm_coop,XH=1 > $R/kstats.txt 2>&1; echo "kstats rc=$? at $(el) s"; grep -A3 "KC=64" $R/kstats.txt | head -30; save
wait_m() { while [ ! -e target/m/$1.done ]; do sleep 1; done; }
prof() { wait_m $1; timeout 70 env $4 ./.devbin/xtask-$2 bench-llm target/m/$1.gguf --steps 8 --batch $3 --prompt-tokens 64 --gen-tokens 16 --json $R/$1-batch-$2.json > $R/$1-batch-$2.txt 2>&1; echo "$1 batch $3 $2 rc=$? at $(el) s"; grep -A5 "^batch of" $R/$1-batch-$2.txt | grep -v "^  [ a-z]*prompts"; save; }
prof e w 32,64 X=1; prof s w 8 X=1
gm() { timeout 60 env $4 ./.devbin/xtask-$2 bench --gemm-only --tuned --shapes llama --gemm-tokens $1 --json $R/g$1-$2$3.json > $R/g$1-$2$3.txt 2>&1; echo "g$1 $2$3 rc=$? at $(el) s: $(grep -E '^gemm .*tokens.*coop' $R/g$1-$2$3.txt | awk "{print \$2, \$10}" | sed 's/llama//' | paste -sd' ')"; save; }
gm 64 w 1 X=1; gm 64 w n64 GPUPORT_COOP_NARROW_MAX=64
par() { wait_m $1; timeout 80 env $5 ./.devbin/xtask-$2 bench-llm target/m/$1.gguf --steps 8 --parallel $4 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-par-$2$3.json > $R/$1-par-$2$3.txt 2>&1; echo "$1 $4 $2$3 rc=$? at $(el) s: $(grep -o 'S_TG *[0-9.]* tok/s' $R/$1-par-$2$3.txt | paste -sd' ')"; save; }
par e w n64 64 GPUPORT_COOP_NARROW_MAX=64; par l w n64 64 GPUPORT_COOP_NARROW_MAX=64
while [ ! -e target/lc.done ] && [ $(el) -lt 330 ]; do sleep 2; done
echo "llama built at $(el) s"; tail -1 $R/llama-build.txt; save
bb() { [ -x target/lc/b/bin/llama-batched-bench ] || return; timeout 50 target/lc/b/bin/llama-batched-bench -m target/m/$1.gguf -ngl 99 -fa on -c 20480 -b 2048 -ub 512 -npp 128 -ntg 128 -npl 1,8,32,64 --output-format jsonl > $R/$1-bb.jsonl 2>$R/$1-bb.err; echo "bb $1 rc=$? at $(el) s"; grep -o '"pl": [0-9]*\|"speed_tg": [0-9.]*' $R/$1-bb.jsonl | tr '\n' ' '; echo; save; }
for m in e l; do bb $m; par $m w all 1,8,32,64 X=1; done
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
