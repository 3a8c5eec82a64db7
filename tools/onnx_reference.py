#!/usr/bin/env python3
"""What the `onnx` Python package (1.22.0) reads from ONNX files: the reference for
`onnx/tests/onnx_reference.rs`.

    onnx_reference.py node-tests          # one JSON object: every backend node test's model
                                          # and test-data tensors, summarized
    onnx_reference.py summarize FILE.onnx # one model, summarized

A summary is plain JSON: names, op types, attributes (floats as their f32 bits in hex), types
and shapes, and for every tensor its data type, dims, which field holds its values and the
SHA-256 of those values in the raw layout (fixed-width little-endian; 4- and 2-bit types
packed, first element in the low bits; strings as 8-byte length + bytes each). Tensor values
come from `onnx.numpy_helper.to_array`, not from re-reading the protobuf fields.
"""

import hashlib
import json
import os
import struct
import sys

import numpy as np
import onnx
from onnx import numpy_helper

TP = onnx.TensorProto
SUB_BYTE_BITS = {TP.UINT4: 4, TP.INT4: 4, TP.FLOAT4E2M1: 4}
for name, bits in (("UINT2", 2), ("INT2", 2)):
    if hasattr(TP, name):
        SUB_BYTE_BITS[getattr(TP, name)] = bits


def f32_hex(x):
    return struct.pack("<f", x).hex()


def raw_layout(t):
    """The tensor's values as bytes in the raw layout, from numpy_helper.to_array."""
    arr = numpy_helper.to_array(t)
    if t.data_type == TP.STRING:
        out = bytearray()
        for s in arr.reshape(-1):
            b = s if isinstance(s, bytes) else str(s).encode()
            out += struct.pack("<Q", len(b)) + b
        return bytes(out)
    flat = arr.reshape(-1)
    bits = SUB_BYTE_BITS.get(t.data_type)
    if bits:
        per = 8 // bits
        codes = flat.view(np.uint8) & ((1 << bits) - 1)
        pad = (-len(codes)) % per
        codes = np.concatenate([codes, np.zeros(pad, np.uint8)]).reshape(-1, per)
        packed = np.zeros(len(codes), np.uint8)
        for k in range(per):
            packed |= (codes[:, k] << (bits * k)).astype(np.uint8)
        return packed.tobytes()
    if flat.dtype.byteorder == ">":
        flat = flat.byteswap()
    return flat.tobytes()


def storage(t):
    if t.data_location == TP.EXTERNAL:
        return "external"
    if t.HasField("raw_data"):
        return "raw_data"
    for field in ("float_data", "int32_data", "string_data", "int64_data", "double_data", "uint64_data"):
        if len(getattr(t, field)):
            return field
    return "empty"


def tensor(t):
    try:
        digest = hashlib.sha256(raw_layout(t)).hexdigest()
    except Exception as e:  # noqa: BLE001 - a tensor the package cannot decode is reported
        digest = "error: " + type(e).__name__
    return {
        "name": t.name,
        "dims": list(t.dims),
        "data_type": TP.DataType.Name(t.data_type),
        "storage": storage(t),
        "values": digest,
    }


def shape(s):
    dims = []
    for d in s.dim:
        kind = d.WhichOneof("value")
        dims.append(d.dim_value if kind == "dim_value" else ("param:" + d.dim_param) if kind == "dim_param" else None)
    return dims


def type_(tp):
    kind = tp.WhichOneof("value")
    if kind == "tensor_type":
        tt = tp.tensor_type
        return {"tensor": tt.elem_type, "shape": shape(tt.shape) if tt.HasField("shape") else None}
    if kind == "sparse_tensor_type":
        tt = tp.sparse_tensor_type
        return {"sparse": tt.elem_type, "shape": shape(tt.shape) if tt.HasField("shape") else None}
    if kind == "sequence_type":
        st = tp.sequence_type
        return {"sequence": type_(st.elem_type) if st.HasField("elem_type") else None}
    if kind == "optional_type":
        ot = tp.optional_type
        return {"optional": type_(ot.elem_type) if ot.HasField("elem_type") else None}
    if kind == "map_type":
        mt = tp.map_type
        return {"map": [mt.key_type, type_(mt.value_type) if mt.HasField("value_type") else None]}
    return None


def value_info(v):
    return {"name": v.name, "type": type_(v.type) if v.HasField("type") else None}


def sparse(s):
    return {"values": tensor(s.values), "indices": tensor(s.indices), "dims": list(s.dims)}


def attribute(a):
    A = onnx.AttributeProto
    out = {"name": a.name, "type": A.AttributeType.Name(a.type)}
    if a.ref_attr_name:
        out["ref"] = a.ref_attr_name
        return out
    t = a.type
    if t == A.FLOAT:
        v = f32_hex(a.f)
    elif t == A.INT:
        v = a.i
    elif t == A.STRING:
        v = a.s.hex()
    elif t == A.TENSOR:
        v = tensor(a.t)
    elif t == A.GRAPH:
        v = graph(a.g)
    elif t == A.SPARSE_TENSOR:
        v = sparse(a.sparse_tensor)
    elif t == A.TYPE_PROTO:
        v = type_(a.tp)
    elif t == A.FLOATS:
        v = [f32_hex(x) for x in a.floats]
    elif t == A.INTS:
        v = list(a.ints)
    elif t == A.STRINGS:
        v = [s.hex() for s in a.strings]
    elif t == A.TENSORS:
        v = [tensor(x) for x in a.tensors]
    elif t == A.GRAPHS:
        v = [graph(x) for x in a.graphs]
    elif t == A.SPARSE_TENSORS:
        v = [sparse(x) for x in a.sparse_tensors]
    elif t == A.TYPE_PROTOS:
        v = [type_(x) for x in a.type_protos]
    else:
        v = None
    out["value"] = v
    return out


def node(n):
    return {
        "op": n.op_type,
        "domain": n.domain,
        "name": n.name,
        "inputs": list(n.input),
        "outputs": list(n.output),
        "attributes": [attribute(a) for a in n.attribute],
    }


def graph(g):
    return {
        "name": g.name,
        "nodes": [node(n) for n in g.node],
        "initializers": [tensor(t) for t in g.initializer],
        "sparse_initializers": [sparse(s) for s in g.sparse_initializer],
        "inputs": [value_info(v) for v in g.input],
        "outputs": [value_info(v) for v in g.output],
        "value_info": [value_info(v) for v in g.value_info],
    }


def model(m):
    return {
        "ir_version": m.ir_version,
        "opsets": [[o.domain, o.version] for o in m.opset_import],
        "producer": [m.producer_name, m.producer_version],
        "metadata": [[p.key, p.value] for p in m.metadata_props],
        "functions": [
            {
                "name": f.name,
                "domain": f.domain,
                "inputs": list(f.input),
                "outputs": list(f.output),
                "attributes": list(f.attribute),
                "nodes": [node(n) for n in f.node],
            }
            for f in m.functions
        ],
        "graph": graph(m.graph),
    }


def data_sets(m, test_dir):
    """Every input_i.pb / output_i.pb whose graph input/output is a tensor, summarized."""
    inits = {t.name for t in m.graph.initializer}
    ins = [v for v in m.graph.input if v.name not in inits]
    outs = list(m.graph.output)
    found = {}
    for ds in sorted(os.listdir(test_dir)):
        d = os.path.join(test_dir, ds)
        if not (ds.startswith("test_data_set_") and os.path.isdir(d)):
            continue
        for f in sorted(os.listdir(d)):
            kind, _, rest = f.partition("_")
            if not f.endswith(".pb") or kind not in ("input", "output"):
                continue
            i = int(rest[:-3])
            vs = ins if kind == "input" else outs
            if i >= len(vs) or vs[i].type.WhichOneof("value") != "tensor_type":
                continue
            t = TP()
            with open(os.path.join(d, f), "rb") as fh:
                t.ParseFromString(fh.read())
            found[f"{ds}/{f}"] = tensor(t)
    return found


def node_tests():
    root = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")
    out = {"root": root, "tests": {}}
    for name in sorted(os.listdir(root)):
        d = os.path.join(root, name)
        path = os.path.join(d, "model.onnx")
        if not os.path.isfile(path):
            continue
        m = onnx.load(path, load_external_data=False)
        out["tests"][name] = {"model": model(m), "data": data_sets(m, d)}
    return out


def main():
    if sys.argv[1:] == ["node-tests"]:
        json.dump(node_tests(), sys.stdout)
    elif len(sys.argv) == 3 and sys.argv[1] == "summarize":
        json.dump(model(onnx.load(sys.argv[2], load_external_data=False)), sys.stdout)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
