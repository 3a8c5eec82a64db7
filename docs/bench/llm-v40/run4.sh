#!/usr/bin/env bash
# v40 call 4 (the session's last ~300 s, a fresh machine): bench-llm's warm-up round now as
# long as the measured one, and the pipelines compiled during the measured round counted
# (`compiled_while_measured`). Does 1 and 8 streams' shortfall on the small models (call 2:
# Gemma 3 2,792 tok/s at 8 streams, 3,959-4,018 in call 3 with pipelines cached) go? Models
# smallest first, each saved as it ends. Carry [.gl, .devbin].
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
xz -dk .devbin/xtask-t.xz; chmod +x .devbin/xtask-t
X=./.devbin/xtask-t
(cd .devbin && for m in g:gemma-3-270m-q4_k_m s:smollm2-135m-q4_1 l:llama1b-q4_k_m e:llama8b-q4_k_m; do
  python3 gguf_rebuild.py ${m#*:}.skel /tmp/${m%%:*}.gguf >/dev/null; touch /tmp/${m%%:*}.done; done) &
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
export GPUPORT_REQUIRE_GPU=1
save() { (cd $OUT && tar czf r.tgz r); }
par() { while [ ! -e /tmp/$1.done ]; do sleep 1; done; timeout 40 $X bench-llm /tmp/$1.gguf --steps 8 --parallel 1,8 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-$2.json > $R/$1-$2.txt 2>&1; echo "$1 $2 rc=$? at $(el) s"; grep "streams\|compiled" $R/$1-$2.txt; save; }
par g a; par s a; par g b; par l a; par e a
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save
