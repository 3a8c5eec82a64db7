//! Images: arbitrary bytes are decoded (PNG, JPEG, WebP, BMP, GIF, EXIF) and, when they decode,
//! run through a ModelPort resize/crop and MLC `image_decode` without panicking.
#![no_main]

use gpuport_manifest_core::mlc::{
    AdapterDtype, ImageDecode, ImageFormat, ImageLayout, ImageResize, ResizeMode,
};
use gpuport_manifest_core::modelport::{
    ColorOrder, DType, Dim, ImagePreprocess, InputSpec, Layout, Resize, ResizeMethod, ResizeTarget,
};
use libfuzzer_sys::fuzz_target;

/// Most pixels an input may declare and still be decoded here. Decoding is linear in the
/// declared pixels however few bytes declare them, and under the fuzzer's instrumentation a
/// progressive JPEG took 0.1–1.4 µs a pixel: 15 s for one declaring 160 × 65,535, 10–20 s for
/// a 1.7 KB one declaring 32,928 × 4,984 (a slow unit in CI, 2026-12-05), where the target's
/// budget is 20 s an input (`xtask fuzz`'s `timeout_s`); 4 Mi pixels stay under 6 s. Larger
/// declarations are linear work, not hangs; the size limit itself is tested by
/// `preprocess/tests/decode_limits.rs`.
const MAX_FUZZ_PIXELS: u64 = 1 << 22;

fuzz_target!(|data: &[u8]| {
    let declared = image::ImageReader::new(std::io::Cursor::new(data))
        .with_guessed_format()
        .ok()
        .and_then(|r| r.into_dimensions().ok());
    if declared.is_some_and(|(w, h)| u64::from(w) * u64::from(h) > MAX_FUZZ_PIXELS) {
        return;
    }
    let Ok(image) = gpuport_preprocess::image::decode_image(data) else {
        return;
    };
    let input = InputSpec {
        name: "x".into(),
        dtype: DType::Uint8,
        shape: vec![Dim::Dynamic; 4],
        layout: Some(Layout::Nhwc),
        preprocess: Some(ImagePreprocess {
            resize: Resize {
                target: ResizeTarget::ShorterSide(17),
                method: ResizeMethod::Bicubic,
                antialias: true,
            },
            center_crop: Some([19, 13]),
            color: ColorOrder::Bgr,
            scale: 1.0 / 255.0,
            mean: [0.5; 3],
            std: [0.25; 3],
        }),
    };
    let _ = gpuport_preprocess::image::preprocess_image(&image, &input);
    let spec = ImageDecode {
        format: ImageFormat::RgbU8,
        layout: ImageLayout::Nhwc,
        resize: ImageResize {
            mode: ResizeMode::CenterCrop,
            height: 11,
            width: 7,
        },
        num_embeddings: 1,
    };
    let _ = gpuport_preprocess::mlc::image_decode(&image, &spec, AdapterDtype::Uint32);
});
