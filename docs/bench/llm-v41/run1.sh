#!/usr/bin/env bash
# v41 call 1 (a fresh machine, under 600 s): llama.cpp's CUDA build first (its cores to itself
# but for single-threaded GPU microbenchmarks and the niced model rebuilds), then issue 15's
# table beside it. While it builds: the engine's tensor-core GEMMs at 32 and 64 rows split 1-16
# ways (does the split count meet the GPU's waves of workgroups?), and the per-kernel profile
# of batched steps at 8, 32 and 64 rows (`bench-llm --batch`) of the 8B and 1B. Then per model:
# llama-batched-bench and bench-llm at 1,8,32,64 streams (the engine now precompiles: each
# run's `precompiled ... compiled after it` line should read 0); last, if time is left, 32
# streams of the 1B and 8B with Q6_K's 32-row GEMMs on the int8 kernel (the per-type knob).
# .devbin/xtask-t.xz, kvc.xz and rowk.xz were built at d668984 (rebuild them if HEAD moved).
# Carry [.gl, .devbin].
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
(bash .devbin/build_llama_cpp.sh $PWD/.devbin/llama-src.tar.xz /tmp/lc > $R/llama-build.txt 2>&1; touch /tmp/lc.done) &
xz -dk .devbin/xtask-t.xz; chmod +x .devbin/xtask-t
X=./.devbin/xtask-t
(cd .devbin && for m in e:llama8b-q4_k_m l:llama1b-q4_k_m g:gemma-3-270m-q4_k_m s:smollm2-135m-q4_1; do
  nice python3 gguf_rebuild.py ${m#*:}.skel /tmp/${m%%:*}.gguf >/dev/null; touch /tmp/${m%%:*}.done; done) &
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
save() { (cd $OUT && tar czf r.tgz r); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
gm() { timeout 80 $X bench --gemm-only --tuned --shapes llama --gemm-tokens $1 --splits 1,2,3,4,5,6,8,10,12,16 --json $R/gemm$1-splits.json > $R/gemm$1-splits.txt 2>&1; echo "gemm$1 rc=$? at $(el) s"; save; }
gm 32; gm 64
prof() { while [ ! -e /tmp/$1.done ]; do sleep 1; done; timeout 70 $X bench-llm /tmp/$1.gguf --steps 8 --prompt-tokens 64 --gen-tokens 32 --batch 8,32,64 --json $R/$1-batch.json > $R/$1-batch.txt 2>&1; echo "batch $1 rc=$? at $(el) s"; save; }
prof e; prof l
while [ ! -e /tmp/lc.done ] && [ $(el) -lt 340 ]; do sleep 2; done
echo "llama built at $(el) s"; tail -1 $R/llama-build.txt; save
bb() { [ -x /tmp/lc/b/bin/llama-batched-bench ] || return; timeout 45 /tmp/lc/b/bin/llama-batched-bench -m /tmp/$1.gguf -ngl 99 -fa on -c 20480 -b 2048 -ub 512 -npp 128 -ntg 128 -npl 1,8,32,64 --output-format jsonl > $R/$1-bb.jsonl 2>$R/$1-bb.err; echo "bb $1 rc=$? at $(el) s"; grep -o '"pl": [0-9]*\|"speed_tg": [0-9.]*' $R/$1-bb.jsonl | tr '\n' ' '; echo; save; }
par() { while [ ! -e /tmp/$1.done ]; do sleep 1; done; timeout 60 env $4 $X bench-llm /tmp/$1.gguf --steps 8 --parallel $3 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-par-$2.json > $R/$1-par-$2.txt 2>&1; echo "$1 $3 $2 rc=$? at $(el) s: $(grep -o 'S_TG *[0-9.]* tok/s' $R/$1-par-$2.txt | paste -sd' ')"; save; }
for m in e l g s; do bb $m; par $m default 1,8,32,64 ""; done
for m in l e; do [ $(el) -lt 530 ] && par $m q6int8 32 GPUPORT_COOP_MIN_Q8_TOKENS=32,q6_K=33; done
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
