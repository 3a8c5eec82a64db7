#!/usr/bin/env python3
"""The peers of `cargo xtask bench-vision`: PyTorch CUDA (eager, fp32, the same ONNX file
through onnx2torch) and onnxruntime on the CPU, timed the way issue 17 names.

    torch_vision_bench.py MODEL.onnx --batch 1,32 [--seconds 3] [--ort-threads 16] [--json F]

PyTorch: GPU time by CUDA events around each call of the module on a device-resident input,
after >= 2 s of steady warm-up; median over the timed calls (p10/p90 too). TF32 is off, so the
products are fp32 as ours are. onnxruntime: wall clock per `session.run`, CPU provider,
`--ort-threads` intra-op threads. Test tooling only: onnx2torch and torch are never
dependencies of gpuport.
"""

import argparse
import json
import sys
import time

import numpy as np


def percentiles(ms):
    ms = sorted(ms)
    pick = lambda q: ms[int(round((len(ms) - 1) * q))]
    return {"p10": pick(0.1), "median": pick(0.5), "p90": pick(0.9), "calls": len(ms)}


def report(who, batch, ms):
    """The percentiles of `ms` with the batch and images/s, printed as a line."""
    p = percentiles(ms)
    p["batch"] = batch
    p["images_per_s"] = batch / (p["median"] / 1e3)
    print(f"{who} batch {batch:>3}: {p['median']:.3f} ms median "
          f"({p['p10']:.3f}-{p['p90']:.3f}), {p['images_per_s']:.0f} img/s", flush=True)
    return p


def input_shape(model, batch):
    (inp,) = [i for i in model.graph.input
              if i.name not in {t.name for t in model.graph.initializer}]
    dims = [d.dim_value if d.HasField("dim_value") else None
            for d in inp.type.tensor_type.shape.dim]
    if dims[0] is not None and dims[0] != batch:
        return inp.name, None
    return inp.name, [batch] + dims[1:]


def bench_torch(path, batches, seconds):
    import onnx
    import torch
    from onnx2torch import convert

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    model = onnx.load(path)
    module = convert(model).cuda().eval()
    out = []
    for batch in batches:
        name, shape = input_shape(model, batch)
        if shape is None:
            out.append({"batch": batch, "skipped": "fixed batch dim"})
            continue
        x = torch.rand(*shape, device="cuda", generator=None)
        with torch.no_grad():
            t0 = time.time()
            while time.time() - t0 < 2.0:
                module(x)
            torch.cuda.synchronize()
            ms = []
            t0 = time.time()
            while time.time() - t0 < seconds or len(ms) < 5:
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                module(x)
                b.record()
                b.synchronize()
                ms.append(a.elapsed_time(b))
        out.append(report("torch", batch, ms))
    return {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(), "results": out}


def bench_ort(path, batches, seconds, threads):
    import onnx
    import onnxruntime as ort

    model = onnx.load(path)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    out = []
    for batch in batches:
        name, shape = input_shape(model, batch)
        if shape is None:
            out.append({"batch": batch, "skipped": "fixed batch dim"})
            continue
        x = np.random.default_rng(1).random(shape, dtype=np.float32)
        t0 = time.time()
        while time.time() - t0 < 1.0:
            sess.run(None, {name: x})
        ms = []
        t0 = time.time()
        while time.time() - t0 < seconds or len(ms) < 5:
            t = time.perf_counter()
            sess.run(None, {name: x})
            ms.append((time.perf_counter() - t) * 1e3)
        out.append(report(f"ort x{threads}", batch, ms))
    return {"onnxruntime": ort.__version__, "threads": threads, "results": out}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--batch", default="1")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--ort-threads", type=int, default=16)
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--no-ort", action="store_true")
    ap.add_argument("--json")
    a = ap.parse_args()
    batches = [int(b) for b in a.batch.split(",")]
    report = {"model": a.model}
    if not a.no_torch:
        report["torch"] = bench_torch(a.model, batches, a.seconds)
    if not a.no_ort:
        report["ort"] = bench_ort(a.model, batches, a.seconds, a.ort_threads)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(report, f, indent=2)


if __name__ == "__main__":
    sys.exit(main())
