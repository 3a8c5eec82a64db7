//! # gpuport-preprocess
//!
//! Exact preprocessing and post-processing for the two manifest formats gpuport runs (see
//! `README.md` and `docs/spec/preprocess.md`):
//!
//! - [`image`]: decode (PNG, JPEG, WebP, BMP, GIF) with EXIF orientation, Pillow-12-exact
//!   antialiased resize, exact nearest, half-pixel float bilinear, centre crop, normalize, layout
//!   and dtype — the ModelPort 0.1 input tensor, bit-exact with `modelport.preprocess`;
//! - [`post`]: softmax/sigmoid, top-k, detection decoding (`rows`, `detr`), per-class NMS and
//!   box mapping through the recorded [`image::InverseTransform`];
//! - [`mlc`]: the MLC package processors `image_decode` and `audio_decode` ([`audio`]: WAV
//!   decode, mono, band-limited resampling) and the prefill-chunk split of adapter rows;
//! - [`tensor`]: the tensor type and its raw little-endian (golden-file) bytes and `.npy` form.
//!
//! ```
//! use gpuport_manifest_core::modelport::parse_manifest;
//! use gpuport_preprocess::image::{decode_image_file, preprocess_image};
//!
//! let text = std::fs::read_to_string("../examples/modelport/image-classification.json").unwrap();
//! let manifest = parse_manifest(&text).expect("a valid manifest").document;
//! let image = decode_image_file("tests/fixtures/image/rgb_160x120.png".as_ref()).unwrap();
//! let out = preprocess_image(&image, &manifest.inputs[0]).unwrap();
//! assert_eq!(out.tensor.shape, [1, 3, 224, 224]);
//! // Model-input pixel (0, 0) in the original 160×120 image:
//! let (x, y) = out.transform.to_original(0.0, 0.0);
//! assert!((x - 58.0 * 160.0 / 341.0).abs() < 1e-9 && (y - 16.0 * 120.0 / 256.0).abs() < 1e-9);
//! ```

pub mod audio;
pub mod image;
pub mod mlc;
pub mod post;
pub mod tensor;
