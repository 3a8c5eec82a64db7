#!/usr/bin/env python3
"""The Pillow side of `cargo bench -p gpuport-benches --bench preprocess` (which calls it with the
same pixels and the same ModelPort input spec it measures itself on, then prints the ratios).

    python3 tools/preprocess_bench.py RAW_RGB_FILE WIDTH HEIGHT RUNS INPUT_SPEC_JSON

Prints JSON with median seconds per call, one thread (Pillow and numpy here run single-threaded):
- "modelport": modelport.preprocess.preprocess_image on the decoded image (the whole pipeline),
  or null where modelport-cli is not installed (only Pillow is needed for the other column);
- "pillow_resize": only Pillow's resize and crop (what gpuport's resize replaces), or null for
  the float bilinear path, which Pillow does not have.
"""

import json
import statistics
import sys
import time

from PIL import Image

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


def resized_size(width, height, resize):
    """torchvision's rule, as modelport.preprocess.resized_size."""
    if resize.get("size") is not None:
        return resize["size"][1], resize["size"][0]
    short = resize["shorter_side"]
    if width <= height:
        return short, int(short * height / width)
    return int(short * width / height), short


def main():
    raw, width, height, runs, spec_json = sys.argv[1:6]
    width, height, runs = int(width), int(height), int(runs)
    with open(raw, "rb") as f:
        image = Image.frombytes("RGB", (width, height), f.read())
    spec = json.loads(spec_json)
    resize = spec["preprocess"]["resize"]
    try:
        from modelport.manifest.tensors import InputSpec
        from modelport.preprocess import preprocess_image

        model = InputSpec.model_validate(spec)
        result = {"modelport": median_seconds(runs, lambda: preprocess_image(image, model))}
    except ImportError:
        result = {"modelport": None}
    if resize.get("antialias") or resize.get("method") == "nearest":
        w, h = resized_size(width, height, resize)
        crop = spec["preprocess"].get("center_crop")

        def pillow():
            out = image.resize((w, h), FILTERS[resize["method"]], reducing_gap=None)
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
