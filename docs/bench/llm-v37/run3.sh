#!/usr/bin/env bash
# Device call 2 of v37 as it ran (run2.sh did not fit the device time left after refused
# starts): no llama.cpp in this call — its ratios use call 1's llama-batched-bench figures,
# same card type (H100). The tensor-core GEMM's weights two chunks ahead (GPUPORT_COOP_FETCH=2,
# the default) against runs one chunk ahead (1, call 1's) and a step at a time (0); the f16
# cache's rounding fix on NVIDIA; the 8B/1B streams; their 32 streams on tensor cores; Gemma 3
# at depth 16k, f32 against f16. Build and carry as run1.sh says.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
xz -d .devbin/xtask-t.xz .devbin/rowk.xz .devbin/kvc.xz; chmod +x .devbin/xtask-t .devbin/rowk .devbin/kvc
X=./.devbin/xtask-t
(cd .devbin && for m in g:gemma-3-270m-q4_k_m l:llama1b-q4_k_m e:llama8b-q4_k_m; do
  python3 gguf_rebuild.py ${m#*:}.skel /tmp/${m%%:*}.gguf >/dev/null; done) &
G=$!
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
save() { (cd $OUT && tar czf r.tgz r); }
timeout 30 $X kernel-stats --filter gemm_coop,q4_K,XH=1 > $R/ks-q4_K.txt 2>&1; echo "ks rc=$? at $(el) s"; grep -o "^gemm_coop[^ ]*\|Register Count=[0-9]*" $R/ks-q4_K.txt | paste -sd' ' | sed 's/ gemm_coop/\ngemm_coop/g'
timeout 90 ./.devbin/kvc coop > $R/kvc-coop.txt 2>&1; echo "kvc coop rc=$? at $(el) s"; grep "test result\|panicked" $R/kvc-coop.txt | head -3
timeout 30 ./.devbin/rowk decode_attention > $R/rowk-decode.txt 2>&1; echo "rowk decode rc=$? at $(el) s"; grep "test result\|panicked" $R/rowk-decode.txt | head -2
save
gm() { timeout 40 env GPUPORT_COOP_FETCH=$3 $X bench --gemm-only --tuned --shapes llama --gemm-tokens $2 --json $R/t$2-f$3-$1.json > $R/t$2-f$3-$1.txt 2>&1; echo "t$2 fetch $3 $1 rc=$? at $(el) s: $(grep -v best $R/t$2-f$3-$1.txt | grep -o '[0-9.]* µs' | awk '{print $1}' | paste -sd' ')"; save; }
gm 1 64 2; gm 1 64 1; gm 1 64 0
gm 1 32 2
wait $G
par() { timeout 60 env $3 $X bench-llm /tmp/$1.gguf --steps 8 --parallel 8,32,64 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-par-$2.json > $R/$1-par-$2.txt 2>&1; echo "$1 par $2 rc=$? at $(el) s"; grep "S_TG" $R/$1-par-$2.txt; save; }
p32() { timeout 30 env GPUPORT_COOP_MIN_Q8_TOKENS=32 $X bench-llm /tmp/$1.gguf --steps 8 --parallel 32 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-p32-coop.json > $R/$1-p32-coop.txt 2>&1; echo "$1 32 streams on tensor cores rc=$? at $(el) s"; grep "S_TG" $R/$1-p32-coop.txt; save; }
par e f2 ""
[ $(el) -lt 200 ] && par l f2 ""
deep() { timeout 30 env GPUPORT_KV_TYPE=$2 $X bench-llm /tmp/g.gguf --steps 8 --prompt-tokens $1 --gen-tokens 128 --json $R/g-$1-$2.json > $R/g-$1-$2.txt 2>&1; echo "g depth $1 $2 rc=$? at $(el) s: $(grep -A1 'steps/submit' $R/g-$1-$2.txt | tail -1)"; save; }
for kv in f32 f16; do [ $(el) -lt 230 ] && deep 16384 $kv; done
[ $(el) -lt 250 ] && p32 e
[ $(el) -lt 260 ] && p32 l
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
