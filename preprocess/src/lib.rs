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
//! - [`tensor`]: the tensor type and its raw little-endian (golden-file) bytes.

pub mod image;
pub mod tensor;
pub mod post;
