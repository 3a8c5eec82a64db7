#!/usr/bin/env bash
# H200 call 2 (v30): the tensor-core GEMM reading its input formed and rounded to f16 once per
# GEMM (gemm_x16.wgsl; `x16` of GemmPath::Coop; GPUPORT_COOP_X16=0 turns it off) beside v29's
# head (d8c7bc5, "base") and llama.cpp CUDA built in the same call: the GEMM and tensor-core
# CPU tests (f16 input rows bit-equal to the kernel forming them), 512-token prompts of the
# 1B/8B shapes in two interleaved rounds (base / new / new with X16=0), the GEMM sweep at 512
# rows, the per-type GEMV table at 256 MB (bench --shapes large --tuned), llama-bench -p 512
# -n 128. Carry .gl and .devbin (xtask-base, xtask-new, kvc as .xz; skeletons,
# gguf_rebuild.py, build_llama_cpp.sh, llama-src.tar.xz).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
(bash .devbin/build_llama_cpp.sh $PWD/.devbin/llama-src.tar.xz /tmp/lc > $R/llama-build.txt 2>&1) &
B=$!
for b in .devbin/*.xz; do [ "$b" = .devbin/llama-src.tar.xz ] || xz -d "$b"; done; chmod +x .devbin/xtask-* .devbin/kvc
(cd .devbin && for m in l:llama1b-q4_k_m e:llama8b-q4_k_m; do
  python3 gguf_rebuild.py ${m#*:}.skel /tmp/${m%%:*}.gguf >/dev/null; done) &
G=$!
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
save() { (cd $OUT && tar czf r.tgz r); }
timeout 120 ./.devbin/kvc coop gemm > $R/kvc.txt 2>&1; echo "kvc rc=$? at $(el) s"; grep "test result\|panicked" $R/kvc.txt | head -3
wait $G; echo "rebuilt at $(el) s"
pre() { timeout 60 env $3 ./.devbin/xtask-$2 bench-llm /tmp/$1.gguf --steps 8 --prompt-tokens 512 --gen-tokens 128 --json $R/$1-pre-$2$4.json > $R/$1-pre-$2$4.txt 2>&1; echo "$1 pre $2$4 rc=$? at $(el) s"; grep -i "prefill\|^ *8 " $R/$1-pre-$2$4.txt | head -2; }
round() { for m in e l; do pre $m base X=1 "-$1"; pre $m new X=1 "-$1"; pre $m new GPUPORT_COOP_X16=0 "-f32x-$1"; done; save; }
round 1
timeout 150 ./.devbin/xtask-new bench --gemm-only --shapes llama --gemm-tokens 512 --json $R/sweep-512.json > $R/sweep-512.txt 2>&1; echo "sweep rc=$? at $(el) s"; grep "best" $R/sweep-512.txt; save
timeout 90 ./.devbin/xtask-new bench --shapes large --tuned --json $R/gemv-large.json > $R/gemv-large.txt 2>&1; echo "gemv rc=$? at $(el) s"; grep -i "ceiling\|ratio" $R/gemv-large.txt | head -30; save
while kill -0 $B 2>/dev/null && [ $(el) -lt 400 ]; do sleep 2; done
echo "llama built at $(el) s"; tail -1 $R/llama-build.txt
for m in e l; do timeout 70 /tmp/lc/b/bin/llama-bench -m /tmp/$m.gguf -ngl 99 -p 512 -n 128 -fa 1 -r 3 -o jsonl > $R/$m-lb.jsonl 2>$R/$m-lb.err; echo "lb $m rc=$? at $(el) s"; grep -o '"n_prompt": [0-9]*\|"n_gen": [0-9]*\|"avg_ts": [0-9.]*' $R/$m-lb.jsonl | paste -sd' '; done
save
[ $(el) -lt 460 ] && round 2
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
