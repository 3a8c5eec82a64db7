#!/usr/bin/env bash
# v43 call 1 (a fresh machine, under 600 s). llama.cpp's CUDA build starts first, niced, into
# target/lc (kept on the machine for call 2), and the four model files are rebuilt into
# target/m. While it builds: `kvc` and `rowk` on the GPU with the default every decode family
# without naga's loop counter (v42) and the int8 GEMV's new rows-per-thread variants; the
# GEMV table at 256 MB — the tuned variants, then a sweep of the int8 GEMV's variants of 128
# and 256 threads at 4-32 lanes a row group (RPT 1, 2, 4) and the float GEMV's for f16 (the
# tuned table before and after the branch-free loops, interleaved). Then
# issue 15's table for the 8B and 1B: llama-batched-bench and bench-llm at 1/8/32/64 streams.
# xtask-a is a2fe5e6's build (GEMV and float few-row GEMM loops with a branch around each
# unrolled step's or extra row's loads), xtask-t, kvc and rowk this commit's (branch-free:
# clamped indices, the contribution selected). Carry [.gl, .devbin].
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R target/m
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
(nice -n 10 bash .devbin/build_llama_cpp.sh $PWD/.devbin/llama-src.tar.xz $PWD/target/lc > $R/llama-build.txt 2>&1; touch target/lc.done) &
xz -dk .devbin/xtask-t.xz .devbin/xtask-a.xz .devbin/kvc.xz .devbin/rowk.xz; chmod +x .devbin/xtask-t .devbin/xtask-a .devbin/kvc .devbin/rowk
X=./.devbin/xtask-t
(cd .devbin && for m in e:llama8b-q4_k_m l:llama1b-q4_k_m g:gemma-3-270m-q4_k_m s:smollm2-135m-q4_1; do
  nice python3 gguf_rebuild.py ${m#*:}.skel ../target/m/${m%%:*}.gguf >/dev/null; touch ../target/m/${m%%:*}.done; done) &
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
save() { (cd $OUT && tar czf r.tgz r); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
timeout 120 ./.devbin/kvc > $R/kvc.txt 2>&1; echo "kvc rc=$? at $(el) s"; grep "test result\|panicked\|FAILED" $R/kvc.txt | head -5; save
timeout 40 ./.devbin/rowk > $R/rowk.txt 2>&1; echo "rowk rc=$? at $(el) s"; grep "test result\|panicked\|FAILED" $R/rowk.txt | head -5; save
gt() { timeout 40 ./.devbin/xtask-$1 bench --shapes large --tuned --json $R/gemv-tuned-$1$2.json > $R/gemv-tuned-$1$2.txt 2>&1; echo "gemv tuned $1$2 rc=$? at $(el) s"; save; }
gt a 1; gt t 1; gt a 2; gt t 2
export GPUPORT_BENCH_HOLD_MS=100
timeout 170 $X bench --shapes large --kernel gemv_q8 --wg 128,256 --lanes 4,8,16,32 --json $R/gemv-q8-sweep.json > $R/gemv-q8-sweep.txt 2>&1; echo "gemv_q8 sweep rc=$? at $(el) s"; save
timeout 40 $X bench --shapes large --kernel gemv --types f16,f32 --wg 128,256 --lanes 4,8,16,32 --json $R/gemv-f16-sweep.json > $R/gemv-f16-sweep.txt 2>&1; echo "f16 sweep rc=$? at $(el) s"; save
unset GPUPORT_BENCH_HOLD_MS
grep "best\|ceiling" $R/gemv-*.txt | head -40
while [ ! -e target/lc.done ] && [ $(el) -lt 400 ]; do sleep 2; done
echo "llama built at $(el) s"; tail -1 $R/llama-build.txt; save
bb() { [ -x target/lc/b/bin/llama-batched-bench ] || return; timeout 45 target/lc/b/bin/llama-batched-bench -m target/m/$1.gguf -ngl 99 -fa on -c 20480 -b 2048 -ub 512 -npp 128 -ntg 128 -npl 1,8,32,64 --output-format jsonl > $R/$1-bb.jsonl 2>$R/$1-bb.err; echo "bb $1 rc=$? at $(el) s"; grep -o '"pl": [0-9]*\|"speed_tg": [0-9.]*' $R/$1-bb.jsonl | tr '\n' ' '; echo; save; }
par() { while [ ! -e target/m/$1.done ]; do sleep 1; done; timeout 60 env $4 $X bench-llm target/m/$1.gguf --steps 8 --parallel $3 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-par-$2.json > $R/$1-par-$2.txt 2>&1; echo "$1 $3 $2 rc=$? at $(el) s: $(grep -o 'S_TG *[0-9.]* tok/s' $R/$1-par-$2.txt | paste -sd' ')"; save; }
for m in e l; do [ $(el) -lt 470 ] && { bb $m; par $m default 1,8,32,64 ""; }; done
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
