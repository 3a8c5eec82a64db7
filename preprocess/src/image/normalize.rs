//! Crop canvas → tensor: channel order, scale, mean/std, layout and dtype in one pass.
//!
//! Values are `((v × scale) − mean[c]) / std[c]` in `f64` (`c` the output channel, after the BGR
//! swap), converted by [`Element::from_f64`]. For 0–255 integer pixels the result depends only on
//! `(c, v)`, so a 3 × 256 table of final values is built once and the canvas is a table gather —
//! the same numbers, without the arithmetic per element.

use gpuport_manifest_core::modelport::{ColorOrder, DType, ImagePreprocess, Layout};

use super::crop::CropPlan;
use crate::tensor::{Element, TensorData, with_element};

/// Resized pixels of the visible part of the crop, interleaved RGB.
pub(crate) enum Pixels {
    /// Antialiased (Pillow) and nearest resizes: 0–255 integers.
    Integer(Vec<u8>),
    /// Float bilinear: unrounded values.
    Float(Vec<f32>),
}

fn source_channel(color: ColorOrder, c: usize) -> usize {
    match color {
        ColorOrder::Rgb => c,
        ColorOrder::Bgr => 2 - c,
    }
}

fn normalize(pre: &ImagePreprocess, c: usize, raw: f64) -> f64 {
    (raw * pre.scale - pre.mean[c]) / pre.std[c]
}

/// Builds the `layout` tensor data of the crop described by `plan`.
pub(crate) fn to_tensor(
    pixels: &Pixels,
    plan: &CropPlan,
    pre: &ImagePreprocess,
    layout: Layout,
    dtype: DType,
) -> TensorData {
    with_element!(dtype, typed(pixels, plan, pre, layout))
}

fn typed<T: Element>(
    pixels: &Pixels,
    plan: &CropPlan,
    pre: &ImagePreprocess,
    layout: Layout,
) -> TensorData {
    let padding: [T; 3] = [0, 1, 2].map(|c| T::from_f64(normalize(pre, c, 0.0)));
    let values = match pixels {
        Pixels::Integer(p) => {
            let tables: [[T; 256]; 3] = [0, 1, 2]
                .map(|c| std::array::from_fn(|v| T::from_f64(normalize(pre, c, v as f64))));
            fill(p, plan, pre.color, layout, padding, |c, v: u8| {
                tables[c][usize::from(v)]
            })
        }
        Pixels::Float(p) => fill(p, plan, pre.color, layout, padding, |c, v: f32| {
            T::from_f64(normalize(pre, c, f64::from(v)))
        }),
    };
    T::into_data(values)
}

/// Writes every element of the crop canvas: `convert(c, pixel channel)` inside the resized image
/// (`c` the output channel), `padding[c]` outside.
fn fill<S: Copy, T: Copy>(
    src: &[S],
    plan: &CropPlan,
    color: ColorOrder,
    layout: Layout,
    padding: [T; 3],
    convert: impl Fn(usize, S) -> T,
) -> Vec<T> {
    let (w, h) = (plan.width, plan.height);
    let window = plan.visible;
    let (x0, y0) = (plan.visible_left_in_crop(), plan.visible_top_in_crop());
    let src_rows = src.chunks_exact(window.width * 3).take(window.height);
    let sc = [0, 1, 2].map(|c| source_channel(color, c));
    match layout {
        Layout::Nchw => {
            let plane_len = w * h;
            let padded = window.width != w || window.height != h;
            let mut out: Vec<T> = vec![padding[0]; plane_len * 3];
            for (c, plane) in out.chunks_exact_mut(plane_len).enumerate() {
                if padded {
                    plane.fill(padding[c]);
                }
                let source = sc[c];
                for (y, src_row) in src_rows.clone().enumerate() {
                    let dst = &mut plane[(y0 + y) * w + x0..][..window.width];
                    for (d, px) in dst.iter_mut().zip(src_row.chunks_exact(3)) {
                        *d = convert(c, px[source]);
                    }
                }
            }
            out
        }
        Layout::Nhwc => {
            let mut out: Vec<T> = Vec::with_capacity(w * h * 3);
            for _ in 0..w * h {
                out.extend_from_slice(&padding);
            }
            for (y, src_row) in src_rows.enumerate() {
                let dst = &mut out[((y0 + y) * w + x0) * 3..][..window.width * 3];
                for (d, px) in dst.chunks_exact_mut(3).zip(src_row.chunks_exact(3)) {
                    d[0] = convert(0, px[sc[0]]);
                    d[1] = convert(1, px[sc[1]]);
                    d[2] = convert(2, px[sc[2]]);
                }
            }
            out
        }
    }
}
