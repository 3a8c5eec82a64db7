#!/usr/bin/env bash
# v43 call 3: the H100 tuning entry (gemv_q8 per type from call 1's sweep: 32 lanes a row).
# xtask-t is 762b5a2's build (no H100 entry: the int8 GEMV at its defaults, 8 lanes a row,
# Q8_0 4), xtask-n this commit's (the entry; the tiled GEMM's test on the tiled kernel). The
# GEMV table at 256 MB as decode runs it, both builds interleaved; the tiled GEMM's test on the
# GPU; then bench-llm at 1 and 8 streams, both builds interleaved, for the four models (files
# rebuilt here if the machine is fresh). Carry [.gl, .devbin].
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R target/m
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
xz -dkf .devbin/xtask-t.xz .devbin/xtask-n.xz .devbin/kvc.xz; chmod +x .devbin/xtask-t .devbin/xtask-n .devbin/kvc
(cd .devbin && for m in l:llama1b-q4_k_m e:llama8b-q4_k_m s:smollm2-135m-q4_1 g:gemma-3-270m-q4_k_m; do
  [ -e ../target/m/${m%%:*}.done ] || nice python3 gguf_rebuild.py ${m#*:}.skel ../target/m/${m%%:*}.gguf >/dev/null; touch ../target/m/${m%%:*}.done; done) &
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
save() { (cd $OUT && tar czf r.tgz r); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
gt() { timeout 40 ./.devbin/xtask-$1 bench --shapes large --tuned --kernel gemv_q8 --json $R/gemv-tuned-$1$2.json > $R/gemv-tuned-$1$2.txt 2>&1; echo "gemv_q8 tuned $1$2 rc=$? at $(el) s"; grep large $R/gemv-tuned-$1$2.txt | awk '{print $3, $8}' | paste -sd' '; save; }
gt t 1; gt n 1; gt t 2; gt n 2
timeout 60 ./.devbin/kvc gemm_matches_cpu_for_every_type > $R/kvc-gemm.txt 2>&1; echo "kvc gemm rc=$? at $(el) s"; grep "test result\|panicked" $R/kvc-gemm.txt | head -3; save
par() { while [ ! -e target/m/$1.done ]; do sleep 1; done; timeout 50 ./.devbin/xtask-$2 bench-llm target/m/$1.gguf --steps 8 --parallel 1,8 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-par-$2$3.json > $R/$1-par-$2$3.txt 2>&1; echo "$1 $2$3 rc=$? at $(el) s: $(grep -o 'S_TG *[0-9.]* tok/s' $R/$1-par-$2$3.txt | paste -sd' ')"; save; }
for m in l e s g; do [ $(el) -lt 330 ] && par $m t 1 && par $m n 1; done
for m in e l; do [ $(el) -lt 360 ] && par $m n 2 && par $m t 2; done
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
