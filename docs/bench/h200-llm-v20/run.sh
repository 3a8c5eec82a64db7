#!/usr/bin/env bash
# H200 run (gemv-named-acc): old (2636d2e-era gemv) vs new (named accumulators) interleaved:
# bench-llm decode/prefill of the Llama-1B and 8B shapes, then the GEMV sweep for q4_K/q6_K.
set -u
R=$OUT/r; mkdir -p $R
cd .devbin
python3 gguf_rebuild.py llama1b-q4_k_m.skel /tmp/l.gguf >/dev/null
python3 gguf_rebuild.py llama8b-q4_k_m.skel /tmp/e.gguf >/dev/null
cd ..
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
timeout 60 ./.devbin/xtask bench-llm /tmp/l.gguf --steps 8 --gen-tokens 256 > $R/warm.txt 2>&1
for round in 1 2; do
  for m in l e; do
    for b in old new; do
      x=./.devbin/xtask; [ $b = old ] && x=./.devbin/xtask-old
      timeout 120 $x bench-llm /tmp/$m.gguf --steps 8 --prompt-tokens 512 --gen-tokens 128 --json $R/$m-$b-$round.json > $R/$m-$b-$round.txt 2>&1
    done
  done
done
for b in old new; do
  x=./.devbin/xtask; [ $b = old ] && x=./.devbin/xtask-old
  timeout 150 $x bench --shapes large --types q4_K,q6_K --json $R/gemv-$b.json > $R/gemv-$b.txt 2>&1
done
kill $CLK
for f in $R/[le]-*.json; do python3 -c "
import json; d=json.load(open('$f')); x=d['decode'][0]; print('$f'.split('/')[-1], 'prefill', round(d['prefill_tokens_per_s'],1), 'decode', round(x['tokens_per_s'],1), 'gpu_ms/tok', round(x['gpu_ms_per_token'],3))"; done
tail -n 25 $R/gemv-old.txt $R/gemv-new.txt
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
cd $OUT && tar czf r.tgz r && rm -rf r
