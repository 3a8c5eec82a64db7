#!/usr/bin/env python3
"""Regenerates preprocess/tests/fixtures/ (the gpuport-preprocess references).

    pip install -r tools/requirements-test.txt   # modelport-cli 0.1.0, pillow<13, scipy, soxr
    python3 tools/preprocess_reference.py [image|post|audio|mlc ...]   (all by default)
    python3 tools/preprocess_reference.py live RAW_RGB WIDTH HEIGHT INPUT_SPEC_JSON > tensor.bin

image: small generated source images (PNG of every colour type, 8 EXIF orientations, JPEG,
  WebP, BMP, GIF) and the tensors `modelport.preprocess` (Pillow 12) makes from them, listed in
  image/cases.json. Where the issue pins a rule that the Python reference does not follow, the
  reference is computed here independently and the case says so in `reference`:
  - nearest: the spec's exact floor((x + 0.5) * in / out) in integers (Pillow's nearest
    accumulates in floating point); the resized array is then fed to modelport.preprocess;
  - 16-bit grayscale PNG: high byte (Pillow clips to 255);
  - int8/int32/int64/bool: modelport casts those to float32; here round-half-to-even + saturate,
    bool = value != 0, applied to modelport's float64 values.
Deterministic (fixed seeds). Generated with Pillow 12.3; pinned below 13. Pillow 12's
Image.resize already runs the vertical pass first when the source is more than 100 times
taller than wide and the height shrinks; the tall_* sources (3x400, 5x501 and the 5x500
boundary) pin that rule.
"""

import io
import json
import struct
import sys
import zlib
from pathlib import Path

import numpy as np
import PIL
from PIL import Image

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "preprocess" / "tests" / "fixtures"

assert int(PIL.__version__.split(".")[0]) < 13, "generate references with pillow<13"


# ---------------------------------------------------------------------------------------------
# source images

def pattern(width, height, seed):
    """Smooth gradients plus noise and a sharp edge: every filter tap matters."""
    rng = np.random.RandomState(seed)
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    r = 255 * x / max(width - 1, 1)
    g = 255 * (0.5 + 0.5 * np.sin(y / 3.0 + x / 5.0))
    b = np.where((x + 2 * y) % 11 < 5, 250.0, 5.0)
    img = np.stack([r, g, b], axis=-1) + rng.randint(-20, 21, size=(height, width, 3))
    return np.clip(img, 0, 255).astype(np.uint8)


def png_bytes(array, bit_depth, color_type):
    """A minimal PNG writer (Pillow cannot write 16-bit RGB): filter 0 on every row."""
    height, width = array.shape[:2]
    if bit_depth == 16:
        raw = array.astype(">u2").tobytes()
        row_bytes = raw and len(raw) // height
    else:
        raw = array.astype(np.uint8).tobytes()
        row_bytes = len(raw) // height
    scan = b"".join(b"\x00" + raw[i * row_bytes:(i + 1) * row_bytes] for i in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, bit_depth, color_type, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(scan, 9))
            + chunk(b"IEND", b""))


def bmp16_bytes(width, height, layout):
    """A bottom-up 16-bit BMP: 555 uncompressed or 565 with BI_BITFIELDS masks."""
    rng = np.random.RandomState(layout)
    values = rng.randint(0, 65536, size=(height, width)).astype(np.uint16)
    values.flat[:64] = np.arange(64, dtype=np.uint16) * 0x0841  # every level of each channel
    row = (width * 2 + 3) // 4 * 4
    pixels = b"".join(values[y].astype("<u2").tobytes().ljust(row, b"\0") for y in range(height - 1, -1, -1))
    masks = struct.pack("<3I", 0xF800, 0x7E0, 0x1F) if layout == 565 else b""
    offset = 14 + 40 + len(masks)
    info = struct.pack("<IiiHHIIiiII", 40, width, height, 1, 16, 3 if layout == 565 else 0, len(pixels),
                       2835, 2835, 0, 0)
    return b"BM" + struct.pack("<IHHI", offset + len(pixels), 0, 0, offset) + info + masks + pixels


def make_sources(out):
    """Writes the source images; returns {file name: decoded RGB uint8 array (the reference)}."""
    from modelport.preprocess import load_image

    out.mkdir(parents=True, exist_ok=True)
    files = {}

    def save_pil(name, image, **kw):
        image.save(out / name, **kw)
        files[name] = None

    rgb_odd = pattern(37, 23, 1)
    rgb_big = pattern(160, 120, 2)
    rgb_tall = pattern(17, 29, 3)
    save_pil("rgb_37x23.png", Image.fromarray(rgb_odd))
    save_pil("rgb_160x120.png", Image.fromarray(rgb_big))
    save_pil("rgb_17x29.png", Image.fromarray(rgb_tall))
    # More than 100x taller than wide: Pillow resamples vertically first when shrinking height.
    save_pil("tall_3x400.png", Image.fromarray(pattern(3, 400, 11)))
    save_pil("tall_5x501.png", Image.fromarray(pattern(5, 501, 12)))
    save_pil("tall_5x500.png", Image.fromarray(pattern(5, 500, 13)))
    save_pil("gray_37x23.png", Image.fromarray(rgb_odd[..., 1]))
    save_pil("gray_alpha_37x23.png", Image.fromarray(np.dstack([rgb_odd[..., 0], rgb_odd[..., 2]]), "LA"))
    save_pil("rgba_37x23.png", Image.fromarray(np.dstack([rgb_odd, rgb_odd[..., :1][..., ::-1]]), "RGBA"))
    palette = Image.fromarray(rgb_odd).quantize(colors=40, method=Image.Quantize.MEDIANCUT)
    save_pil("palette_37x23.png", palette, transparency=3)
    save_pil("bilevel_37x23.png", Image.fromarray(rgb_odd[..., 0] > 127))
    save_pil("palette4_37x23.png", Image.fromarray(rgb_odd).quantize(colors=12), bits=4)
    rng = np.random.RandomState(4)
    rgb16 = rng.randint(0, 65536, size=(23, 37, 3)).astype(np.uint16)
    (out / "rgb16_37x23.png").write_bytes(png_bytes(rgb16, 16, 2))
    files["rgb16_37x23.png"] = None
    gray16 = rng.randint(0, 65536, size=(23, 37)).astype(np.uint16)
    (out / "gray16_37x23.png").write_bytes(png_bytes(gray16, 16, 0))
    # Pillow clips 16-bit gray to 255 in convert("RGB"); the pinned rule is the high byte.
    files["gray16_37x23.png"] = np.repeat((gray16 >> 8).astype(np.uint8)[..., None], 3, axis=-1)
    small = pattern(13, 7, 5)
    for orientation in range(1, 9):
        exif = Image.Exif()
        exif[0x0112] = orientation
        save_pil(f"exif{orientation}_13x7.png", Image.fromarray(small), exif=exif.tobytes())
    exif = Image.Exif()
    exif[0x0112] = 6
    save_pil("exif6_160x120.jpg", Image.fromarray(rgb_big), quality=92, exif=exif.tobytes())
    save_pil("baseline_160x120.jpg", Image.fromarray(rgb_big), quality=90)
    save_pil("progressive_160x120.jpg", Image.fromarray(rgb_big), quality=90, progressive=True)
    save_pil("cmyk_160x120.jpg", Image.fromarray(rgb_big).convert("CMYK"), quality=95)
    save_pil("lossless_37x23.webp", Image.fromarray(rgb_odd), lossless=True)
    save_pil("rgb_37x23.bmp", Image.fromarray(rgb_odd))
    save_pil("palette_37x23.gif", Image.fromarray(rgb_odd).quantize(colors=64))
    # 16-bit BMPs (Pillow cannot write them): every 5/6-bit level appears; Pillow expands
    # v * 255 / max truncated.
    (out / "rgb555_37x23.bmp").write_bytes(bmp16_bytes(37, 23, 555))
    files["rgb555_37x23.bmp"] = None
    (out / "rgb565_37x23.bmp").write_bytes(bmp16_bytes(37, 23, 565))
    files["rgb565_37x23.bmp"] = None
    decoded = {}
    for name, override in files.items():
        decoded[name] = override if override is not None else np.asarray(load_image(out / name))
    return decoded


# ---------------------------------------------------------------------------------------------
# image tensors

def exact_nearest(array, out_w, out_h):
    in_h, in_w = array.shape[:2]
    ys = np.minimum(((2 * np.arange(out_h) + 1) * in_h) // (2 * out_h), in_h - 1)
    xs = np.minimum(((2 * np.arange(out_w) + 1) * in_w) // (2 * out_w), in_w - 1)
    return array[ys][:, xs]


def image_cases():
    imagenet = {"mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}
    raw = {"scale": 1.0}

    def case(name, source, resize, dtype="uint8", layout="NHWC", crop=None, tolerance=0.0, **pre):
        pre = dict(pre)
        pre["resize"] = resize
        if crop is not None:
            pre["center_crop"] = crop
        return {"name": name, "source": source, "dtype": dtype, "layout": layout,
                "preprocess": pre, "tolerance": tolerance}

    aa = lambda method, **t: {"method": method, "antialias": True, **t}  # noqa: E731
    cases = [
        case("bilinear_aa_down_shorter_crop", "rgb_37x23.png", aa("bilinear", shorter_side=16), crop=[14, 15], **raw),
        case("bilinear_aa_down_size", "rgb_160x120.png", aa("bilinear", size=[31, 47]), **raw),
        case("bilinear_aa_up_size", "rgb_37x23.png", aa("bilinear", size=[50, 61]), layout="NCHW", **raw),
        case("bicubic_aa_up_size", "rgb_37x23.png", aa("bicubic", size=[50, 61]), layout="NCHW", **raw),
        case("bicubic_aa_down_shorter_crop", "rgb_160x120.png", aa("bicubic", shorter_side=40), crop=[32, 32], **raw),
        case("bicubic_aa_mixed_size", "rgb_160x120.png", aa("bicubic", size=[200, 21]), **raw),
        case("bicubic_aa_float_imagenet", "rgb_160x120.png", aa("bicubic", shorter_side=40), crop=[32, 32],
             dtype="float32", layout="NCHW", tolerance=1e-5, **imagenet),
        case("bilinear_aa_float16_bgr", "rgb_160x120.png", aa("bilinear", shorter_side=36), crop=[32, 30],
             dtype="float16", layout="NCHW", tolerance=0.0, color="BGR", **imagenet),
        case("bilinear_aa_uint8_scaled_mean", "rgb_37x23.png", aa("bilinear", size=[20, 30]),
             scale=0.5, mean=[10.0, 20.0, 30.0], std=[0.5, 0.25, 2.0]),
        case("nearest_mixed_size", "rgb_37x23.png", {"method": "nearest", "size": [50, 13]}, **raw),
        case("nearest_down_shorter", "rgb_160x120.png", {"method": "nearest", "shorter_side": 33}, **raw),
        case("nearest_up_crop", "rgb_17x29.png", {"method": "nearest", "shorter_side": 45}, crop=[44, 44], **raw),
        case("bilinear_float_mixed", "rgb_37x23.png", {"method": "bilinear", "size": [50, 19]},
             dtype="float32", tolerance=1e-5),
        case("bilinear_float_down_bgr_imagenet", "rgb_160x120.png", {"method": "bilinear", "shorter_side": 64},
             crop=[56, 56], dtype="float32", layout="NCHW", tolerance=1e-5, color="BGR", **imagenet),
        case("bilinear_float_uint8", "rgb_160x120.png", {"method": "bilinear", "size": [45, 37]}, **raw),
        case("smaller_than_crop_pad", "rgb_17x29.png", aa("bilinear", shorter_side=20), crop=[40, 25], **raw),
        case("smaller_than_crop_float", "rgb_17x29.png", {"method": "bilinear", "shorter_side": 20}, crop=[37, 21],
             dtype="float32", tolerance=1e-5, **imagenet),
        case("smaller_than_crop_nchw", "rgb_17x29.png", aa("bicubic", shorter_side=20), crop=[40, 25],
             dtype="float32", layout="NCHW", tolerance=1e-5, **imagenet),
        case("crop_half_to_even_up", "rgb_37x23.png", aa("bilinear", size=[23, 37]), crop=[20, 34], **raw),
        case("crop_half_to_even_down", "rgb_37x23.png", aa("bilinear", size=[23, 37]), crop=[16, 30], **raw),
        # Vertical pass first (height > 100 x width and shrinking), and the 5x500 boundary.
        case("tall_bilinear_5x501_to_4x10", "tall_5x501.png", aa("bilinear", size=[10, 4]), **raw),
        case("tall_bicubic_5x501_to_4x10", "tall_5x501.png", aa("bicubic", size=[10, 4]), **raw),
        case("tall_bicubic_5x501_to_9x77", "tall_5x501.png", aa("bicubic", size=[77, 9]), **raw),
        case("tall_bilinear_3x400_to_2x40", "tall_3x400.png", aa("bilinear", size=[40, 2]), **raw),
        case("tall_bicubic_3x400_to_4x40", "tall_3x400.png", aa("bicubic", size=[40, 4]), **raw),
        case("tall_bicubic_3x400_to_4x399", "tall_3x400.png", aa("bicubic", size=[399, 4]), **raw),
        case("tall_bicubic_3x400_shorter_crop", "tall_3x400.png", aa("bicubic", shorter_side=2), crop=[200, 2], **raw),
        case("tall_bilinear_5x500_to_4x10", "tall_5x500.png", aa("bilinear", size=[10, 4]), **raw),
        case("tall_bicubic_5x500_to_4x10", "tall_5x500.png", aa("bicubic", size=[10, 4]), **raw),
    ]
    for src in ["bilevel_37x23.png", "palette4_37x23.png", "gray_37x23.png", "gray_alpha_37x23.png", "rgba_37x23.png", "palette_37x23.png",
                "rgb16_37x23.png", "gray16_37x23.png", "lossless_37x23.webp", "rgb_37x23.bmp",
                "palette_37x23.gif", "rgb555_37x23.bmp", "rgb565_37x23.bmp"]:
        cases.append(case("decode_" + src.replace(".", "_"), src, aa("bicubic", size=[19, 29]), **raw))
    for o in range(1, 9):
        cases.append(case(f"exif_orientation_{o}", f"exif{o}_13x7.png", aa("bilinear", shorter_side=5), **raw))
    # JPEG: zune-jpeg (image crate) and libjpeg-turbo (Pillow) differ in IDCT and chroma upsampling
    # rounding; measured max 2 levels after resize on these files, so the tolerance is 3.
    for src in ["baseline_160x120.jpg", "progressive_160x120.jpg", "exif6_160x120.jpg", "cmyk_160x120.jpg"]:
        cases.append(case("jpeg_" + src.split(".")[0], src, aa("bilinear", shorter_side=64), crop=[56, 56],
                          tolerance=3.0, **raw))
    for dtype in ["int8", "int32", "int64", "bool"]:
        cases.append(case(f"dtype_{dtype}", "rgb_37x23.png", aa("bilinear", size=[11, 9]), dtype=dtype,
                          scale=1.0, mean=[128.0, 100.0, 0.0], std=[1.0, 0.5, 1.0]))
    return cases


def cast(values, dtype):
    if dtype in ("float32", "float16"):
        return values.astype(dtype)
    if dtype == "bool":
        return values != 0
    info = np.iinfo(dtype)
    return np.clip(np.rint(values), info.min, info.max).astype(dtype)


def make_image_fixtures():
    from modelport.manifest.tensors import InputSpec, ImagePreprocess
    from modelport.preprocess import preprocess_array, preprocess_image, resized_size
    from modelport.manifest.tensors import ResizeSpec

    out = FIXTURES / "image"
    decoded = make_sources(out)
    cases = image_cases()
    for c in cases:
        array = decoded[c["source"]]
        image = Image.fromarray(array)
        pre = c["preprocess"]
        reference = "modelport.preprocess (Pillow %s)" % PIL.__version__
        if c["source"] == "gray16_37x23.png":
            reference += "; 16-bit gray decoded as the high byte"
        if pre["resize"]["method"] == "nearest":
            w, h = resized_size(image.width, image.height, ResizeSpec(**pre["resize"]))
            exact = exact_nearest(array, w, h)
            pillow = np.asarray(image.resize((w, h), Image.Resampling.NEAREST))
            c["pillow_nearest_differs"] = int((exact != pillow).any(axis=-1).sum())
            image = Image.fromarray(exact)
            reference += "; nearest by the exact integer formula"
        spec_pre = ImagePreprocess(**pre)
        height_width = spec_pre.output_size
        if height_width is None:
            w, h = resized_size(image.width, image.height, spec_pre.resize)
            height_width = (h, w)
        h, w = height_width
        shape = [1, 3, h, w] if c["layout"] == "NCHW" else [1, h, w, 3]
        if c["dtype"] in ("float32", "float16", "uint8"):
            spec = InputSpec(name="x", dtype=c["dtype"], shape=shape, layout=c["layout"], preprocess=spec_pre)
            tensor = preprocess_image(image, spec)
        else:
            values = preprocess_array(image.convert("RGB"), spec_pre)
            values = values.transpose(2, 0, 1)[None] if c["layout"] == "NCHW" else values[None]
            tensor = cast(values, c["dtype"])
            reference += "; integer cast: round half to even, saturate (bool: != 0)"
        assert list(tensor.shape) == shape, (c["name"], tensor.shape, shape)
        c["shape"] = shape
        c["reference"] = reference
        c["expected"] = c["name"] + ".bin"
        (out / c["expected"]).write_bytes(np.ascontiguousarray(tensor).astype(tensor.dtype.newbyteorder("<")).tobytes())
    (out / "cases.json").write_text(json.dumps(cases, indent=1) + "\n")
    print(f"image: {len(cases)} cases in {out}")


# ---------------------------------------------------------------------------------------------
# post-processing: an independent numpy implementation (vectorized IoU, per-class greedy NMS in
# torchvision's order: score descending, stable; suppress IoU > threshold)

def np_iou(box, others):
    area = lambda b: np.clip(b[..., 2] - b[..., 0], 0, None) * np.clip(b[..., 3] - b[..., 1], 0, None)  # noqa: E731
    w = np.clip(np.minimum(box[2], others[:, 2]) - np.maximum(box[0], others[:, 0]), 0, None)
    h = np.clip(np.minimum(box[3], others[:, 3]) - np.maximum(box[1], others[:, 1]), 0, None)
    inter = w * h
    union = area(box) + area(others) - inter
    return np.where(union > 0, inter / np.where(union > 0, union, 1), 0.0)


def np_batched_nms(boxes, scores, classes, threshold):
    order = np.argsort(-scores, kind="stable")
    kept = []
    for i in order:
        same = [k for k in kept if classes[k] == classes[i]]
        if same and (np_iou(boxes[i], boxes[same]) > threshold).any():
            continue
        kept.append(int(i))
    return kept


def np_activate(activation, x):
    if activation == "softmax":
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)
    if activation == "sigmoid":
        return 1 / (1 + np.exp(-x))
    return x


def np_detect(scores, boxes, post, transform):
    scores = scores[0].astype(np.float64)
    n = scores.shape[0]
    if post["format"] == "rows":
        obj = 1 if post["has_objectness"] else 0
        raw_boxes = scores[:, :4]
        cls = np_activate(post["activation"], scores[:, 4 + obj:])
        if obj:
            cls = cls * scores[:, 4:5]
    else:
        raw_boxes = boxes[0].astype(np.float64)
        cls = np_activate(post["activation"], scores)
    if post["background_class"]:
        cls = cls[:, :-1]
    best = cls.argmax(axis=1)
    best_score = cls[np.arange(n), best]
    keep = best_score >= post["score_threshold"]
    b = raw_boxes.copy()
    if post["box_format"] == "cxcywh":
        b = np.stack([b[:, 0] - b[:, 2] / 2, b[:, 1] - b[:, 3] / 2, b[:, 0] + b[:, 2] / 2, b[:, 1] + b[:, 3] / 2], 1)
    if post["normalized"]:
        b = b * np.array([transform["input_width"], transform["input_height"]] * 2)
    idx = np.nonzero(keep)[0]
    kept = np_batched_nms(b[idx], best_score[idx], best[idx], post["iou_threshold"])[: post["max_detections"]]
    sx = transform["original_width"] / transform["resized_width"]
    sy = transform["original_height"] / transform["resized_height"]
    out = []
    for k in kept:
        i = idx[k]
        x1, y1, x2, y2 = b[i]
        image_box = [(x1 + transform["crop_left"]) * sx, (y1 + transform["crop_top"]) * sy,
                     (x2 + transform["crop_left"]) * sx, (y2 + transform["crop_top"]) * sy]
        limits = [transform["original_width"], transform["original_height"]] * 2
        image_box = [float(min(max(v, 0.0), lim)) for v, lim in zip(image_box, limits)]
        out.append({"row": int(i), "class_index": int(best[i]), "score": float(best_score[i]),
                    "input_box": [float(v) for v in b[i]], "image_box": image_box})
    return out


def make_post_fixtures():
    rng = np.random.RandomState(7)
    nms_cases = []
    for n, classes in [(300, 3), (120, 1), (400, 5)]:
        xy = rng.uniform(0, 100, size=(n, 2))
        wh = rng.uniform(5, 40, size=(n, 2))
        boxes = np.concatenate([xy, xy + wh], axis=1)
        scores = rng.uniform(0, 1, size=n)
        cls = rng.randint(0, classes, size=n)
        for threshold in [0.3, 0.5, 0.7, 1.0]:
            nms_cases.append({"boxes": boxes.tolist(), "scores": scores.tolist(), "classes": cls.tolist(),
                              "iou_threshold": threshold,
                              "kept": np_batched_nms(boxes, scores, cls, threshold)})
    transform = {"original_width": 640, "original_height": 427, "resized_width": 383, "resized_height": 256,
                 "crop_left": 80, "crop_top": 16, "input_width": 224, "input_height": 224}
    detect_cases = []
    n, c = 500, 4
    centres = rng.uniform(0, 224, size=(n, 2))
    sizes = rng.uniform(8, 90, size=(n, 2))
    logits = rng.normal(0, 2.5, size=(n, c)).astype(np.float32)
    objectness = rng.uniform(0, 1, size=(n, 1))
    rows = np.concatenate([centres, sizes, objectness, logits], axis=1).astype(np.float32)[None]
    post_rows = {"format": "rows", "activation": "sigmoid", "background_class": False, "box_format": "cxcywh",
                 "normalized": False, "has_objectness": True, "score_threshold": 0.25, "iou_threshold": 0.45,
                 "max_detections": 30}
    detect_cases.append({"name": "rows_objectness_sigmoid_cxcywh", "post": post_rows, "transform": transform,
                         "scores": {"shape": list(rows.shape), "values": rows.ravel().tolist()},
                         "expected": np_detect(rows, None, post_rows, transform)})
    corners = np.sort(rng.uniform(0, 1, size=(n, 2, 2)), axis=1).reshape(n, 4)[:, [0, 2, 1, 3]]
    detr_scores = rng.normal(0, 3, size=(1, n, c + 1)).astype(np.float32)
    detr_boxes = corners.astype(np.float32)[None]
    post_detr = {"format": "detr", "activation": "softmax", "background_class": True, "box_format": "xyxy",
                 "normalized": True, "has_objectness": False, "score_threshold": 0.5, "iou_threshold": 0.6,
                 "max_detections": 100}
    detect_cases.append({"name": "detr_softmax_background_xyxy_normalized", "post": post_detr,
                         "transform": transform,
                         "scores": {"shape": list(detr_scores.shape), "values": detr_scores.ravel().tolist()},
                         "boxes": {"shape": list(detr_boxes.shape), "values": detr_boxes.ravel().tolist()},
                         "expected": np_detect(detr_scores, detr_boxes, post_detr, transform)})
    post_none = dict(post_rows, has_objectness=False, activation="none", iou_threshold=1.0, score_threshold=1.5,
                     box_format="xyxy", max_detections=1000)
    rows_plain = rows.copy()
    rows_plain[..., 2:4] = rows_plain[..., 0:2] + rows_plain[..., 2:4]
    detect_cases.append({"name": "rows_no_nms_xyxy", "post": post_none, "transform": transform,
                         "scores": {"shape": list(rows_plain.shape), "values": rows_plain.ravel().tolist()},
                         "expected": np_detect(rows_plain, None, post_none, transform)})
    out = FIXTURES / "post"
    out.mkdir(parents=True, exist_ok=True)
    (out / "nms.json").write_text(json.dumps(nms_cases) + "\n")
    (out / "detection.json").write_text(json.dumps(detect_cases) + "\n")
    print(f"post: {len(nms_cases)} NMS cases, {len(detect_cases)} detection cases; kept "
          + ", ".join(str(len(c["expected"])) for c in detect_cases))


# ---------------------------------------------------------------------------------------------
# audio: stereo sine sweeps written as WAV, reference = channel mean of the quantized samples
# resampled by soxr ("VHQ"), an independent band-limited resampler

def wav_bytes(channels_data, rate, kind, bits):
    """A minimal RIFF/WAVE writer: PCM integer (format 1) or IEEE float (format 3)."""
    frames = np.stack(channels_data, axis=1)
    if kind == "float":
        data = frames.astype("<f4").tobytes()
        tag = 3
    elif bits == 8:
        data = (frames + 128).astype(np.uint8).tobytes()
        tag = 1
    elif bits == 24:
        ints = frames.astype("<i4").reshape(-1)
        data = b"".join(int(v).to_bytes(3, "little", signed=True) for v in ints)
        tag = 1
    else:
        data = frames.astype("<i%d" % (bits // 8)).tobytes()
        tag = 1
    channels = frames.shape[1]
    block = channels * bits // 8
    fmt = struct.pack("<HHIIHH", tag, channels, rate, rate * block, block, bits)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(data)) + data
    return b"RIFF" + struct.pack("<I", len(body)) + body


def sweep(rate, seconds, f0, f1, phase=0.0):
    t = np.arange(int(rate * seconds)) / rate
    k = (f1 - f0) / seconds
    return np.sin(2 * np.pi * (f0 * t + 0.5 * k * t * t) + phase)


def make_audio_fixtures():
    import soxr

    out = FIXTURES / "audio"
    out.mkdir(parents=True, exist_ok=True)
    cases = []
    for rate, kind, bits, top in [(44100, "int", 16, 6000.0), (48000, "float", 32, 6000.0),
                                  (8000, "int", 24, 3200.0), (22050, "int", 8, 6000.0), (32000, "int", 32, 6000.0)]:
        left = 0.6 * sweep(rate, 0.5, 50.0, top)
        right = 0.3 * sweep(rate, 0.5, 80.0, top * 0.9, phase=1.0)
        if kind == "float":
            quantized = [left.astype(np.float32), right.astype(np.float32)]
            values = [q.astype(np.float64) for q in quantized]
        else:
            full = 2 ** (bits - 1)
            quantized = [np.clip(np.round(c * full), -full, full - 1).astype(np.int64) for c in (left, right)]
            values = [q / full for q in quantized]
        name = f"sweep_{rate}_{kind}{bits}_stereo"
        (out / (name + ".wav")).write_bytes(wav_bytes(quantized, rate, kind, bits))
        mono = (values[0] + values[1]) / 2
        expected = soxr.resample(mono, rate, 16000, quality="VHQ").astype(np.float32)
        (out / (name + ".f32")).write_bytes(expected.astype("<f4").tobytes())
        cases.append({"name": name, "wav": name + ".wav", "expected": name + ".f32", "rate": rate,
                      "top_frequency_hz": top, "samples": int(expected.size)})
    (out / "cases.json").write_text(json.dumps(cases, indent=1) + "\n")
    print(f"audio: {len(cases)} sweeps in {out}")


# ---------------------------------------------------------------------------------------------
# MLC image_decode: Pillow antialiased bilinear to the cover size, then the centre crop
# (round-half-to-even offsets), [1, H, W, 3] uint8

def make_mlc_fixtures():
    out = FIXTURES / "mlc"
    out.mkdir(parents=True, exist_ok=True)
    cases = []
    for source, mode, height, width in [("rgb_160x120.png", "center_crop", 48, 48),
                                        ("rgb_160x120.png", "center_crop", 30, 70),
                                        ("rgb_17x29.png", "center_crop", 40, 20),
                                        ("rgba_37x23.png", "stretch", 50, 30),
                                        ("tall_5x501.png", "stretch", 10, 4),
                                        ("tall_3x400.png", "center_crop", 40, 2),
                                        ("tall_5x500.png", "stretch", 10, 4)]:
        image = Image.open(FIXTURES / "image" / source).convert("RGB")
        w, h = image.size
        if mode == "stretch":
            rw, rh = width, height
        elif width * h >= height * w:
            rw, rh = width, h * width // w
        else:
            rw, rh = w * height // h, height
        resized = image.resize((rw, rh), Image.Resampling.BILINEAR, reducing_gap=None)
        top, left = round((rh - height) / 2), round((rw - width) / 2)
        array = np.asarray(resized)[top:top + height, left:left + width]
        name = f"{mode}_{source.split('.')[0]}_{height}x{width}"
        (out / (name + ".bin")).write_bytes(np.ascontiguousarray(array).tobytes())
        cases.append({"name": name, "source": source, "mode": mode, "height": height, "width": width,
                      "expected": name + ".bin"})
    (out / "cases.json").write_text(json.dumps(cases, indent=1) + "\n")
    print(f"mlc: {len(cases)} image_decode cases in {out}")


SECTIONS = {"image": make_image_fixtures, "post": make_post_fixtures, "audio": make_audio_fixtures,
            "mlc": make_mlc_fixtures}

def live(raw, width, height, spec_json):
    """One tensor on stdout (raw little-endian) for preprocess/tests/live_reference.rs."""
    from modelport.manifest.tensors import InputSpec
    from modelport.preprocess import preprocess_image, resized_size

    width, height = int(width), int(height)
    with open(raw, "rb") as f:
        array = np.frombuffer(f.read(), dtype=np.uint8).reshape(height, width, 3)
    spec = InputSpec.model_validate(json.loads(spec_json))
    if spec.preprocess.resize.method == "nearest":
        w, h = resized_size(width, height, spec.preprocess.resize)
        array = exact_nearest(array, w, h)
    tensor = preprocess_image(Image.fromarray(np.ascontiguousarray(array)), spec)
    sys.stdout.buffer.write(np.ascontiguousarray(tensor).astype(tensor.dtype.newbyteorder("<")).tobytes())


if __name__ == "__main__":
    if sys.argv[1:2] == ["live"]:
        live(*sys.argv[2:6])
    else:
        for section in sys.argv[1:] or list(SECTIONS):
            SECTIONS[section]()
