#!/usr/bin/env bash
# H200 run (coop-3): prefill 512, tensor-core GEMM vs tiled (GPUPORT_COOP=0), same binary.
set -u
R=$OUT/r; mkdir -p $R
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -s /tmp/e.gguf ] || (cd .devbin && python3 gguf_rebuild.py llama8b-q4_k_m.skel /tmp/e.gguf >/dev/null)
[ -s /tmp/l.gguf ] || (cd .devbin && python3 gguf_rebuild.py llama1b-q4_k_m.skel /tmp/l.gguf >/dev/null)
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
for r in e-coop e-tiled l-tiled l-coop; do
  if [ ${r#*-} = tiled ]; then export GPUPORT_COOP=0; else unset GPUPORT_COOP; fi
  timeout 55 ./.devbin/xtask bench-llm /tmp/${r%-*}.gguf --steps 8 --prompt-tokens 512 --gen-tokens 16 --json $R/$r.json > $R/$r.txt 2>&1
  echo "$r rc=$?"; grep -i "prefill\|error" $R/$r.txt | head -3
done
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
cd $OUT && tar czf r.tgz r && rm -rf r
