#!/usr/bin/env python3
"""Speed of `gpuport serve` through HTTP, in the terms of `cargo xtask bench-llm --parallel`
(the in-process engine figure), so the two can be divided:

- aggregate decode tok/s at N streams: N streaming /v1/completions of --prompt-tokens random
  token ids and --gen-tokens tokens each, sent together; generated tokens after each stream's
  first ÷ the time from the moment every stream has its first token until the last finishes
  (bench-llm's `decode_tokens_per_s`);
- time to first token at one stream: request sent → first text chunk read, against the
  server's own queue_ms + prefill_ms (`x_gpuport.timings` of the same request), whose
  difference is what HTTP, JSON and tokenization add.

    gpuport serve MODEL.gguf --max-seqs 64 --ctx 1024 --port 8080 &
    python3 tools/serve_bench.py --base-url http://127.0.0.1:8080 --streams 64 \
        --prompt-tokens 64 --gen-tokens 256 --json out.json

Only the standard library: the client must not be the bottleneck it measures (one thread per
stream, raw SSE lines). See docs/performance.md for the numbers and the in-process run to
compare with.
"""

import argparse
import http.client
import json
import random
import statistics
import sys
import threading
import time
import urllib.parse


def stream_once(host, port, key, body):
    """One streamed request: (sent, first text at, last event at, tokens, x_gpuport)."""
    c = http.client.HTTPConnection(host, port, timeout=600)
    headers = {"content-type": "application/json"}
    if key:
        headers["authorization"] = f"Bearer {key}"
    sent = time.perf_counter()
    c.request("POST", "/v1/completions", body=json.dumps(body), headers=headers)
    r = c.getresponse()
    if r.status != 200:
        raise RuntimeError(f"HTTP {r.status}: {r.read()[:300]!r}")
    first = last = None
    tokens = 0
    ext = {}
    while True:
        line = r.fp.readline()
        if not line:
            break
        if not line.startswith(b"data: "):
            continue
        data = line[6:].strip()
        if data == b"[DONE]":
            break
        ev = json.loads(data)
        if "error" in ev:
            raise RuntimeError(f"stream error: {ev['error']}")
        now = time.perf_counter()
        if ev.get("choices") and ev["choices"][0].get("text") and first is None:
            first = now
        if ev.get("usage"):
            tokens = ev["usage"]["completion_tokens"]
        if ev.get("x_gpuport"):
            ext = ev["x_gpuport"]
        last = now
    c.close()
    return sent, first or last, last, tokens, ext


def round_of(host, port, key, model, n, prompt_tokens, gen_tokens, temperature, max_id, seed):
    rng = random.Random(seed)
    bodies = [
        {
            "model": model,
            "prompt": [rng.randrange(100, max_id) for _ in range(prompt_tokens)],
            "max_tokens": gen_tokens,
            "temperature": temperature,
            "seed": i,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        for i in range(n)
    ]
    results = [None] * n
    errors = []
    go = threading.Barrier(n)

    def run(i):
        try:
            go.wait()
            results[i] = stream_once(host, port, key, bodies[i])
        except Exception as e:  # noqa: BLE001 - counted and printed
            errors.append(f"stream {i}: {e}")

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError(f"{len(errors)} streams failed: {errors[:3]}")
    all_first = max(r[1] for r in results)
    end = max(r[2] for r in results)
    start = min(r[0] for r in results)
    decoded = sum(max(r[3] - 1, 0) for r in results)
    return {
        "streams": n,
        "prompt_tokens": prompt_tokens,
        "gen_tokens": gen_tokens,
        "prefill_s": all_first - start,
        "decode_s": end - all_first,
        "decode_tokens_per_s": decoded / max(end - all_first, 1e-9),
        "tokens": sum(r[3] for r in results),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base-url", default="http://127.0.0.1:8080")
    ap.add_argument("--api-key")
    ap.add_argument("--model", help="default: the first of GET /v1/models")
    ap.add_argument("--streams", type=int, default=64)
    ap.add_argument("--prompt-tokens", type=int, default=64)
    ap.add_argument("--gen-tokens", type=int, default=256)
    ap.add_argument("--temperature", type=float, default=0.0)
    ap.add_argument("--max-id", type=int, default=10000, help="prompt ids are drawn below this")
    ap.add_argument("--ttft-trials", type=int, default=20)
    ap.add_argument("--json", help="write the report here")
    a = ap.parse_args()
    u = urllib.parse.urlparse(a.base_url)
    host, port = u.hostname, u.port or 80
    model = a.model
    if model is None:
        c = http.client.HTTPConnection(host, port)
        c.request("GET", "/v1/models", headers={"authorization": f"Bearer {a.api_key}"} if a.api_key else {})
        model = json.loads(c.getresponse().read())["data"][0]["id"]
    # Warm-up: every pipeline compiled, the pools touched.
    round_of(host, port, a.api_key, model, a.streams, a.prompt_tokens, min(a.gen_tokens, 16), a.temperature, a.max_id, 1)
    parallel = round_of(host, port, a.api_key, model, a.streams, a.prompt_tokens, a.gen_tokens, a.temperature, a.max_id, 2)
    print(
        f"{a.streams} streams: decode {parallel['decode_tokens_per_s']:.1f} tok/s aggregate "
        f"({parallel['decode_s']:.2f} s), prefill phase {parallel['prefill_s']:.2f} s"
    )
    client, server = [], []
    rng = random.Random(3)
    for i in range(a.ttft_trials):
        body = {
            "model": model,
            "prompt": [rng.randrange(100, a.max_id) for _ in range(a.prompt_tokens)],
            "max_tokens": 2,
            "temperature": a.temperature,
            "stream": True,
        }
        sent, first, _, _, ext = stream_once(host, port, a.api_key, body)
        t = ext.get("timings", {})
        client.append((first - sent) * 1e3)
        server.append(t.get("queue_ms", 0.0) + t.get("prefill_ms", 0.0))
    overhead = [c - s for c, s in zip(client, server)]
    ttft = {
        "trials": a.ttft_trials,
        "client_ttft_ms_p50": statistics.median(client),
        "engine_queue_plus_prefill_ms_p50": statistics.median(server),
        "http_overhead_ms_p50": statistics.median(overhead),
        "http_overhead_ms_max": max(overhead),
    }
    print(
        f"1 stream: time to first token {ttft['client_ttft_ms_p50']:.2f} ms through HTTP, "
        f"{ttft['engine_queue_plus_prefill_ms_p50']:.2f} ms in the engine "
        f"(HTTP adds {ttft['http_overhead_ms_p50']:.2f} ms p50, {ttft['http_overhead_ms_max']:.2f} ms max)"
    )
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"model": model, "parallel": parallel, "ttft": ttft}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
