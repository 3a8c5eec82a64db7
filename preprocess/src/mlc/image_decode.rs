//! `image_decode`: decoded image → `[1, H, W, 3]` uint8 (or widened) NHWC tensor.
//!
//! The package names no filter ("bilinear or better"); gpuport uses the Pillow-exact antialiased
//! bilinear of [`crate::image`], so a Python frontend with Pillow gets the same pixels.
//! `center_crop` scales uniformly to cover the target: when `W·h ≥ H·w` the width becomes `W`
//! and the height `floor(h·W / w)`, otherwise the height becomes `H` and the width
//! `floor(w·H / h)` (torchvision's shorter-side rule for a square target), then keeps the centre
//! with ModelPort's round-half-to-even offsets.

use gpuport_manifest_core::mlc::{AdapterDtype, ImageDecode, Program, ResizeMode};

use crate::image::{CropPlan, Filter, RgbImage, resize_window};
use crate::tensor::{Tensor, TensorData};

/// Why `image_decode` failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageDecodeError {
    /// Target size 0, a side beyond [`crate::image::MAX_SIDE`], or more than
    /// [`crate::image::MAX_PIXELS`] pixels.
    #[error("image_decode target {width}x{height} is outside 1..={max}", max = crate::image::MAX_SIDE)]
    BadSize {
        /// Target width.
        width: u64,
        /// Target height.
        height: u64,
    },
    /// The size the image is scaled to before the crop (`center_crop`) has a side beyond
    /// [`crate::image::MAX_SIDE`].
    #[error("image_decode resize to {width}x{height} (for target {target_width}x{target_height}) is outside 1..={max}", max = crate::image::MAX_SIDE)]
    BadResize {
        /// Computed width.
        width: u64,
        /// Computed height.
        height: u64,
        /// Target width.
        target_width: u64,
        /// Target height.
        target_height: u64,
    },
    /// The buffer between the two resize passes would exceed
    /// [`crate::image::MAX_INTERMEDIATE_BYTES`].
    #[error("image_decode needs an intermediate {width}x{height} image, more than {max} bytes", max = crate::image::MAX_INTERMEDIATE_BYTES)]
    IntermediateTooLarge {
        /// Intermediate width.
        width: u64,
        /// Intermediate height.
        height: u64,
    },
}

/// The element type `program` wants for `adapter`'s input: `adapter_dtypes[adapter]`, or
/// `uint8` when it is not listed.
pub fn adapter_input_dtype(program: &Program, adapter: &str) -> AdapterDtype {
    program
        .adapter_dtypes
        .get(adapter)
        .copied()
        .unwrap_or(AdapterDtype::Uint8)
}

/// Runs `image_decode` on a decoded image: resize by the policy, `[1, H, W, 3]` NHWC, values
/// 0–255 as `uint8` or widened to `dtype` (`uint32` for WebGPU libraries; see
/// [`adapter_input_dtype`]).
pub fn image_decode(
    image: &RgbImage,
    spec: &ImageDecode,
    dtype: AdapterDtype,
) -> Result<Tensor, ImageDecodeError> {
    let bad = || ImageDecodeError::BadSize {
        width: spec.resize.width,
        height: spec.resize.height,
    };
    let side = |v: u64| {
        usize::try_from(v)
            .ok()
            .filter(|s| (1..=crate::image::MAX_SIDE).contains(s))
    };
    let (tw, th) = (
        side(spec.resize.width).ok_or_else(bad)?,
        side(spec.resize.height).ok_or_else(bad)?,
    );
    if tw * th > crate::image::MAX_PIXELS {
        return Err(bad());
    }
    let (w, h) = (image.width() as u128, image.height() as u128);
    let (rw, rh) = match spec.resize.mode {
        ResizeMode::Stretch => (tw as u128, th as u128),
        ResizeMode::CenterCrop => {
            let (tw128, th128) = (tw as u128, th as u128);
            if tw128 * h >= th128 * w {
                (tw128, h * tw128 / w.max(1))
            } else {
                (w * th128 / h.max(1), th128)
            }
        }
    };
    let (rw, rh) = match (side_usize(rw), side_usize(rh)) {
        (Some(rw), Some(rh)) => (rw, rh),
        _ => {
            let sat = |v: u128| u64::try_from(v).unwrap_or(u64::MAX);
            return Err(ImageDecodeError::BadResize {
                width: sat(rw),
                height: sat(rh),
                target_width: spec.resize.width,
                target_height: spec.resize.height,
            });
        }
    };
    let plan = CropPlan::new(rw, rh, tw, th);
    let pixels = resize_window(image, rw, rh, Filter::Bilinear, plan.visible).map_err(|e| {
        ImageDecodeError::IntermediateTooLarge {
            width: e.width as u64,
            height: e.height as u64,
        }
    })?;
    let data = match dtype {
        AdapterDtype::Uint8 => TensorData::U8(pixels),
        AdapterDtype::Uint32 => TensorData::U32(pixels.into_iter().map(u32::from).collect()),
        AdapterDtype::Int32 => TensorData::I32(pixels.into_iter().map(i32::from).collect()),
        AdapterDtype::Float32 => TensorData::F32(pixels.into_iter().map(f32::from).collect()),
        AdapterDtype::Float16 => TensorData::F16(
            pixels
                .into_iter()
                .map(|v| half::f16::from_f32(f32::from(v)))
                .collect(),
        ),
    };
    Ok(Tensor {
        shape: vec![1, th, tw, 3],
        data,
    })
}

fn side_usize(v: u128) -> Option<usize> {
    usize::try_from(v)
        .ok()
        .filter(|s| (1..=crate::image::MAX_SIDE).contains(s))
}
