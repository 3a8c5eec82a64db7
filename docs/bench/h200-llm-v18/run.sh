#!/usr/bin/env bash
# H200 run (v18): int8 input for stacks of >= 8 MB (norm, then the int8 blocks), old (18db9c5)
# vs new binary interleaved, batch-1 decode and prefill 512 of the Llama-1B/8B shapes.
set -u
R=$OUT/r; mkdir -p $R
cd .devbin
for m in l:llama1b-q4_k_m e:llama8b-q4_k_m; do
  python3 gguf_rebuild.py ${m#*:}.skel /tmp/${m%%:*}.gguf >/dev/null
done
cd ..
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
./.devbin/xtask bench-llm /tmp/l.gguf --steps 8 --gen-tokens 512 > $R/warm.txt 2>&1
for round in 1 2; do
  for m in l e; do
    ./.devbin/xtask-old bench-llm /tmp/$m.gguf --steps 8 --prompt-tokens 512 --gen-tokens 128 --json $R/$m-old-$round.json > $R/$m-old-$round.txt 2>&1
    ./.devbin/xtask bench-llm /tmp/$m.gguf --steps 8 --prompt-tokens 512 --gen-tokens 128 --json $R/$m-new-$round.json > $R/$m-new-$round.txt 2>&1
  done
  (cd $OUT && tar czf all.tgz r)
done
kill $CLK
for f in $R/*-old-*.json $R/*-new-*.json; do python3 -c "
import json,sys; d=json.load(open('$f')); x=d['decode'][0]; print('$f'.split('/')[-1], round(d['prefill_tokens_per_s'],1), round(x['tokens_per_s'],1), round(x['gpu_ms_per_token'],3))"; done
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
