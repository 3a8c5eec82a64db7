#!/usr/bin/env python3
"""Writes the MLC example documents under examples/mlc/ with their canonical ids.

The ids are computed here independently of gpuport's Rust code: for JSON made only of strings,
integers, arrays and objects with ASCII keys, RFC 8785 (JCS) output equals
json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False). gpuport's tests pin the
same values, so the two implementations check each other.

- gemma4-audio/: the spec's Gemma 4 text-and-audio package and its compiled-program example.
- llava-image/: the spec's LLaVA 1.5 image input, in a package and program.
- tiny-package/: a complete package folder (chat config, weights manifest, two shards of
  deterministic bytes, compiled program). Its weights are synthetic: it exists to show and test
  the format end to end (file checks, parameter_schema_id, resources), not to run.
"""

import hashlib
import json
import struct
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "examples" / "mlc"


def jcs(value) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def cid(value) -> str:
    return "sha256:" + hashlib.sha256(jcs(value).encode()).hexdigest()


def write(path: Path, value) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2) + "\n")


def package(tasks, param_id, chat_config="mlc-chat-config.json"):
    return {
        "schema": "mlc.model-package",
        "schema_version": 1,
        "chat_config": chat_config,
        "interface_id": cid(tasks),
        "weights": {"manifest": "tensor-cache.json", "parameter_schema_id": param_id},
        "tasks": tasks,
    }


def program(tasks, param_id, programs, resources):
    return {
        "schema": "mlc.compiled-program",
        "schema_version": 1,
        "interface_id": cid(tasks),
        "parameter_schema_id": param_id,
        "programs": programs,
        "resources": resources,
    }


# The spec abbreviates parameter_schema_id for these two examples and their weights are not part
# of them, so these documents carry the id of an empty parameter list and are validated with
# --no-files only (docs/spec/hashes.md says so too).
NO_WEIGHTS = cid([])

gemma_tasks = {
    "chat.completions": {
        "executor": "generation",
        "inputs": {
            "text": {"processor": "tokenizer"},
            "audio": {
                "processor": {
                    "kind": "audio_decode",
                    "format": "pcm_f32",
                    "sample_rate_hz": 16000,
                    "channels": 1,
                    "min_samples": 161,
                    "max_samples": 480000,
                },
                "adapter": "audio",
                "prompt": {
                    "prefix_token_ids": [256000],
                    "placeholder_token_id": 258881,
                    "suffix_token_ids": [258883],
                },
            },
        },
        "output": "text",
    }
}
write(ROOT / "gemma4-audio" / "mlc-model-manifest.json", package(gemma_tasks, NO_WEIGHTS))
write(
    ROOT / "gemma4-audio" / "program.json",
    program(
        gemma_tasks,
        NO_WEIGHTS,
        {
            "generation": {
                "kind": "token_generation",
                "exports": {
                    "embed_tokens": "embed",
                    "prefill_tokens": "prefill_tokens",
                    "decode_tokens": "decode_tokens",
                    "create_kv_cache": "create_tir_paged_kv_cache",
                },
                "adapters": {"audio": "audio_embed"},
            }
        },
        {
            "required_features": ["shader-f16"],
            "max_storage_buffer_binding_size": 201326592,
            "estimated_device_memory_bytes": 2797972550,
        },
    ),
)

llava_tasks = {
    "chat.completions": {
        "executor": "generation",
        "inputs": {
            "text": {"processor": "tokenizer"},
            "image": {
                "processor": {
                    "kind": "image_decode",
                    "format": "rgb_u8",
                    "layout": "nhwc",
                    "resize": {"mode": "center_crop", "height": 336, "width": 336},
                    "num_embeddings": 576,
                },
                "adapter": "image",
                "prompt": {"placeholder_token_id": 32000},
            },
        },
        "output": "text",
    }
}
write(ROOT / "llava-image" / "mlc-model-manifest.json", package(llava_tasks, NO_WEIGHTS))
write(
    ROOT / "llava-image" / "program.json",
    program(
        llava_tasks,
        NO_WEIGHTS,
        {
            "generation": {
                "kind": "token_generation",
                "exports": {
                    "embed_tokens": "embed",
                    "prefill_embeds": "prefill",
                    "decode_embeds": "decode",
                    "create_kv_cache": "create_tir_paged_kv_cache",
                },
                "adapters": {"image": "image_embed"},
                "adapter_dtypes": {"image": "uint32"},
            }
        },
        {
            "required_features": ["shader-f16"],
            "max_storage_buffer_binding_size": 262144000,
            "estimated_device_memory_bytes": 4046979072,
        },
    ),
)

# tiny-package: two shards, one parameter shape naming `vocab_size` from the model config.
tiny = ROOT / "tiny-package"
config = {
    "model_type": "llama",
    "vocab_size": 64,
    "context_window_size": 128,
    "model_config": {"vocab_size": 64, "hidden_size": 16, "num_hidden_layers": 1},
}
write(tiny / "mlc-chat-config.json", config)
params = [
    # name, shape as written, dtype
    ("model.embed_tokens.q_weight", ["vocab_size", 2], "uint32"),
    ("model.embed_tokens.q_scale", ["vocab_size", 1], "float16"),
    ("model.layers.0.mlp.down_proj.q_weight", [16, 8], "uint32"),
    ("model.norm.weight", [16], "float16"),
]
sizes = {"uint32": 4, "float16": 2}
resolved = []
for name, shape, dtype in params:
    dims = [config["model_config"][d] if isinstance(d, str) else d for d in shape]
    n = 1
    for d in dims:
        n *= d
    resolved.append((name, shape, dims, dtype, n * sizes[dtype]))
shards = [resolved[:2], resolved[2:]]
records = []
counter = 0
for i, shard in enumerate(shards):
    data = bytearray()
    entries = []
    for name, shape, dims, dtype, nbytes in shard:
        entries.append(
            {"name": name, "shape": shape, "dtype": dtype, "format": "raw", "nbytes": nbytes, "byteOffset": len(data)}
        )
        for _ in range(nbytes // 4):
            counter = (counter * 1103515245 + 12345) & 0xFFFFFFFF
            data += struct.pack("<I", counter)
    path = f"params_shard_{i}.bin"
    (tiny / path).write_bytes(bytes(data))
    records.append({"dataPath": path, "format": "raw-shard", "nbytes": len(data), "records": entries,
                    "md5sum": hashlib.md5(bytes(data)).hexdigest()})
total = sum(r[4] for r in resolved)
write(tiny / "tensor-cache.json", {"metadata": {"ParamSize": len(resolved), "ParamBytes": total}, "records": records})
schema = sorted(({"name": n, "shape": d, "dtype": t} for n, _, d, t, _ in resolved), key=lambda p: p["name"])
tiny_param_id = cid(schema)
tiny_tasks = {"chat.completions": {"executor": "generation", "inputs": {"text": {"processor": "tokenizer"}}, "output": "text"}}
write(tiny / "mlc-model-manifest.json", package(tiny_tasks, tiny_param_id))
write(
    tiny / "program.json",
    program(
        tiny_tasks,
        tiny_param_id,
        {
            "generation": {
                "kind": "token_generation",
                "exports": {
                    "embed_tokens": "embed",
                    "prefill_embeds": "prefill",
                    "decode_embeds": "decode",
                    "create_kv_cache": "create_tir_paged_kv_cache",
                },
            }
        },
        {
            "required_features": [],
            "max_storage_buffer_binding_size": max(r[4] for r in resolved),
            "estimated_device_memory_bytes": total,
        },
    ),
)
print("gemma4 interface_id", cid(gemma_tasks))
print("gemma4 tasks JCS", jcs(gemma_tasks))
print("llava interface_id", cid(llava_tasks))
print("tiny interface_id", cid(tiny_tasks))
print("tiny parameter_schema_id", tiny_param_id)
print("empty parameter_schema_id", NO_WEIGHTS)
print("tiny resources", max(r[4] for r in resolved), total)
