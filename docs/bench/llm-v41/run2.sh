#!/usr/bin/env bash
# v41 call 2 (a fresh machine): call 1's split sweep found batched decode's gate|up GEMMs
# fastest whole and q|k|v at 5 splits (the rule rounding up gave 2 and 6). The decode split
# rule (ops::COOP_SPLIT_DECODE_ROWS) against the rule before (GPUPORT_COOP_DECODE_SPLITS=0),
# interleaved, two rounds, 32 and 64 streams of the 1B and 8B. Carry [.gl, .devbin].
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
xz -dk .devbin/xtask-t.xz; chmod +x .devbin/xtask-t
X=./.devbin/xtask-t
(cd .devbin && for m in l:llama1b-q4_k_m e:llama8b-q4_k_m; do
  python3 gguf_rebuild.py ${m#*:}.skel /tmp/${m%%:*}.gguf >/dev/null; touch /tmp/${m%%:*}.done; done) &
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
save() { (cd $OUT && tar czf r.tgz r); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
par() { while [ ! -e /tmp/$1.done ]; do sleep 1; done; timeout 60 env $3 $X bench-llm /tmp/$1.gguf --steps 8 --parallel 32,64 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-$2.json > $R/$1-$2.txt 2>&1; echo "$1 $2 rc=$? at $(el) s: $(grep -o 'S_TG *[0-9.]* tok/s' $R/$1-$2.txt | paste -sd' ')"; save; }
for i in 1 2; do
  for m in l e; do par $m new$i ""; par $m old$i GPUPORT_COOP_DECODE_SPLITS=0; done
done
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
