//! The two non-antialiased resizes: half-pixel float bilinear and exact nearest neighbour.

use rayon::prelude::*;

use super::RgbImage;
use super::resize::Window;

/// Source index pair and the weight of the second, per output position, for half-pixel bilinear.
fn bilinear_axis(
    in_size: usize,
    out_size: usize,
    outputs: std::ops::Range<usize>,
) -> Vec<(usize, usize, f64)> {
    let scale = in_size as f64 / out_size as f64;
    outputs
        .map(|out| {
            let src = ((out as f64 + 0.5) * scale - 0.5).max(0.0);
            let low = (src.floor() as usize).min(in_size - 1);
            let high = (low + 1).min(in_size - 1);
            (low, high, src - low as f64)
        })
        .collect()
}

/// Bilinear resize with half-pixel centres (`align_corners = false`), no antialiasing, in `f64`
/// with no rounding; the result is stored as `f32` values in 0–255 (PyTorch
/// `interpolate(mode="bilinear", align_corners=False)`, OpenCV `INTER_LINEAR`). Sample positions
/// `(i + 0.5) × in / out − 0.5` are clamped at 0 below and the neighbour index at the last pixel.
/// The arithmetic order is that of `modelport.preprocess.bilinear_half_pixel` (rows first), so
/// the `f32` results are identical to it.
pub fn resize_bilinear_float(image: &RgbImage, out_width: usize, out_height: usize) -> Vec<f32> {
    bilinear_window(
        image,
        out_width,
        out_height,
        Window::full(out_width, out_height),
    )
}

pub(crate) fn bilinear_window(
    image: &RgbImage,
    out_width: usize,
    out_height: usize,
    window: Window,
) -> Vec<f32> {
    let mut out = vec![0f32; window.width * window.height * 3];
    if out.is_empty() {
        return out;
    }
    let xs = bilinear_axis(
        image.width(),
        out_width,
        window.left..window.left + window.width,
    );
    let ys = bilinear_axis(
        image.height(),
        out_height,
        window.top..window.top + window.height,
    );
    let stride = image.width() * 3;
    let pixels = image.pixels();
    out.par_chunks_exact_mut(window.width * 3)
        .zip(ys.par_iter())
        .for_each(|(out_row, &(y_low, y_high, fy))| {
            let low_row = &pixels[y_low * stride..(y_low + 1) * stride];
            let high_row = &pixels[y_high * stride..(y_high + 1) * stride];
            for (out_pixel, &(x_low, x_high, fx)) in out_row.chunks_exact_mut(3).zip(&xs) {
                for (c, o) in out_pixel.iter_mut().enumerate() {
                    let at = |row: &[u8], x: usize| f64::from(row[x * 3 + c]);
                    let left = at(low_row, x_low) * (1.0 - fy) + at(high_row, x_low) * fy;
                    let right = at(low_row, x_high) * (1.0 - fy) + at(high_row, x_high) * fy;
                    *o = (left * (1.0 - fx) + right * fx) as f32;
                }
            }
        });
    out
}

/// Source index of output position `out` for nearest neighbour: `floor((out + 0.5) × in / size)`
/// computed exactly in integers as `((2·out + 1) · in) / (2 · size)`.
fn nearest_index(out: usize, in_size: usize, out_size: usize) -> usize {
    let index = ((2 * out as u128 + 1) * in_size as u128) / (2 * out_size as u128);
    (index as usize).min(in_size - 1)
}

/// Nearest-neighbour resize by the ModelPort formula, exactly (Pillow's own nearest accumulates
/// the position in floating point and differs at a few boundaries; see `docs/spec/preprocess.md`).
pub fn resize_nearest(image: &RgbImage, out_width: usize, out_height: usize) -> Option<RgbImage> {
    if out_width == 0 || out_height == 0 {
        return None;
    }
    let pixels = nearest_window(
        image,
        out_width,
        out_height,
        Window::full(out_width, out_height),
    );
    RgbImage::new(out_width, out_height, pixels)
}

pub(crate) fn nearest_window(
    image: &RgbImage,
    out_width: usize,
    out_height: usize,
    window: Window,
) -> Vec<u8> {
    let mut out = vec![0u8; window.width * window.height * 3];
    if out.is_empty() {
        return out;
    }
    let xs: Vec<usize> = (window.left..window.left + window.width)
        .map(|x| nearest_index(x, image.width(), out_width))
        .collect();
    let stride = image.width() * 3;
    out.par_chunks_exact_mut(window.width * 3)
        .enumerate()
        .for_each(|(row, out_row)| {
            let y = nearest_index(window.top + row, image.height(), out_height);
            let src = &image.pixels()[y * stride..(y + 1) * stride];
            for (o, &x) in out_row.chunks_exact_mut(3).zip(&xs) {
                o.copy_from_slice(&src[x * 3..x * 3 + 3]);
            }
        });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_index_is_the_exact_formula() {
        // floor((x + 0.5) * 3 / 2): 0.75 -> 0, 2.25 -> 2.
        assert_eq!(nearest_index(0, 3, 2), 0);
        assert_eq!(nearest_index(1, 3, 2), 2);
        // Upscale 2 -> 4: positions 0.25, 0.75, 1.25, 1.75.
        let got: Vec<usize> = (0..4).map(|x| nearest_index(x, 2, 4)).collect();
        assert_eq!(got, [0, 0, 1, 1]);
    }

    #[test]
    fn bilinear_same_size_is_identity() {
        let image = RgbImage::new(3, 2, (0..18).map(|v| v * 10).collect()).unwrap();
        let out = resize_bilinear_float(&image, 3, 2);
        let expected: Vec<f32> = image.pixels().iter().map(|&v| f32::from(v)).collect();
        assert_eq!(out, expected);
    }
}
