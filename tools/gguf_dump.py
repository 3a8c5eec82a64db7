"""Dump a GGUF file's metadata and tensor table as JSON with gguf-py (the reference reader).

Used by runtime/tests/gguf_reference.rs to check gpuport's reader on real model files.
Arrays are summarized as {"type", "len", "first", "last"} to keep the output small.
"""
import json
import sys

from gguf import GGUFReader
from gguf.constants import GGUFValueType


def scalar(v):
    if hasattr(v, "item"):
        v = v.item()
    return v


def main(path):
    r = GGUFReader(path)
    meta = []
    for name, f in r.fields.items():
        if name.startswith("GGUF."):
            continue
        t = f.types[0]
        if t == GGUFValueType.ARRAY:
            items = f.contents()
            meta.append({"key": name, "type": "array", "elem": int(f.types[-1]), "len": len(items),
                         "first": scalar(items[0]) if items else None,
                         "last": scalar(items[-1]) if items else None})
        else:
            meta.append({"key": name, "type": int(t), "value": scalar(f.contents())})
    tensors = [{"name": t.name, "type": int(t.tensor_type), "dims": [int(d) for d in t.shape],
                "offset": int(t.data_offset), "bytes": int(t.n_bytes)} for t in r.tensors]
    json.dump({"metadata": meta, "tensors": tensors}, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
