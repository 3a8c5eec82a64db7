#!/usr/bin/env bash
# v39 call 3 (a fresh machine, under 560 s): issue 15's table with v39's defaults — the
# 32-token tensor-core tile and int8 rows on tensor cores from 32 — beside llama.cpp's CUDA
# backend built and run in the same call (llama-batched-bench, flash attention on), as
# docs/bench/llm-v38/run2.sh; while llama.cpp builds on cores 0-12, our four layouts at 1 / 8
# / 32 / 64 streams, then the batched attention alone at 16 and 8 keys a block
# (GPUPORT_ROW_KEYS) and split targets of 512 and 4096 workgroups; after llama.cpp, the 8B's
# step profile and a second round of ours. Build and carry as run1.sh says.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
(taskset -c 0-12 bash .devbin/build_llama_cpp.sh $PWD/.devbin/llama-src.tar.xz /tmp/lc > $R/llama-build.txt 2>&1) &
B=$!
xz -dk .devbin/xtask-t.xz; chmod +x .devbin/xtask-t
X="taskset -c 13-15 ./.devbin/xtask-t"
(cd .devbin && for m in s:smollm2-135m-q4_1 g:gemma-3-270m-q4_k_m l:llama1b-q4_k_m e:llama8b-q4_k_m; do
  taskset -c 13-15 python3 gguf_rebuild.py ${m#*:}.skel /tmp/${m%%:*}.gguf >/dev/null; touch /tmp/${m%%:*}.done; done) &
G=$!
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
save() { (cd $OUT && tar czf r.tgz r); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
par() { while [ ! -e /tmp/$1.done ]; do sleep 1; done; timeout 75 $X bench-llm /tmp/$1.gguf --steps 8 --parallel 1,8,32,64 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-par-$2.json > $R/$1-par-$2.txt 2>&1; echo "$1 par #$2 rc=$? at $(el) s"; grep "S_TG" $R/$1-par-$2.txt; save; }
par s 1; par g 1; par l 1; par e 1
oth() { timeout 40 env $2 $X bench --other-kernels --json $R/other-$1.json > $R/other-$1.txt 2>&1; echo "other $1 rc=$? at $(el) s"; grep "attention rows.*f16" $R/other-$1.txt; save; }
oth kb32 ""
[ $(el) -lt 250 ] && oth kb16 GPUPORT_ROW_KEYS=16
[ $(el) -lt 260 ] && oth kb8 GPUPORT_ROW_KEYS=8
[ $(el) -lt 270 ] && oth split512 GPUPORT_ROW_SPLIT_WORKGROUPS=512
[ $(el) -lt 280 ] && oth split4096 GPUPORT_ROW_SPLIT_WORKGROUPS=4096
while kill -0 $B 2>/dev/null && [ $(el) -lt 360 ]; do sleep 2; done
echo "llama built at $(el) s"; tail -1 $R/llama-build.txt
bb() { timeout 45 /tmp/lc/b/bin/llama-batched-bench -m /tmp/$1.gguf -ngl 99 -fa on -c 20480 -b 2048 -ub 512 -npp 128 -ntg 128 -npl 1,8,32,64 --output-format jsonl > $R/$1-bb.jsonl 2>$R/$1-bb.err; echo "bb $1 rc=$? at $(el) s"; grep -o '"pl": [0-9]*\|"speed_tg": [0-9.]*' $R/$1-bb.jsonl | tr '\n' ' '; echo; save; }
bb e; bb l; bb g; bb s
prof() { timeout 40 $X bench-llm /tmp/$1.gguf --steps 8 --prompt-tokens 16 --gen-tokens 16 --batch 8,32,64 --json $R/$1-batch.json > $R/$1-batch.txt 2>&1; echo "$1 batch profile rc=$? at $(el) s"; grep -A1 "batch of" $R/$1-batch.txt; save; }
[ $(el) -lt 450 ] && prof e
[ $(el) -lt 470 ] && par e 2
[ $(el) -lt 500 ] && par l 2
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
