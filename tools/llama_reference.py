"""Reference outputs of llama.cpp (through llama-cpp-python 0.3.36, built from its source
distribution) for gpuport's executor tests; written as small JSON fixtures that the tests read.

    llama_reference.py corpus OUT.json                   write the tokenizer corpus (>= 200 strings)
    llama_reference.py tokenize MODEL.gguf CORPUS OUT    token ids of every corpus string
    llama_reference.py generate MODEL.gguf STEPS OUT TEXT...

`tokenize` records, per string, the ids without specials (add_special=False, special=False) and
with BOS by the model's flag and control-token parsing (add_special=True, special=True).
`generate` tokenizes each text with BOS and special parsing, runs it, and takes STEPS greedy steps
by argmax over llama.cpp's logits (no sampler chain, so no hidden penalties); per text it records
the prompt ids, the generated ids, the margin between the top two logits at each step, and the
ten largest logits (id, value) after the prompt. The KV cache is f32, as gpuport's is.
"""
import json
import random
import sys

import numpy as np
from llama_cpp import Llama


def corpus():
    """Varied strings: prose, unicode scripts, code, whitespace runs, numbers, special-token
    text, and seeded random mixtures of all of them."""
    base = [
        "Hello world", "The capital of France is Paris.", "  leading spaces and trailing   ",
        "multiple\n\nnewlines\n\n\n and\ttabs\r\nCRLF", "numbers 1234567 and 3.14159, 2024-11-29",
        "contractions: don't, I'll, we've, she'd, THEY'RE", "ÀÉÎÕÜ ñ ç ß Ωμέγα Привет мир",
        "日本語のテキストと中文文本", "emoji 😀👍🏽 family 👨‍👩‍👧 flags 🇫🇷",
        "fn main() {\n    println!(\"hi {}\", x + 1); // ok\n}",
        "<|im_start|>user\nWrite a haiku.<|im_end|>\n<|im_start|>assistant\n",
        "<start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n",
        "mixed<|endoftext|>text<bos>and<eos>", "", " ", "a", "\u2581already escaped\u2581",
        "x\u0300\u0301 combining, zero\u200bwidth, nbsp\u00a0here",
    ]
    words = ["the", "quick", "brown", "fox", "GPU", "tensor", "naïve", "café", "straße", "東京",
             "서울", "Москва", "القاهرة", "मुंबई", "ทดสอบ", "🙂", "🚀", "λ", "∑", "≠", "—", "…",
             "don't", "it's", "x86_64", "0x1F", "1e-9", "42", "3.0", "100%", "$5", "#tag",
             "@user", "http://a.b/c?d=e", "snake_case", "camelCase", "<b>", "</b>", "{}", "[]",
             "()", "=>", "::", "&&", "||", "'", "\"", "\\", "`", "~"]
    specials = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<bos>", "<eos>",
                "<start_of_turn>", "<end_of_turn>", "<pad>", "<unk>"]
    spaces = [" ", "  ", "   ", "\t", "\n", "\n\n", " \n", "\r\n", "\u3000", "\u00a0"]
    code = ["def f(x):\n    return x * 2\n", "for (int i = 0; i < n; ++i) { a[i] += 1; }",
            "SELECT * FROM t WHERE id = 7;", "let v: Vec<u32> = (0..10).collect();",
            "<div class=\"x\">hi</div>", "{\"key\": [1, 2, {\"n\": null}]}",
            "#include <stdio.h>\nint main(void) { return 0; }", "    indented\n\tmixed\n  "]
    rng = random.Random(20261129)
    out = list(base) + code
    for n in range(1, 25):
        out.append(" ".join(str(rng.randrange(10 ** rng.randrange(1, 12))) for _ in range(n % 5 + 1)))
    for s in spaces:
        out.append(f"a{s}b{s}{s}c{s}")
    for sp in specials:
        out.append(f"before{sp}after")
        out.append(f" {sp} spaced {sp}")
    while len(out) < 240:
        parts = []
        for _ in range(rng.randrange(1, 12)):
            r = rng.random()
            if r < 0.6:
                parts.append(rng.choice(words))
            elif r < 0.75:
                parts.append(rng.choice(spaces))
            elif r < 0.85:
                parts.append(rng.choice(specials))
            elif r < 0.93:
                parts.append(rng.choice(code))
            else:
                parts.append(chr(rng.choice([rng.randrange(0x20, 0x7f), rng.randrange(0xa0, 0x2000),
                                             rng.randrange(0x3000, 0xa000),
                                             rng.randrange(0x1f300, 0x1fa00)])))
            if rng.random() < 0.7:
                parts.append(" ")
        out.append("".join(parts))
    return out


def tokenize(path, corpus_path, out_path):
    texts = json.load(open(corpus_path, encoding="utf-8"))
    llm = Llama(model_path=path, vocab_only=True, verbose=False)
    cases = []
    for text in texts:
        b = text.encode()
        cases.append({"plain": llm.tokenize(b, add_bos=False, special=False),
                      "special": llm.tokenize(b, add_bos=True, special=True)})
    write(out_path, {"llama_cpp_python": "0.3.36", "corpus": corpus_path.split("/")[-1],
                     "cases": cases})


def generate(path, steps, out_path, texts):
    # KV cache in f32 (type 0) like gpuport's, rather than llama.cpp's default f16.
    llm = Llama(model_path=path, n_ctx=1024, n_batch=512, logits_all=True, verbose=False,
                n_threads=2, seed=0, type_k=0, type_v=0)
    cases = []
    for text in texts:
        prompt = llm.tokenize(text.encode(), add_bos=True, special=True)
        llm.reset()
        llm.eval(prompt)
        ids, margins, top = [], [], None
        for _ in range(steps):
            logits = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
            order = np.argsort(-logits, kind="stable")[:10]
            if top is None:
                top = [[int(i), float(logits[i])] for i in order]
            ids.append(int(order[0]))
            margins.append(round(float(logits[order[0]] - logits[order[1]]), 4))
            llm.eval([int(order[0])])
        cases.append({"text": text, "prompt": prompt, "ids": ids, "margins": margins,
                      "top10": top})
    write(out_path, {"llama_cpp_python": "0.3.36", "cases": cases})


def write(path, value):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "corpus":
        write(sys.argv[2], corpus())
    elif cmd == "tokenize":
        tokenize(sys.argv[2], sys.argv[3], sys.argv[4])
    elif cmd == "generate":
        generate(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5:])
    else:
        sys.exit(f"unknown command {cmd}")
