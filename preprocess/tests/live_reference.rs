//! Random images and random specs, each compared byte for byte with `modelport.preprocess`
//! (Pillow 12) run live through `tools/preprocess_reference.py live`. Skips loudly when the
//! Python reference is not installed (a failure under `GPUPORT_REQUIRE_REFERENCES=1`); the
//! committed fixtures (`image_reference.rs`) cover the same paths without Python.

#![allow(clippy::unwrap_used)]

use gpuport_testing::references;

use gpuport_manifest_core::modelport::{
    ColorOrder, DType, Dim, ImagePreprocess, InputSpec, Layout, Resize, ResizeMethod, ResizeTarget,
};
use gpuport_preprocess::image::{RgbImage, preprocess_image};

/// A small deterministic generator (no dependency needed for 24 cases).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % below
    }
}

#[test]
fn random_cases_match_modelport_preprocess_live() {
    if !references::python_modules_available(&["modelport.preprocess", "PIL", "numpy"]) {
        return;
    }
    let dir = tempfile_dir();
    let mut rng = Lcg(0x5eed);
    for case in 0..24 {
        let (w, h) = (5 + rng.next(80) as usize, 5 + rng.next(80) as usize);
        let pixels: Vec<u8> = (0..w * h * 3).map(|_| rng.next(256) as u8).collect();
        let (method, antialias) = [
            (ResizeMethod::Bilinear, true),
            (ResizeMethod::Bicubic, true),
            (ResizeMethod::Bilinear, false),
            (ResizeMethod::Nearest, false),
        ][rng.next(4) as usize];
        let target = if rng.next(2) == 0 {
            ResizeTarget::ShorterSide(3 + rng.next(90))
        } else {
            ResizeTarget::Size([3 + rng.next(90), 3 + rng.next(90)])
        };
        let crop = (rng.next(2) == 0).then(|| [1 + rng.next(100), 1 + rng.next(100)]);
        let dtype = [DType::Float32, DType::Float16, DType::Uint8][rng.next(3) as usize];
        let layout = if rng.next(2) == 0 {
            Layout::Nchw
        } else {
            Layout::Nhwc
        };
        let (scale, mean, std) = match dtype {
            DType::Uint8 => (1.0, [0.0, 3.5, 10.0], [1.0, 0.5, 2.0]),
            _ => (1.0 / 255.0, [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
        };
        let spec = InputSpec {
            name: "x".into(),
            dtype,
            shape: vec![Dim::Fixed(1), Dim::Dynamic, Dim::Dynamic, Dim::Dynamic],
            layout: Some(layout),
            preprocess: Some(ImagePreprocess {
                resize: Resize {
                    target,
                    method,
                    antialias,
                },
                center_crop: crop,
                color: if rng.next(2) == 0 {
                    ColorOrder::Rgb
                } else {
                    ColorOrder::Bgr
                },
                scale,
                mean,
                std,
            }),
        };
        let raw = dir.join(format!("case{case}.rgb"));
        std::fs::write(&raw, &pixels).unwrap();
        let json = serde_json::to_string(&spec).unwrap();
        let expected = references::python_tool(
            "preprocess_reference.py",
            &[
                "live".as_ref(),
                raw.as_os_str(),
                w.to_string().as_ref(),
                h.to_string().as_ref(),
                json.as_ref(),
            ],
        );
        let image = RgbImage::new(w, h, pixels).unwrap();
        let got = preprocess_image(&image, &spec).unwrap();
        assert_eq!(
            got.tensor.data.to_le_bytes(),
            expected,
            "case {case}: {w}x{h} {json}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("gpuport-preprocess-live-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
