#!/usr/bin/env python3
"""Writes kernels/tests/fixtures/dequant_reference.json: random GGUF blocks of every type gpuport
executes, with their dequantized values computed by gguf-py (`gguf.quants.dequantize`, the
reference implementation shipped with llama.cpp), so the Rust CPU reference is checked against an
independent one. Scales are random finite f16 of model-like magnitude; other bytes are uniform.
Deterministic (fixed seed)."""

import json
from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf.quants import dequantize

OUT = Path(__file__).resolve().parent.parent / "kernels" / "tests" / "fixtures" / "dequant_reference.json"
BLOCKS = 6
# name -> (ggml type, block bytes, byte offsets of f16 scale fields)
TYPES = {
    "f32": (T.F32, 4, []),
    "f16": (T.F16, 2, [0]),
    "q4_0": (T.Q4_0, 18, [0]),
    "q4_1": (T.Q4_1, 20, [0, 2]),
    "q5_0": (T.Q5_0, 22, [0]),
    "q5_1": (T.Q5_1, 24, [0, 2]),
    "q8_0": (T.Q8_0, 34, [0]),
    "q4_K": (T.Q4_K, 144, [0, 2]),
    "q5_K": (T.Q5_K, 176, [0, 2]),
    "q6_K": (T.Q6_K, 210, [208]),
}

rng = np.random.default_rng(20261129)
fixture = {}
for name, (ty, size, f16_at) in TYPES.items():
    count = BLOCKS * (64 if size <= 4 else 1)
    raw = bytearray(rng.integers(0, 256, size=count * size, dtype=np.uint8).tobytes())
    if ty == T.F32:
        raw = bytearray((rng.standard_normal(count) * 3).astype("<f4").tobytes())
    for b in range(count):
        for off in f16_at:
            v = np.float16(rng.standard_normal() * 0.02)
            raw[b * size + off : b * size + off + 2] = v.tobytes()
    values = dequantize(np.frombuffer(bytes(raw), dtype=np.uint8), ty).astype(np.float32).reshape(-1)
    fixture[name] = {"raw": bytes(raw).hex(), "values": [float(x) for x in values]}

OUT.parent.mkdir(parents=True, exist_ok=True)
OUT.write_text(json.dumps(fixture) + "\n")
print(OUT, OUT.stat().st_size)
