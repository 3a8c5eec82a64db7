#!/usr/bin/env bash
# H200 run (v15): engine streams at 1/8/32/64 for four layouts, few-row GEMM threshold 8 vs 64.
set -u
R=$OUT/r; mkdir -p $R
cd .devbin
for m in s:smollm2-135m-q4_1 g:gemma-3-270m-q4_k_m l:llama1b-q4_k_m e:llama8b-q4_k_m; do
  python3 gguf_rebuild.py ${m#*:}.skel /tmp/${m%%:*}.gguf >/dev/null
done
cd ..
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
./.devbin/xtask-new bench-llm /tmp/s.gguf --steps 8 --gen-tokens 256 > $R/warm.txt 2>&1
for m in s g l e; do
  ./.devbin/xtask-new bench-llm /tmp/$m.gguf --steps 8 --prompt-tokens 128 --gen-tokens 128 --parallel 1,8,32,64 --json $R/$m-t8.json > $R/$m-t8.txt 2>&1
  ./.devbin/xtask-few64 bench-llm /tmp/$m.gguf --steps 8 --prompt-tokens 128 --gen-tokens 128 --parallel 16,32,64 --json $R/$m-t64.json > $R/$m-t64.txt 2>&1
  (cd $OUT && tar czf all.tgz r)
done
kill %1
grep -h "streams" $R/*-t*.txt
