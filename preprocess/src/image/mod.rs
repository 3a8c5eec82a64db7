//! Images: decode (with EXIF orientation), Pillow-exact resize, crop, and the tensor the
//! ModelPort spec defines.

mod crop;
mod decode;
mod geometry;
mod normalize;
mod pipeline;
mod resize;
mod sample;

pub use crop::CropPlan;
pub use decode::{DecodeError, MAX_DECODE_ALLOC_BYTES, decode_image, decode_image_file};
pub use geometry::{InverseTransform, resized_size};
pub use pipeline::{MAX_PIXELS, MAX_SIDE, PreprocessError, Preprocessed, preprocess_image};
pub(crate) use resize::resize_window;
pub use resize::{
    Filter, IntermediateTooLarge, MAX_INTERMEDIATE_BYTES, Window, resize_antialiased,
};
pub use sample::{resize_bilinear_float, resize_nearest};

/// An 8-bit RGB image, rows top to bottom, three bytes per pixel, no padding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RgbImage {
    width: usize,
    height: usize,
    pixels: Vec<u8>,
}

impl RgbImage {
    /// Wraps `pixels` (`width × height × 3` bytes); `None` when the length does not match or a
    /// side is 0.
    pub fn new(width: usize, height: usize, pixels: Vec<u8>) -> Option<Self> {
        let expected = width.checked_mul(height)?.checked_mul(3)?;
        (width > 0 && height > 0 && pixels.len() == expected).then_some(Self {
            width,
            height,
            pixels,
        })
    }

    /// Width in pixels.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Height in pixels.
    pub fn height(&self) -> usize {
        self.height
    }

    /// The interleaved RGB bytes.
    pub fn pixels(&self) -> &[u8] {
        &self.pixels
    }

    /// Gives the interleaved RGB bytes back.
    pub fn into_pixels(self) -> Vec<u8> {
        self.pixels
    }
}
