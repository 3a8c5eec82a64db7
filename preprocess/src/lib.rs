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
//! - [`tensor`]: the tensor type and its raw little-endian (golden-file) bytes.

pub mod audio;
pub mod image;
pub mod mlc;
pub mod post;
pub mod tensor;
