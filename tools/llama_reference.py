"""Reference outputs of llama.cpp (through llama-cpp-python) for gpuport's executor tests.

    llama_reference.py generate MODEL.gguf STEPS TEXT...   greedy continuation of each text
    llama_reference.py tokenize MODEL.gguf TEXT...         token ids (with and without specials)

`generate` tokenizes each text with the model's own BOS rule and special-token parsing, runs
it, then takes STEPS greedy steps by argmax over llama.cpp's logits (no sampler chain, so no
hidden penalties), and prints JSON: per text the prompt ids, the generated ids, the margin
between the top two logits at each step, and the first step's logits in full.
"""
import json
import sys

import numpy as np
from llama_cpp import Llama


def load(path, n_ctx=1024):
    return Llama(model_path=path, n_ctx=n_ctx, n_batch=512, logits_all=True, verbose=False,
                 n_threads=2, seed=0)


def generate(path, steps, texts):
    llm = load(path)
    out = []
    for text in texts:
        prompt = llm.tokenize(text.encode(), add_bos=True, special=True)
        llm.reset()
        llm.eval(prompt)
        ids, margins, first = [], [], None
        for _ in range(steps):
            logits = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
            if first is None:
                first = logits.tolist()
            order = np.argsort(-logits, kind="stable")[:2]
            ids.append(int(order[0]))
            margins.append(float(logits[order[0]] - logits[order[1]]))
            llm.eval([int(order[0])])
        out.append({"text": text, "prompt": prompt, "ids": ids, "margins": margins,
                    "first_logits": first})
    json.dump(out, sys.stdout)


def tokenize(path, texts):
    llm = Llama(model_path=path, vocab_only=True, verbose=False)
    out = []
    for text in texts:
        b = text.encode()
        out.append({"text": text,
                    "plain": llm.tokenize(b, add_bos=False, special=False),
                    "special": llm.tokenize(b, add_bos=True, special=True)})
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    cmd, model = sys.argv[1], sys.argv[2]
    if cmd == "generate":
        generate(model, int(sys.argv[3]), sys.argv[4:])
    elif cmd == "tokenize":
        tokenize(model, sys.argv[3:])
    else:
        sys.exit(f"unknown command {cmd}")
