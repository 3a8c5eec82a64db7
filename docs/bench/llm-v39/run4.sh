#!/usr/bin/env bash
# v39 call 4 (the session's last ~300 s of device time; b3ec2e1's binary, as call 3): the
# row-table attention in blocks of 16 keys (8 at head dim 256) end to end before it is the
# default (18e7f24) — the same binary with GPUPORT_ROW_KEYS=16 (Gemma 3: 8) against its 32
# (Gemma 3: 16), interleaved, most telling first (the 8B at 64 streams), saved after each.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
xz -dk .devbin/xtask-t.xz; chmod +x .devbin/xtask-t
X=./.devbin/xtask-t
(cd .devbin && for m in e:llama8b-q4_k_m l:llama1b-q4_k_m s:smollm2-135m-q4_1 g:gemma-3-270m-q4_k_m; do
  python3 gguf_rebuild.py ${m#*:}.skel /tmp/${m%%:*}.gguf >/dev/null; touch /tmp/${m%%:*}.done; done) &
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
save() { (cd $OUT && tar czf r.tgz r); }
par() { while [ ! -e /tmp/$1.done ]; do sleep 1; done; timeout 40 env $4 $X bench-llm /tmp/$1.gguf --steps 8 --parallel $3 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-$3-$2.json > $R/$1-$3-$2.txt 2>&1; echo "$1 $3 $2 rc=$? at $(el) s: $(grep -o 'S_TG *[0-9.]* tok/s' $R/$1-$3-$2.txt | paste -sd' ')"; save; }
par e kb32 64 ""; par e kb16 64 GPUPORT_ROW_KEYS=16
par e kb32b 32 ""; par e kb16b 32 GPUPORT_ROW_KEYS=16
par l kb32 64 ""; par l kb16 64 GPUPORT_ROW_KEYS=16
par s kb32 64 ""; par s kb16 64 GPUPORT_ROW_KEYS=16
par g kb16 64 ""; par g kb8 64 GPUPORT_ROW_KEYS=8
par e kb16c 64 GPUPORT_ROW_KEYS=16; par e kb32c 64 ""
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
