#!/usr/bin/env bash
# H200 call 1 (v33): where the tensor-core GEMM's time goes at batched-decode sizes. One
# binary with experimental override knobs (GPUPORT_COOP_X; built from branch exp/coop-knobs): PERM 1 (a chunk's columns stored
# permuted, so a store instruction's lanes write consecutive halves), WH4 1 (Q4_K's block head
# read as one vec4), PROBE 1-7 (parts of the work removed: 1 weight loads and decode, 2 and
# their stores, 3 input loads, 4 and their stores, 5 all but one multiply-add a step, 6 = 1+3,
# 7 = 2+4). `kvc coop` with and without the knobs; `bench --gemm-only --tuned --shapes llama
# --gemm-tokens 64` per knob set (the path a forward takes); bench-llm --batch 32,64 on the
# 1B/8B with and without PERM+WH4.
# Carry .gl and .devbin (xtask-x, kvc as .xz; skeletons, gguf_rebuild.py).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for b in xtask-x kvc; do xz -d .devbin/$b.xz; chmod +x .devbin/$b; done
(cd .devbin && for m in l:llama1b-q4_k_m e:llama8b-q4_k_m; do
  python3 gguf_rebuild.py ${m#*:}.skel /tmp/${m%%:*}.gguf >/dev/null; done) &
G=$!
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
save() { (cd $OUT && tar czf r.tgz r); }
X=./.devbin/xtask-x
kvc() { timeout 60 env GPUPORT_COOP_X=$2 ./.devbin/kvc coop > $R/kvc-$1.txt 2>&1; echo "kvc $1 rc=$? at $(el) s"; grep "test result\|panicked" $R/kvc-$1.txt | head -3; save; }
kvc base ""
kvc pw PERM=1,WH4=1
# g TAG KNOBS TOKENS: the forward's GEMM paths at the llama shapes
g() { timeout 60 env GPUPORT_COOP_X=$2 $X bench --gemm-only --tuned --shapes llama --gemm-tokens $3 --json $R/g$3-$1.json > $R/g$3-$1.txt 2>&1; echo "g$3 $1 rc=$? at $(el) s: $(grep -o '[0-9.]* µs' $R/g$3-$1.txt | paste -sd' ')"; save; }
g warm "" 64; g warm2 "" 64
g base "" 64; g perm PERM=1 64; g wh4 WH4=1 64; g pw PERM=1,WH4=1 64
for k in 1 2 3 4 5 6 7; do g probe$k PROBE=$k 64; done
g base2 "" 64; g pw2 PERM=1,WH4=1 64
g base "" 32; g pw PERM=1,WH4=1 32
save
wait $G; echo "rebuilt at $(el) s"
bat() { timeout 70 env GPUPORT_COOP_X=$3 $X bench-llm /tmp/$1.gguf --steps 8 --prompt-tokens 64 --gen-tokens 64 --batch 32,64 --json $R/$1-bat-$2.json > $R/$1-bat-$2.txt 2>&1; echo "$1 bat $2 rc=$? at $(el) s: $(grep 'batch of' $R/$1-bat-$2.txt | awk '{print $3, $4}' | paste -sd' ')"; save; }
for m in e l; do [ $(el) -lt 450 ] && bat $m base ""; [ $(el) -lt 480 ] && bat $m pw PERM=1,WH4=1; done
for m in e l; do [ $(el) -lt 510 ] && bat $m base2 ""; [ $(el) -lt 540 ] && bat $m pw2 PERM=1,WH4=1; done
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
