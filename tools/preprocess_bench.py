#!/usr/bin/env python3
"""The Pillow side of `cargo bench -p gpuport-benches --bench preprocess` (which calls it with the
same pixels and the same ModelPort input spec it measures itself on, then prints the ratios).

    python3 tools/preprocess_bench.py RAW_RGB_FILE WIDTH HEIGHT RUNS INPUT_SPEC_JSON

Prints JSON with median seconds per call, one thread (Pillow and numpy here run single-threaded):
- "modelport": modelport.preprocess.preprocess_image on the decoded image (the whole pipeline);
- "pillow_resize": only Pillow's resize and crop (what gpuport's resize replaces), or null for
  the float bilinear path, which Pillow does not have.
"""

import json
import statistics
import sys
import time

from PIL import Image
from modelport.manifest.tensors import InputSpec
from modelport.preprocess import preprocess_image, resized_size

FILTERS = {"bilinear": Image.Resampling.BILINEAR, "bicubic": Image.Resampling.BICUBIC,
           "nearest": Image.Resampling.NEAREST}


def median_seconds(runs, fn):
    fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    raw, width, height, runs, spec_json = sys.argv[1:6]
    width, height, runs = int(width), int(height), int(runs)
    with open(raw, "rb") as f:
        image = Image.frombytes("RGB", (width, height), f.read())
    spec = InputSpec.model_validate(json.loads(spec_json))
    pre = spec.preprocess
    result = {"modelport": median_seconds(runs, lambda: preprocess_image(image, spec))}
    if pre.resize.antialias or pre.resize.method == "nearest":
        w, h = resized_size(width, height, pre.resize)
        crop = pre.center_crop

        def pillow():
            out = image.resize((w, h), FILTERS[pre.resize.method], reducing_gap=None)
            if crop is not None:
                top, left = round((h - crop[0]) / 2), round((w - crop[1]) / 2)
                out = out.crop((left, top, left + crop[1], top + crop[0]))
            return out

        result["pillow_resize"] = median_seconds(runs, pillow)
    else:
        result["pillow_resize"] = None
    print(json.dumps(result))


if __name__ == "__main__":
    main()
