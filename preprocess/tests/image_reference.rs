//! Every case of `fixtures/image/cases.json` (made by `tools/preprocess_reference.py` with
//! `modelport.preprocess` and Pillow 12): decode the committed source, preprocess, compare.
//! Tolerance 0 means the raw little-endian bytes are identical.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use gpuport_manifest_core::Choice;
use gpuport_manifest_core::modelport::{
    ColorOrder, DType, Dim, ImagePreprocess, InputSpec, Layout, Resize, ResizeMethod, ResizeTarget,
};
use gpuport_preprocess::image::{decode_image_file, preprocess_image};
use serde_json::Value;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/image")
}

fn choice<T: Choice>(name: &str) -> T {
    *T::ALL.iter().find(|v| v.name() == name).unwrap()
}

fn pair(v: &Value) -> [u64; 2] {
    [v[0].as_u64().unwrap(), v[1].as_u64().unwrap()]
}

fn triple(v: &Value, default: f64) -> [f64; 3] {
    if v.is_null() {
        return [default; 3];
    }
    [0, 1, 2].map(|i| v[i].as_f64().unwrap())
}

fn input_spec(case: &Value) -> InputSpec {
    let pre = &case["preprocess"];
    let resize = &pre["resize"];
    let target = if resize["size"].is_null() {
        ResizeTarget::ShorterSide(resize["shorter_side"].as_u64().unwrap())
    } else {
        ResizeTarget::Size(pair(&resize["size"]))
    };
    InputSpec {
        name: "x".into(),
        dtype: choice::<DType>(case["dtype"].as_str().unwrap()),
        shape: case["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| Dim::Fixed(d.as_u64().unwrap()))
            .collect(),
        layout: Some(choice::<Layout>(case["layout"].as_str().unwrap())),
        preprocess: Some(ImagePreprocess {
            resize: Resize {
                target,
                method: choice::<ResizeMethod>(resize["method"].as_str().unwrap()),
                antialias: resize["antialias"].as_bool().unwrap_or(false),
            },
            center_crop: (!pre["center_crop"].is_null()).then(|| pair(&pre["center_crop"])),
            color: choice::<ColorOrder>(pre["color"].as_str().unwrap_or("RGB")),
            scale: pre["scale"].as_f64().unwrap_or(1.0 / 255.0),
            mean: triple(&pre["mean"], 0.0),
            std: triple(&pre["std"], 1.0),
        }),
    }
}

fn decode_le(dtype: &str, bytes: &[u8]) -> Vec<f64> {
    match dtype {
        "float32" => bytes
            .chunks_exact(4)
            .map(|b| f64::from(f32::from_le_bytes(b.try_into().unwrap())))
            .collect(),
        "float16" => bytes
            .chunks_exact(2)
            .map(|b| half::f16::from_le_bytes(b.try_into().unwrap()).to_f64())
            .collect(),
        _ => panic!("tolerance compare of {dtype}"),
    }
}

#[test]
fn every_case_matches_the_python_reference() {
    let text = std::fs::read_to_string(fixtures().join("cases.json")).unwrap();
    let cases: Vec<Value> = serde_json::from_str(&text).unwrap();
    assert!(cases.len() >= 40);
    let mut failures = Vec::new();
    for case in &cases {
        let name = case["name"].as_str().unwrap();
        let image = decode_image_file(&fixtures().join(case["source"].as_str().unwrap())).unwrap();
        let got = preprocess_image(&image, &input_spec(case)).unwrap();
        let expected = std::fs::read(fixtures().join(case["expected"].as_str().unwrap())).unwrap();
        let actual = got.tensor.data.to_le_bytes();
        let shape: Vec<usize> = case["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap() as usize)
            .collect();
        assert_eq!(got.tensor.shape, shape, "{name}");
        let tolerance = case["tolerance"].as_f64().unwrap();
        let dtype = case["dtype"].as_str().unwrap();
        let worst = if actual == expected {
            0.0
        } else if dtype == "uint8" {
            actual
                .iter()
                .zip(&expected)
                .map(|(&a, &b)| f64::from(a.abs_diff(b)))
                .fold(0.0, f64::max)
        } else if dtype.starts_with("float") {
            decode_le(dtype, &actual)
                .iter()
                .zip(decode_le(dtype, &expected))
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max)
        } else {
            f64::INFINITY
        };
        eprintln!("{name}: max |diff| {worst} (tolerance {tolerance})");
        if actual.len() != expected.len() || worst > tolerance {
            failures.push(format!("{name}: max |diff| {worst} > {tolerance}"));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn bmp16_levels_are_pillows_truncated_expansion() {
    // Pillow's BGR;15 / BGR;16 unpackers give v * 255 / max truncated (3 -> 24, 16 -> 131).
    let levels = |bits: u32| -> Vec<u8> {
        let max = (1u32 << bits) - 1;
        (0..=max).map(|v| (v * 255 / max) as u8).collect()
    };
    for (file, bits) in [
        ("rgb555_37x23.bmp", [5, 5, 5]),
        ("rgb565_37x23.bmp", [5, 6, 5]),
    ] {
        let image = decode_image_file(&fixtures().join(file)).unwrap();
        let allowed = bits.map(levels);
        let mut seen = [0usize; 3];
        for pixel in image.pixels().chunks_exact(3) {
            for c in 0..3 {
                assert!(
                    allowed[c].contains(&pixel[c]),
                    "{file} channel {c}: {}",
                    pixel[c]
                );
            }
            seen[0] += usize::from(pixel[0] == 24);
            seen[1] += usize::from(pixel[0] == 131);
        }
        assert!(
            seen[0] > 0 && seen[1] > 0,
            "{file}: levels 3 and 16 not exercised"
        );
    }
}
