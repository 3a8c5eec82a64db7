#!/usr/bin/env bash
# H200 run (v16): engine streams in-process (bench-llm --parallel) vs the same work through
# `gpuport serve` + tools/serve_bench.py, two interleaved rounds per layout.
set -u
R=$OUT/r; mkdir -p $R
cd .devbin
for m in s:smollm2-135m-q4_1 g:gemma-3-270m-q4_k_m l:llama1b-q4_k_m; do
  python3 gguf_rebuild.py ${m#*:}.skel /tmp/${m%%:*}.gguf >/dev/null
done
cd ..
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
./.devbin/xtask bench-llm /tmp/s.gguf --steps 8 --gen-tokens 256 > $R/warm.txt 2>&1
wait_ready() {
  python3 - <<'PY'
import time, urllib.request
for _ in range(600):
    try:
        if urllib.request.urlopen("http://127.0.0.1:8080/health", timeout=2).status == 200:
            raise SystemExit(0)
    except Exception:
        pass
    time.sleep(0.2)
raise SystemExit(1)
PY
}
for m in s g l; do
  for round in 1 2; do
    ./.devbin/xtask bench-llm /tmp/$m.gguf --steps 8 --prompt-tokens 128 --gen-tokens 128 --parallel 1,64 --json $R/$m-inproc-$round.json > $R/$m-inproc-$round.txt 2>&1
    ./.devbin/gpuport serve /tmp/$m.gguf --max-seqs 64 --ctx 512 --decode-steps 8 --prefill-rows 2048 --port 8080 > $R/$m-serve-$round.log 2>&1 &
    SRV=$!
    wait_ready || echo "server not ready" >> $R/$m-serve-$round.log
    python3 tools/serve_bench.py --base-url http://127.0.0.1:8080 --streams 64 --prompt-tokens 128 --gen-tokens 128 --json $R/$m-http-$round.json > $R/$m-http-$round.txt 2>&1
    ps -o rss= -p $SRV >> $R/$m-serve-$round.rss
    kill $SRV; wait $SRV 2>/dev/null
  done
  (cd $OUT && tar czf all.tgz r)
done
kill $CLK
grep -h "streams\|first token" $R/*.txt
