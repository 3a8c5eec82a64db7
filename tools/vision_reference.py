#!/usr/bin/env python3
"""The reference for gpuport's vision bundles (cli/tests/vision.rs): onnxruntime on the input
that modelport's own preprocessing builds, then post-processing written here with numpy.

    vision_reference.py BUNDLE OUT_DIR IMAGE[=INPUT.npy]...

For each IMAGE, writes OUT_DIR/<i>.input.npy (modelport's preprocessed input) and
OUT_DIR/<i>.npy (onnxruntime's raw output, on INPUT.npy when given: JPEG decoders differ by a
level between Pillow and gpuport, so a test feeds both sides one tensor) and prints one JSON
line:
classification `{"results": [{"index", "label", "score"}]}` (softmax, top_k of the manifest),
detection `{"detections": [{"index", "label", "score", "box": [x0, y0, x1, y1]}]}` (rows
layout, cxcywh in input pixels, best class per row, score >= threshold, per-class NMS, boxes
mapped back to the original image through the resize, clipped to it).
"""

import json
import os
import sys

import numpy as np
import onnxruntime as ort
from modelport.manifest import Manifest
from modelport.preprocess import load_image, preprocess_image


def iou(a, b):
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def detections(rows, post, labels, size, input_hw):
    (w0, h0), (ih, iw) = size, input_hw
    scores = rows[:, 4:]
    cls = scores.argmax(axis=1)
    best = scores[np.arange(len(rows)), cls]
    keep = np.nonzero(best >= post["score_threshold"])[0]
    order = keep[np.lexsort((keep, -best[keep]))]
    boxes = {}
    for i in order:
        cx, cy, w, h = rows[i, :4]
        boxes[i] = [cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2]
    kept = []
    for i in order:
        if all(cls[j] != cls[i] or iou(boxes[i], boxes[j]) <= post["iou_threshold"] for j in kept):
            kept.append(i)
    kept = kept[: post["max_detections"]]
    sx, sy = w0 / iw, h0 / ih
    out = []
    for i in kept:
        x0, y0, x1, y1 = boxes[i]
        box = [min(max(x0 * sx, 0), w0), min(max(y0 * sy, 0), h0),
               min(max(x1 * sx, 0), w0), min(max(y1 * sy, 0), h0)]
        out.append({"index": int(cls[i]), "label": labels[cls[i]], "score": float(best[i]),
                    "box": [float(v) for v in box]})
    return out


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    bundle, out_dir, images = sys.argv[1], sys.argv[2], sys.argv[3:]
    with open(os.path.join(bundle, "modelport.json")) as f:
        doc = json.load(f)
    manifest = Manifest.model_validate(doc)
    spec = manifest.inputs[0]
    out = doc["outputs"][0]
    post = out["postprocess"]
    with open(os.path.join(bundle, post["labels"]["path"])) as f:
        labels = f.read().splitlines()
    session = ort.InferenceSession(os.path.join(bundle, doc["variants"][0]["file"]["path"]),
                                   providers=["CPUExecutionProvider"])
    for k, arg in enumerate(images):
        path, _, given = arg.partition("=")
        image = load_image(path)
        x = preprocess_image(image, spec)
        np.save(os.path.join(out_dir, f"{k}.input.npy"), x)
        if given:
            x = np.load(given)
        (y,) = session.run(None, {spec.name: x})
        np.save(os.path.join(out_dir, f"{k}.npy"), y)
        if post["type"] == "classification":
            logits = y.reshape(-1).astype(np.float64)
            p = np.exp(logits - logits.max())
            p /= p.sum()
            order = sorted(range(len(p)), key=lambda i: (-p[i], i))[: post.get("top_k", 5)]
            report = {"results": [{"index": i, "label": labels[i], "score": float(p[i])} for i in order]}
        else:
            shape = doc["inputs"][0]["shape"]
            report = {"detections": detections(y[0].astype(np.float64), post, labels, image.size,
                                               (shape[2], shape[3]))}
        print(json.dumps(report))


if __name__ == "__main__":
    main()
