#!/usr/bin/env bash
# H200 run (v17): the int8-input GEMV for every block type. GEMV ratio per type at 256 MB;
# batch-1 decode and prefill 512 of the Llama-1B/8B shapes, old (a793a10) and new (0f43341)
# binaries interleaved, beside llama.cpp CUDA (llama-bench) in the same call.
set -u
R=$OUT/r; mkdir -p $R
bash .devbin/build_llama_cpp.sh $PWD/.devbin/llama-src.tar.xz /tmp/llama > $R/llama-build.log 2>&1 &
BUILD=$!
cd .devbin
for m in l:llama1b-q4_k_m e:llama8b-q4_k_m; do
  python3 gguf_rebuild.py ${m#*:}.skel /tmp/${m%%:*}.gguf >/dev/null
done
cd ..
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
./.devbin/xtask bench-llm /tmp/l.gguf --steps 8 --gen-tokens 512 > $R/warm.txt 2>&1
./.devbin/xtask bench --shapes large --json $R/gemv.json > $R/gemv.txt 2>&1
(cd $OUT && tar czf all.tgz r)
wait $BUILD
LB=/tmp/llama/b/bin/llama-bench
for round in 1 2; do
  for m in l e; do
    ./.devbin/xtask-old bench-llm /tmp/$m.gguf --steps 8 --prompt-tokens 512 --gen-tokens 128 --json $R/$m-old-$round.json > $R/$m-old-$round.txt 2>&1
    ./.devbin/xtask bench-llm /tmp/$m.gguf --steps 8 --prompt-tokens 512 --gen-tokens 128 --json $R/$m-new-$round.json > $R/$m-new-$round.txt 2>&1
    $LB -m /tmp/$m.gguf -ngl 99 -p 512 -n 128 -fa 1 -r 3 -o jsonl > $R/$m-llama-$round.jsonl 2> $R/$m-llama-$round.err
  done
  (cd $OUT && tar czf all.tgz r)
done
kill $CLK
grep -h "tok/s" $R/*-old-*.txt $R/*-new-*.txt | head -40
grep -h "avg_ts" $R/*-llama-*.jsonl | python3 -c "
import sys, json
for l in sys.stdin:
    d = json.loads(l); print(d['model_filename'], d['n_prompt'], d['n_gen'], round(d['avg_ts'], 1))"
tail -30 $R/gemv.txt
