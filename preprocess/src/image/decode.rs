//! Decoding: PNG, JPEG, WebP, BMP, GIF (first frame) through the `image` crate, EXIF orientation
//! applied, then Pillow's `convert("RGB")` for 8-bit data (alpha dropped, never composited; gray
//! and palette expanded). 16-bit samples keep their high byte (Pillow does that for 16-bit RGB(A)
//! PNGs but clips 16-bit grayscale to 255; we do not copy that quirk — `docs/spec/preprocess.md`).

use std::io::Cursor;
use std::path::Path;

use image::{DynamicImage, ImageDecoder, ImageReader, Limits};

use super::RgbImage;

/// The most memory one decode may allocate (the decoded pixels included).
pub const MAX_DECODE_ALLOC_BYTES: u64 = 1 << 30;

/// Why an image could not be decoded.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// The file could not be read.
    #[error("cannot read image {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The bytes are not PNG, JPEG, WebP, BMP or GIF.
    #[error("unsupported image format (expected PNG, JPEG, WebP, BMP or GIF)")]
    UnknownFormat,
    /// The decoder refused the data (corrupt file, unsupported variant such as an unsupported
    /// JPEG colour transform, or a size beyond the limits).
    #[error("cannot decode image: {0}")]
    Decode(#[from] image::ImageError),
    /// The declared dimensions need more memory than decoding may take.
    #[error(
        "image of {width}x{height} needs {bytes} bytes to decode, more than the {limit}-byte limit"
    )]
    TooLarge {
        /// Declared width.
        width: u32,
        /// Declared height.
        height: u32,
        /// Bytes the decoded pixels would take.
        bytes: u64,
        /// The limit ([`MAX_DECODE_ALLOC_BYTES`]).
        limit: u64,
    },
    /// The image has no pixels.
    #[error("image has no pixels ({width}x{height})")]
    Empty {
        /// Width.
        width: u32,
        /// Height.
        height: u32,
    },
}

/// Decodes `path` (see [`decode_image`]).
pub fn decode_image_file(path: &Path) -> Result<RgbImage, DecodeError> {
    let bytes = std::fs::read(path).map_err(|source| DecodeError::Read {
        path: path.display().to_string(),
        source,
    })?;
    decode_image(&bytes)
}

/// Decodes an encoded image, applies its EXIF orientation (1–8) and converts it to 8-bit RGB.
/// The format is detected from the bytes, never from a file name.
pub fn decode_image(bytes: &[u8]) -> Result<RgbImage, DecodeError> {
    let mut reader = ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| DecodeError::Decode(image::ImageError::IoError(e)))?;
    if reader.format().is_none() {
        return Err(DecodeError::UnknownFormat);
    }
    let mut limits = Limits::default();
    limits.max_alloc = Some(MAX_DECODE_ALLOC_BYTES);
    reader.limits(limits);
    let mut decoder = reader.into_decoder()?;
    // `DynamicImage::from_decoder` allocates the declared size without consulting
    // `Limits::max_alloc` (only `ImageReader::decode` does), so a small file declaring huge
    // dimensions would abort the process: check the declared size first.
    let declared = decoder.total_bytes();
    if declared > MAX_DECODE_ALLOC_BYTES {
        let (width, height) = decoder.dimensions();
        return Err(DecodeError::TooLarge {
            width,
            height,
            bytes: declared,
            limit: MAX_DECODE_ALLOC_BYTES,
        });
    }
    // A file whose EXIF block cannot be read keeps its pixels as stored, as Pillow does.
    let orientation = decoder.orientation().ok();
    let mut decoded = DynamicImage::from_decoder(decoder)?;
    if let Some(orientation) = orientation {
        decoded.apply_orientation(orientation);
    }
    let mut rgb = to_rgb8(decoded)?;
    if let Some(bits) = bmp16_channel_bits(bytes) {
        rgb = pillow_bmp16_levels(rgb, bits)?;
    }
    Ok(rgb)
}

/// Bits of the red, green and blue channels of a 16-bit BMP in a layout Pillow reads
/// (`BGR;15` — no compression, or bitfields `0x7C00 0x3E0 0x1F` — and `BGR;16` — bitfields
/// `0xF800 0x7E0 0x1F`); `None` for anything else.
fn bmp16_channel_bits(bytes: &[u8]) -> Option<[u32; 3]> {
    let u16_at = |at: usize| {
        bytes
            .get(at..at + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
    };
    let u32_at = |at: usize| {
        bytes
            .get(at..at + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    if bytes.get(..2) != Some(b"BM".as_slice()) || u32_at(14)? < 40 || u16_at(28)? != 16 {
        return None;
    }
    match u32_at(30)? {
        0 => Some([5, 5, 5]),
        3 => match (u32_at(54)?, u32_at(58)?, u32_at(62)?) {
            (0x7C00, 0x3E0, 0x1F) => Some([5, 5, 5]),
            (0xF800, 0x7E0, 0x1F) => Some([5, 6, 5]),
            _ => None,
        },
        _ => None,
    }
}

/// Re-expands the 5/6-bit channels of a 16-bit BMP as Pillow does, `v × 255 / max` truncated
/// (the image crate rounds: 5-bit 3 → 25 where Pillow gives 24, 16 → 132 where Pillow gives
/// 131). The crate's expansion is one-to-one, so each 8-bit value maps back to its `v`.
fn pillow_bmp16_levels(image: RgbImage, bits: [u32; 3]) -> Result<RgbImage, DecodeError> {
    let table = |bits: u32| {
        let max = (1u32 << bits) - 1;
        let mut map = [0u8; 256];
        for v in 0..=max {
            // The image crate's expansion: round(v × 255 / max).
            let rounded = (v * 255 * 2 + max) / (2 * max);
            map[rounded as usize] = (v * 255 / max) as u8;
        }
        map
    };
    let maps = bits.map(table);
    let (width, height) = (image.width(), image.height());
    let mut pixels = image.into_pixels();
    for pixel in pixels.chunks_exact_mut(3) {
        for (c, map) in pixel.iter_mut().zip(&maps) {
            *c = map[usize::from(*c)];
        }
    }
    RgbImage::new(width, height, pixels).ok_or(DecodeError::Empty {
        width: width as u32,
        height: height as u32,
    })
}

fn to_rgb8(decoded: DynamicImage) -> Result<RgbImage, DecodeError> {
    let (width, height) = (decoded.width(), decoded.height());
    let pixels: Vec<u8> = match decoded {
        DynamicImage::ImageRgb8(img) => img.into_raw(),
        DynamicImage::ImageRgba8(img) => channels_to_rgb(img.as_raw(), 4, 3, |v| v),
        DynamicImage::ImageLuma8(img) => channels_to_rgb(img.as_raw(), 1, 1, |v| v),
        DynamicImage::ImageLumaA8(img) => channels_to_rgb(img.as_raw(), 2, 1, |v| v),
        DynamicImage::ImageRgb16(img) => channels_to_rgb(img.as_raw(), 3, 3, high_byte),
        DynamicImage::ImageRgba16(img) => channels_to_rgb(img.as_raw(), 4, 3, high_byte),
        DynamicImage::ImageLuma16(img) => channels_to_rgb(img.as_raw(), 1, 1, high_byte),
        DynamicImage::ImageLumaA16(img) => channels_to_rgb(img.as_raw(), 2, 1, high_byte),
        // Float images come only from formats not enabled here; the crate's own rounding
        // conversion is the sensible reading of them.
        other => other.to_rgb8().into_raw(),
    };
    RgbImage::new(width as usize, height as usize, pixels)
        .ok_or(DecodeError::Empty { width, height })
}

fn high_byte(v: u16) -> u8 {
    (v >> 8) as u8
}

/// Takes the first `colors` (1 = gray, replicated; 3 = RGB) of every `stride` samples.
fn channels_to_rgb<T: Copy>(
    samples: &[T],
    stride: usize,
    colors: usize,
    to_u8: impl Fn(T) -> u8,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(samples.len() / stride * 3);
    for pixel in samples.chunks_exact(stride) {
        if colors == 1 {
            let v = to_u8(pixel[0]);
            out.extend_from_slice(&[v, v, v]);
        } else {
            out.extend(pixel[..3].iter().map(|&v| to_u8(v)));
        }
    }
    out
}
