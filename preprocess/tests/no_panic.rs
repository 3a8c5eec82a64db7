//! Untrusted input never panics: arbitrary and mutated image and WAV files give a value or a
//! typed error; random images and specs through the whole pipeline likewise.

#![allow(clippy::unwrap_used)]

use std::path::Path;

use gpuport_manifest_core::mlc::{AudioDecode, AudioFormat};
use gpuport_manifest_core::modelport::{
    ColorOrder, DType, Dim, ImagePreprocess, InputSpec, Layout, Resize, ResizeMethod, ResizeTarget,
};
use gpuport_preprocess::image::{RgbImage, decode_image, preprocess_image};
use gpuport_preprocess::mlc::audio_decode;
use proptest::prelude::*;

fn fixture(dir: &str, name: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(dir)
            .join(name),
    )
    .unwrap()
}

const IMAGES: &[&str] = &[
    "rgb_37x23.png",
    "palette_37x23.png",
    "rgb16_37x23.png",
    "exif6_13x7.png",
    "baseline_160x120.jpg",
    "progressive_160x120.jpg",
    "lossless_37x23.webp",
    "rgb_37x23.bmp",
    "palette_37x23.gif",
];
const WAVS: &[&str] = &[
    "sweep_8000_int24_stereo.wav",
    "sweep_48000_float32_stereo.wav",
    "sweep_22050_int8_stereo.wav",
];

fn audio_spec() -> AudioDecode {
    AudioDecode {
        format: AudioFormat::PcmF32,
        sample_rate_hz: 16000,
        channels: 1,
        min_samples: 1,
        max_samples: 480_000,
    }
}

/// A valid file with `edits` (offset, byte) written over it and cut to `keep` bytes.
fn mutate(mut bytes: Vec<u8>, edits: &[(usize, u8)], keep: usize) -> Vec<u8> {
    for &(at, value) in edits {
        let len = bytes.len();
        bytes[at % len] = value;
    }
    bytes.truncate(keep.max(1));
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = decode_image(&data);
        let _ = audio_decode(&data, &audio_spec());
    }

    #[test]
    fn mutated_images_never_panic(
        which in 0..IMAGES.len(),
        edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8),
        keep in 1usize..40_000,
    ) {
        let bytes = mutate(fixture("image", IMAGES[which]), &edits, keep);
        let _ = decode_image(&bytes);
    }

    #[test]
    fn mutated_wavs_never_panic(
        which in 0..WAVS.len(),
        edits in proptest::collection::vec((0usize..64, any::<u8>()), 1..6),
        keep in 1usize..4_000,
    ) {
        let bytes = mutate(fixture("audio", WAVS[which]), &edits, keep);
        let _ = audio_decode(&bytes, &audio_spec());
    }

    #[test]
    fn random_images_and_specs_give_a_tensor_or_an_error(
        (w, h) in (1usize..24, 1usize..24),
        seed in any::<u8>(),
        (shorter, size_h, size_w, use_size) in (1u64..40, 1u64..40, 1u64..40, any::<bool>()),
        crop in proptest::option::of((1u64..40, 1u64..40)),
        method in 0usize..3,
        antialias in any::<bool>(),
        nchw in any::<bool>(),
    ) {
        let pixels: Vec<u8> = (0..w * h * 3).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect();
        let image = RgbImage::new(w, h, pixels).unwrap();
        let method = [ResizeMethod::Bilinear, ResizeMethod::Bicubic, ResizeMethod::Nearest][method];
        let target = if use_size { ResizeTarget::Size([size_h, size_w]) } else { ResizeTarget::ShorterSide(shorter) };
        let input = InputSpec {
            name: "x".into(),
            dtype: DType::Float16,
            shape: vec![Dim::Dynamic; 4],
            layout: Some(if nchw { Layout::Nchw } else { Layout::Nhwc }),
            preprocess: Some(ImagePreprocess {
                resize: Resize { target, method, antialias },
                center_crop: crop.map(|(h, w)| [h, w]),
                color: ColorOrder::Rgb,
                scale: 1.0,
                mean: [1.0; 3],
                std: [2.0; 3],
            }),
        };
        let forbidden = matches!((method, antialias), (ResizeMethod::Bicubic, false) | (ResizeMethod::Nearest, true));
        match preprocess_image(&image, &input) {
            Ok(out) => {
                prop_assert!(!forbidden);
                let (oh, ow) = (out.transform.input_height, out.transform.input_width);
                prop_assert_eq!(out.tensor.data.len(), oh * ow * 3);
                if let Some((ch, cw)) = crop {
                    prop_assert_eq!((oh as u64, ow as u64), (ch, cw));
                }
            }
            Err(e) => prop_assert!(forbidden, "{e}"),
        }
    }
}

#[test]
fn oversized_targets_are_refused_not_allocated() {
    let image = RgbImage::new(2, 2, vec![7; 12]).unwrap();
    let input = |target, crop| InputSpec {
        name: "x".into(),
        dtype: DType::Float32,
        shape: vec![Dim::Dynamic; 4],
        layout: Some(Layout::Nchw),
        preprocess: Some(ImagePreprocess {
            resize: Resize {
                target,
                method: ResizeMethod::Nearest,
                antialias: false,
            },
            center_crop: crop,
            color: ColorOrder::Rgb,
            scale: 1.0,
            mean: [0.0; 3],
            std: [1.0; 3],
        }),
    };
    for (target, crop) in [
        (ResizeTarget::Size([65_536, 65_536]), None),
        (ResizeTarget::Size([70_000, 2]), None),
        (ResizeTarget::ShorterSide(u64::MAX), None),
        (ResizeTarget::Size([4, 4]), Some([0, 4])),
        (ResizeTarget::Size([4, 4]), Some([60_000, 60_000])),
    ] {
        let err = preprocess_image(&image, &input(target, crop)).unwrap_err();
        assert!(
            matches!(
                err,
                gpuport_preprocess::image::PreprocessError::BadSize { .. }
            ),
            "{err}"
        );
    }
    // shorter_side on a 1x1000 image: the computed height 2000 x 1000 overflows, not 2000 x 2000.
    let tall = RgbImage::new(1, 1000, vec![7; 3000]).unwrap();
    let err = preprocess_image(&tall, &input(ResizeTarget::ShorterSide(2000), None)).unwrap_err();
    assert_eq!(
        err,
        gpuport_preprocess::image::PreprocessError::BadSize {
            input: "x".into(),
            what: "resize",
            width: 2000,
            height: 2_000_000,
        }
    );
}

#[test]
fn image_decode_cover_overflow_names_the_computed_size() {
    use gpuport_manifest_core::mlc::{
        ImageDecode, ImageFormat, ImageLayout, ImageResize, ResizeMode,
    };
    use gpuport_preprocess::mlc::{ImageDecodeError, image_decode};
    let tall = RgbImage::new(1, 1000, vec![7; 3000]).unwrap();
    let spec = ImageDecode {
        format: ImageFormat::RgbU8,
        layout: ImageLayout::Nhwc,
        resize: ImageResize {
            mode: ResizeMode::CenterCrop,
            height: 100,
            width: 100,
        },
        num_embeddings: 1,
    };
    let err = image_decode(
        &tall,
        &spec,
        gpuport_manifest_core::mlc::AdapterDtype::Uint8,
    )
    .unwrap_err();
    assert_eq!(
        err,
        ImageDecodeError::BadResize {
            width: 100,
            height: 100_000,
            target_width: 100,
            target_height: 100,
        }
    );
}

/// A mono 8-bit PCM WAV of `samples` silent samples declaring `rate` Hz (8-bit so that the
/// byte rate of 2^31 Hz still fits its 32-bit field).
fn silent_wav(rate: u32, samples: u32) -> Vec<u8> {
    let mut w = Vec::new();
    w.extend_from_slice(b"RIFF");
    w.extend_from_slice(&(36 + samples).to_le_bytes());
    w.extend_from_slice(b"WAVEfmt ");
    w.extend_from_slice(&16u32.to_le_bytes());
    w.extend_from_slice(&1u16.to_le_bytes());
    w.extend_from_slice(&1u16.to_le_bytes());
    w.extend_from_slice(&rate.to_le_bytes());
    w.extend_from_slice(&rate.to_le_bytes());
    w.extend_from_slice(&1u16.to_le_bytes());
    w.extend_from_slice(&8u16.to_le_bytes());
    w.extend_from_slice(b"data");
    w.extend_from_slice(&samples.to_le_bytes());
    w.resize(w.len() + samples as usize, 128);
    w
}

#[test]
fn absurd_wav_rates_are_refused_naming_the_rate() {
    use gpuport_preprocess::audio::ResampleError;
    use gpuport_preprocess::mlc::AudioDecodeError;
    for rate in [1u32 << 31, 999, 1] {
        let err = audio_decode(&silent_wav(rate, 100), &audio_spec()).unwrap_err();
        assert!(
            matches!(
                err,
                AudioDecodeError::Resample(ResampleError::RateOutOfRange { which: "input", rate: r }) if r == rate
            ),
            "{err}"
        );
        assert!(err.to_string().contains(&rate.to_string()), "{err}");
    }
    assert_eq!(
        audio_decode(&silent_wav(1000, 100), &audio_spec())
            .unwrap()
            .len(),
        1600
    );
}

#[test]
fn too_long_is_decided_from_the_resampled_length_before_resampling() {
    use gpuport_preprocess::mlc::AudioDecodeError;
    // 1 kHz -> 16 kHz grows 16x: 40,000 input samples would become 640,000 > 480,000.
    let err = audio_decode(&silent_wav(1000, 40_000), &audio_spec()).unwrap_err();
    assert!(
        matches!(
            err,
            AudioDecodeError::TooLong {
                samples: 640_000,
                max_samples: 480_000,
                ..
            }
        ),
        "{err}"
    );
    let short = AudioDecode {
        min_samples: 2000,
        ..audio_spec()
    };
    let err = audio_decode(&silent_wav(8000, 100), &short).unwrap_err();
    assert!(
        matches!(err, AudioDecodeError::TooShort { samples: 200, .. }),
        "{err}"
    );
}
