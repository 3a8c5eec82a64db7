#!/usr/bin/env bash
# v40 call 2 (a fresh machine, under 600 s; replaced the run2.sh written at the end of v39): llama.cpp's CUDA build first (its cores to itself
# but for single-threaded GPU microbenchmarks and the niced model rebuilds), then issue 15's
# table beside it. Call 1 (run1.sh) measured naga's loop-bounding counter costing the row-table
# attention ~45% (8B 64 x 192 keys 128.8 -> 70.7 us): attention now drops it by default
# (KernelSpec::loop_bounding). While llama.cpp builds: kvc with every family unbounded (does
# NVIDIA's compiler take them, do they still match the CPU?), the per-type GEMV table and the
# 32-row GEMMs bounded vs unbounded, and the attention passes at the new default. Then per
# model: llama-batched-bench and bench-llm at 1,8,32,64 streams; last, 32/64 streams of the 8B
# and 1B with every family unbounded, if time is left. Carry [.gl, .devbin] (binaries rebuilt).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
(bash .devbin/build_llama_cpp.sh $PWD/.devbin/llama-src.tar.xz /tmp/lc > $R/llama-build.txt 2>&1; touch /tmp/lc.done) &
xz -dk .devbin/xtask-t.xz .devbin/kvc.xz; chmod +x .devbin/xtask-t .devbin/kvc
X=./.devbin/xtask-t
(cd .devbin && for m in e:llama8b-q4_k_m l:llama1b-q4_k_m g:gemma-3-270m-q4_k_m s:smollm2-135m-q4_1; do
  nice python3 gguf_rebuild.py ${m#*:}.skel /tmp/${m%%:*}.gguf >/dev/null; touch /tmp/${m%%:*}.done; done) &
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
save() { (cd $OUT && tar czf r.tgz r); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
GPUPORT_UNBOUNDED_LOOPS=all timeout 120 ./.devbin/kvc > $R/kvc-unbounded.txt 2>&1; echo "kvc unbounded=all rc=$? at $(el) s"; grep "test result\|panicked\|FAILED\|failed" $R/kvc-unbounded.txt | head -5; save
gv() { timeout 40 env $2 $X bench --shapes large --tuned --json $R/gemv-$1.json > $R/gemv-$1.txt 2>&1; echo "gemv $1 rc=$? at $(el) s"; grep -i "ratio\|ceiling\|q4_K\|q6_K\|q8_0" $R/gemv-$1.txt | head -14; save; }
gm() { timeout 50 env $2 $X bench --gemm-only --tuned --shapes llama --gemm-tokens 32 --json $R/gemm32-$1.json > $R/gemm32-$1.txt 2>&1; echo "gemm32 $1 rc=$? at $(el) s"; grep -i "8b\|llama" $R/gemm32-$1.txt | head -12; save; }
oth() { timeout 40 env $2 $X bench --other-kernels --json $R/other-$1.json > $R/other-$1.txt 2>&1; echo "other $1 rc=$? at $(el) s"; grep "attention.*f16" $R/other-$1.txt; save; }
for i in 1 2; do gv bounded$i ""; gv unbounded$i GPUPORT_UNBOUNDED_LOOPS=all; done
for i in 1 2; do gm bounded$i ""; gm unbounded$i GPUPORT_UNBOUNDED_LOOPS=all; done
oth default ""; oth sg GPUPORT_ATTN_ROWS_SG=1; oth bounded GPUPORT_LOOP_BOUNDING=all
while [ ! -e /tmp/lc.done ] && [ $(el) -lt 340 ]; do sleep 2; done
echo "llama built at $(el) s"; tail -1 $R/llama-build.txt; save
bb() { [ -x /tmp/lc/b/bin/llama-batched-bench ] || return; timeout 45 /tmp/lc/b/bin/llama-batched-bench -m /tmp/$1.gguf -ngl 99 -fa on -c 20480 -b 2048 -ub 512 -npp 128 -ntg 128 -npl 1,8,32,64 --output-format jsonl > $R/$1-bb.jsonl 2>$R/$1-bb.err; echo "bb $1 rc=$? at $(el) s"; grep -o '"pl": [0-9]*\|"speed_tg": [0-9.]*' $R/$1-bb.jsonl | tr '\n' ' '; echo; save; }
par() { while [ ! -e /tmp/$1.done ]; do sleep 1; done; timeout 60 env $4 $X bench-llm /tmp/$1.gguf --steps 8 --parallel $3 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-par-$2.json > $R/$1-par-$2.txt 2>&1; echo "$1 $3 $2 rc=$? at $(el) s: $(grep -o 'S_TG *[0-9.]* tok/s' $R/$1-par-$2.txt | paste -sd' ')"; save; }
for m in e l g s; do bb $m; par $m default 1,8,32,64 ""; done
for m in e l; do [ $(el) -lt 540 ] && par $m unbounded 32,64 GPUPORT_UNBOUNDED_LOOPS=all; done
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
