//! ModelPort 0.1 image preprocessing: resize, centre crop, channel order, scale, normalize,
//! layout, dtype — in the spec's order, as `modelport.preprocess` does it.

use gpuport_manifest_core::modelport::{Dim, InputSpec, Layout, ResizeMethod, ResizeTarget};

use super::RgbImage;
use super::crop::CropPlan;
use super::geometry::{InverseTransform, resized_size};
use super::normalize::{Pixels, to_tensor};
use super::resize::{Filter, resize_window};
use super::sample::{bilinear_window, nearest_window};
use crate::tensor::Tensor;

/// The longest side a resize or crop may ask for.
pub const MAX_SIDE: usize = 1 << 16;
/// The most pixels a model input may have (2^25, 32 Mi pixels: a 384 MiB float32 tensor), so a
/// hostile manifest cannot make the process abort on allocation.
pub const MAX_PIXELS: usize = 1 << 25;

/// Why an image could not be turned into an input tensor.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PreprocessError {
    /// The input declares no `preprocess`.
    #[error("input '{input}' has no image preprocessing")]
    NoPreprocess {
        /// Input name.
        input: String,
    },
    /// The input declares no `layout` (required with `preprocess`).
    #[error("input '{input}' has no layout")]
    NoLayout {
        /// Input name.
        input: String,
    },
    /// bicubic without antialias, or nearest with antialias (not allowed in ModelPort 0.1).
    #[error("input '{input}': resize method {method} with antialias={antialias} is not allowed")]
    ForbiddenResize {
        /// Input name.
        input: String,
        /// Method.
        method: &'static str,
        /// Antialias flag.
        antialias: bool,
    },
    /// The resize or crop size is 0, has a side beyond [`MAX_SIDE`], or the input would have more
    /// than [`MAX_PIXELS`] pixels.
    #[error(
        "input '{input}': {what} {width}x{height} is outside 1..={MAX_SIDE} per side or {MAX_PIXELS} pixels"
    )]
    BadSize {
        /// Input name.
        input: String,
        /// `resize` or `center_crop`.
        what: &'static str,
        /// Width asked for, or computed (the resized width of `shorter_side`).
        width: u64,
        /// Height asked for, or computed.
        height: u64,
    },
    /// The buffer between the two resize passes would exceed
    /// [`super::resize::MAX_INTERMEDIATE_BYTES`] (a very tall or very wide source).
    #[error(
        "input '{input}': resize needs an intermediate {width}x{height} image, more than {max} bytes",
        max = super::resize::MAX_INTERMEDIATE_BYTES
    )]
    IntermediateTooLarge {
        /// Input name.
        input: String,
        /// Intermediate width.
        width: u64,
        /// Intermediate height.
        height: u64,
    },
    /// The tensor does not have the shape the manifest declares.
    #[error("input '{input}' dimension {axis} is {actual}, manifest says {expected}")]
    ShapeMismatch {
        /// Input name.
        input: String,
        /// Axis index.
        axis: usize,
        /// Declared size.
        expected: String,
        /// Produced size.
        actual: usize,
    },
}

/// An input tensor and how it maps back to the image.
#[derive(Debug, Clone, PartialEq)]
pub struct Preprocessed {
    /// The tensor, `[1, 3, H, W]` (NCHW) or `[1, H, W, 3]` (NHWC), in the input's dtype.
    pub tensor: Tensor,
    /// Resize and crop, to map boxes back.
    pub transform: InverseTransform,
}

fn size_error(input: &str, what: &'static str, width: u64, height: u64) -> PreprocessError {
    PreprocessError::BadSize {
        input: input.to_owned(),
        what,
        width,
        height,
    }
}

/// The resize size `target` asks for, as [`resized_size`] computes it but without overflow
/// (saturating at `u64::MAX`), for error messages.
fn computed_size(width: usize, height: usize, target: ResizeTarget) -> (u64, u64) {
    let sat = |v: u128| u64::try_from(v).unwrap_or(u64::MAX);
    match target {
        ResizeTarget::Size([h, w]) => (w, h),
        ResizeTarget::ShorterSide(n) => {
            let (n, width, height) = (u128::from(n), width as u128, height as u128);
            if width <= height {
                (sat(n), sat(n * height / width.max(1)))
            } else {
                (sat(n * width / height.max(1)), sat(n))
            }
        }
    }
}

fn checked_side(v: u64) -> Option<usize> {
    usize::try_from(v)
        .ok()
        .filter(|&s| (1..=MAX_SIDE).contains(&s))
}

/// Builds the tensor for `input` from a decoded image (see [`super::decode_image`]).
pub fn preprocess_image(
    image: &RgbImage,
    input: &InputSpec,
) -> Result<Preprocessed, PreprocessError> {
    let name = input.name.as_str();
    let pre = input
        .preprocess
        .as_ref()
        .ok_or_else(|| PreprocessError::NoPreprocess {
            input: name.to_owned(),
        })?;
    let layout = input.layout.ok_or_else(|| PreprocessError::NoLayout {
        input: name.to_owned(),
    })?;
    let (rw, rh) = resized_size(image.width(), image.height(), pre.resize.target)
        .filter(|&(w, h)| w <= MAX_SIDE && h <= MAX_SIDE)
        .ok_or_else(|| {
            let (w, h) = computed_size(image.width(), image.height(), pre.resize.target);
            size_error(name, "resize", w, h)
        })?;
    let (cw, ch) = match pre.center_crop {
        Some([h, w]) => match (checked_side(w), checked_side(h)) {
            (Some(w), Some(h)) => (w, h),
            _ => return Err(size_error(name, "center_crop", w, h)),
        },
        None => (rw, rh),
    };
    if cw * ch > MAX_PIXELS {
        return Err(size_error(name, "input", cw as u64, ch as u64));
    }
    let plan = CropPlan::new(rw, rh, cw, ch);
    let window = plan.visible;
    let method = pre.resize.method;
    let antialias = pre.resize.antialias;
    let antialiased = |filter| {
        resize_window(image, rw, rh, filter, window)
            .map(Pixels::Integer)
            .map_err(|e| PreprocessError::IntermediateTooLarge {
                input: name.to_owned(),
                width: e.width as u64,
                height: e.height as u64,
            })
    };
    let pixels = match (method, antialias) {
        (ResizeMethod::Bilinear, true) => antialiased(Filter::Bilinear)?,
        (ResizeMethod::Bicubic, true) => antialiased(Filter::Bicubic)?,
        (ResizeMethod::Nearest, false) => Pixels::Integer(nearest_window(image, rw, rh, window)),
        (ResizeMethod::Bilinear, false) => Pixels::Float(bilinear_window(image, rw, rh, window)),
        (ResizeMethod::Bicubic, false) | (ResizeMethod::Nearest, true) => {
            return Err(PreprocessError::ForbiddenResize {
                input: name.to_owned(),
                method: gpuport_manifest_core::Choice::name(method),
                antialias,
            });
        }
    };
    let shape = match layout {
        Layout::Nchw => vec![1, 3, ch, cw],
        Layout::Nhwc => vec![1, ch, cw, 3],
    };
    check_shape(name, &input.shape, &shape)?;
    let tensor = Tensor {
        shape,
        data: to_tensor(&pixels, &plan, pre, layout, input.dtype),
    };
    let transform = InverseTransform {
        original_width: image.width(),
        original_height: image.height(),
        resized_width: rw,
        resized_height: rh,
        crop_left: plan.left,
        crop_top: plan.top,
        input_width: cw,
        input_height: ch,
    };
    Ok(Preprocessed { tensor, transform })
}

fn check_shape(input: &str, declared: &[Dim], actual: &[usize]) -> Result<(), PreprocessError> {
    if declared.len() != actual.len() {
        return Err(PreprocessError::ShapeMismatch {
            input: input.to_owned(),
            axis: declared.len().min(actual.len()),
            expected: format!("rank {}", declared.len()),
            actual: actual.len(),
        });
    }
    for (axis, (d, &a)) in declared.iter().zip(actual).enumerate() {
        if let Dim::Fixed(n) = d
            && *n != a as u64
        {
            return Err(PreprocessError::ShapeMismatch {
                input: input.to_owned(),
                axis,
                expected: n.to_string(),
                actual: a,
            });
        }
    }
    Ok(())
}
