#!/usr/bin/env bash
# v38 call 1 (no llama.cpp; ~6 minutes): what v37 left unmeasured, and v38's Q4_K chunks of
# 64 columns. 1. kvc coop (every type, tile and fetch against the CPU, KC 64 against KC 32)
# and rowk decode_attention (the f16 cache's integer rounding on NVIDIA); 2. kernel-stats of
# the tensor-core GEMM (Q4_K and Q6_K, every fetch and chunk width); 3. GEMMs of the Llama
# shapes at 64 rows — fetch 2 / 1 / 0 and KC 64 with fetch 1 / 2, interleaved twice — and at
# 32 rows; 4. Gemma 3 after 16,384 prompt tokens, f32 against f16 caches; 5. the 8B's
# streams: fetch 1 (the default), fetch 2, KC 64.
# Build: cargo build --release -p gpuport-xtask; cargo test --release -p gpuport-runtime
# --test row_kernels --test kernels_vs_cpu --no-run; strip them to .devbin/{xtask-t,rowk,kvc};
# xz -T2 the three; carry [".gl", ".devbin"] (the skeletons and gguf_rebuild.py from
# ../shared/tools/gguf-skeleton/ copied into .devbin).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
xz -d .devbin/xtask-t.xz .devbin/rowk.xz .devbin/kvc.xz; chmod +x .devbin/xtask-t .devbin/rowk .devbin/kvc
X=./.devbin/xtask-t
(cd .devbin && for m in g:gemma-3-270m-q4_k_m e:llama8b-q4_k_m; do
  python3 gguf_rebuild.py ${m#*:}.skel /tmp/${m%%:*}.gguf >/dev/null; done) &
G=$!
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
save() { (cd $OUT && tar czf r.tgz r); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 90 ./.devbin/kvc coop > $R/kvc-coop.txt 2>&1; echo "kvc coop rc=$? at $(el) s"; grep "test result\|panicked" $R/kvc-coop.txt | head -3
timeout 30 ./.devbin/rowk decode_attention > $R/rowk-decode.txt 2>&1; echo "rowk decode rc=$? at $(el) s"; grep "test result\|panicked" $R/rowk-decode.txt | head -2
save
for ty in q4_K q6_K; do timeout 40 $X kernel-stats --filter gemm_coop,$ty,XH=1 > $R/ks-$ty.txt 2>&1; echo "ks $ty rc=$? at $(el) s"; grep -o "^gemm_coop[^ ]*\|Register Count=[0-9]*" $R/ks-$ty.txt | paste -sd' ' | sed 's/ gemm_coop/\ngemm_coop/g'; done
save
gm() { timeout 40 env GPUPORT_COOP_FETCH=$3 GPUPORT_COOP_KC=$4 $X bench --gemm-only --tuned --shapes llama --gemm-tokens $2 --json $R/t$2-f$3-k$4-$1.json > $R/t$2-f$3-k$4-$1.txt 2>&1; echo "t$2 fetch $3 kc $4 #$1 rc=$? at $(el) s: $(grep -v best $R/t$2-f$3-k$4-$1.txt | grep -o '[0-9.]* µs' | awk '{print $1}' | paste -sd' ')"; save; }
for i in 1 2; do gm $i 64 1 32; gm $i 64 2 32; gm $i 64 1 64; gm $i 64 2 64; gm $i 64 0 32; done
gm 1 32 1 32; gm 1 32 2 64
wait $G
deep() { timeout 45 env GPUPORT_KV_TYPE=$2 $X bench-llm /tmp/g.gguf --steps 8 --prompt-tokens $1 --gen-tokens 128 --json $R/g-$1-$2.json > $R/g-$1-$2.txt 2>&1; echo "g depth $1 $2 rc=$? at $(el) s: $(grep -A1 'steps/submit' $R/g-$1-$2.txt | tail -1)"; save; }
for kv in f32 f16 f32 f16; do [ $(el) -lt 300 ] && deep 16384 $kv; done
par() { timeout 60 env GPUPORT_COOP_FETCH=$2 GPUPORT_COOP_KC=$3 $X bench-llm /tmp/e.gguf --steps 8 --parallel 8,32,64 --prompt-tokens 128 --gen-tokens 128 --json $R/e-par-f$2-k$3.json > $R/e-par-f$2-k$3.txt 2>&1; echo "e par fetch $2 kc $3 rc=$? at $(el) s"; grep "S_TG" $R/e-par-f$2-k$3.txt; save; }
[ $(el) -lt 380 ] && par 1 32
[ $(el) -lt 420 ] && par 2 32
[ $(el) -lt 460 ] && par 1 64
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
