#!/usr/bin/env python3
"""How closely llama.cpp agrees with itself: the fixture's prompts (tools/llama_reference.py
generate) re-run through llama-cpp-python with other settings that change only its kernels'
arithmetic (threads, batch size, KV cache type), each variant's 32 greedy tokens compared with
the fixture's and its top-10 logits' largest difference. gpuport's agreement with llama.cpp
(llm/tests/llm_reference.rs) can be read against this floor.

    python3 tools/llama_self_agreement.py MODEL.gguf llm/tests/fixtures/llama_cpp/qwen2_greedy.json
"""

import json
import sys

import numpy as np
from llama_cpp import Llama

# The fixture's settings first (they must reproduce it exactly), then one change each.
VARIANTS = {
    "fixture settings": dict(n_batch=512, n_threads=2, type_k=0, type_v=0),
    "n_threads=1": dict(n_batch=512, n_threads=1, type_k=0, type_v=0),
    "n_batch=8": dict(n_batch=8, n_ubatch=8, n_threads=2, type_k=0, type_v=0),
    "n_batch=1": dict(n_batch=1, n_ubatch=1, n_threads=2, type_k=0, type_v=0),
    "f16 KV cache": dict(n_batch=512, n_threads=2),
}


def main(model, fixture_path):
    fixture = json.load(open(fixture_path))
    report = {}
    for name, settings in VARIANTS.items():
        llm = Llama(model_path=model, n_ctx=1024, logits_all=True, verbose=False, seed=0, **settings)
        rows = []
        for case in fixture["cases"]:
            llm.reset()
            llm.eval(case["prompt"])
            ids, worst = [], None
            for _ in range(len(case["ids"])):
                logits = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
                if worst is None:
                    worst = max(abs(float(logits[i]) - v) for i, v in case["top10"])
                ids.append(int(np.argmax(logits)))
                llm.eval([ids[-1]])
            same = next((k for k, (a, b) in enumerate(zip(ids, case["ids"])) if a != b), len(ids))
            rows.append({"text": case["text"], "equal_tokens": same, "top10_max_diff": round(worst, 4)})
        identical = sum(r["equal_tokens"] == len(c["ids"]) for r, c in zip(rows, fixture["cases"]))
        print(f"{name}: {identical}/{len(rows)} identical; "
              + ", ".join(f"{r['equal_tokens']} ({r['top10_max_diff']:.3f})" for r in rows), flush=True)
        report[name] = rows
    json.dump(report, sys.stdout if len(sys.argv) < 4 else open(sys.argv[3], "w"), indent=1)
    print()


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
