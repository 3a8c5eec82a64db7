//! Pillow 12's antialiased resize (`Image.resize(size, BILINEAR | BICUBIC, reducing_gap=None)` on
//! an 8-bit RGB image), bit for bit.
//!
//! Hand-written because exactness demands it: no resize crate reproduces Pillow's rounding. The
//! algorithm (Pillow's `libImaging/Resample.c`, re-derived, not copied):
//!
//! - per axis, output pixel `i` has centre `(i + 0.5) × in / out` in source coordinates; the
//!   filter's support is `support × max(in / out, 1)`; the taps are source pixels
//!   `trunc(centre − support + 0.5) .. trunc(centre + support + 0.5)` clamped to the image, each
//!   weighted `filter((j − centre + 0.5) / max(in / out, 1))` in `f64`, then divided by their sum;
//! - each weight becomes a fixed-point integer with 22 fractional bits, rounded half away from 0;
//! - the horizontal pass runs first, the vertical pass on its output — except, as in Pillow's
//!   `Image.resize` (`PIL/Image.py`), when the source is more than 100 times taller than wide
//!   and the height shrinks: then the vertical pass runs first; each pass starts its
//!   accumulator at `2^21` (rounding), sums `pixel × weight` in `i32`, and stores
//!   `clamp(acc >> 22, 0, 255)`; an axis whose size does not change is not resampled.
//!
//! Speed: the weight tables are computed once per call (per axis), only for the output pixels a
//! [`Window`] asks for (a centre crop never computes the columns and rows it throws away), and
//! both passes run over rows in parallel with rayon.

use rayon::prelude::*;

use super::RgbImage;

/// Fractional bits of the fixed-point weights (Pillow's `PRECISION_BITS`, 32 − 8 − 2).
const PRECISION_BITS: u32 = 22;
/// Added before the final shift so that it rounds to nearest.
const ROUNDING: i32 = 1 << (PRECISION_BITS - 1);
/// Rows handed to one rayon task at least (keeps task overhead small on narrow outputs).
const MIN_ROWS_PER_TASK: usize = 4;

/// An antialiasing resampling filter with Pillow's kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filter {
    /// Triangle, support 1.
    Bilinear,
    /// Keys cubic with a = −0.5, support 2.
    Bicubic,
}

impl Filter {
    fn support(self) -> f64 {
        match self {
            Filter::Bilinear => 1.0,
            Filter::Bicubic => 2.0,
        }
    }

    fn weight(self, x: f64) -> f64 {
        let x = x.abs();
        match self {
            Filter::Bilinear if x < 1.0 => 1.0 - x,
            Filter::Bicubic if x < 1.0 => ((-0.5 + 2.0) * x - (-0.5 + 3.0)) * x * x + 1.0,
            Filter::Bicubic if x < 2.0 => (((x - 5.0) * x + 8.0) * x - 4.0) * -0.5,
            _ => 0.0,
        }
    }
}

/// The part `[left, left + width) × [top, top + height)` of a resized image to compute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// First column.
    pub left: usize,
    /// First row.
    pub top: usize,
    /// Columns.
    pub width: usize,
    /// Rows.
    pub height: usize,
}

impl Window {
    /// The whole `width × height` image.
    pub fn full(width: usize, height: usize) -> Self {
        Self {
            left: 0,
            top: 0,
            width,
            height,
        }
    }
}

/// Fixed-point weights of one axis, for a run of output positions.
struct Taps {
    /// Longest possible tap list (stride of `weights`).
    stride: usize,
    /// First source index of each output position.
    first: Vec<usize>,
    /// Number of taps of each output position.
    count: Vec<usize>,
    /// `stride` weights per output position (the first `count` are used).
    weights: Vec<i32>,
}

impl Taps {
    fn new(
        in_size: usize,
        out_size: usize,
        filter: Filter,
        outputs: std::ops::Range<usize>,
    ) -> Self {
        let scale = in_size as f64 / out_size as f64;
        let filter_scale = scale.max(1.0);
        let support = filter.support() * filter_scale;
        let stride = support.ceil() as usize * 2 + 1;
        let mut taps = Taps {
            stride,
            first: Vec::with_capacity(outputs.len()),
            count: Vec::with_capacity(outputs.len()),
            weights: vec![0; outputs.len() * stride],
        };
        let mut float_weights = vec![0f64; stride];
        for (slot, out) in outputs.enumerate() {
            let centre = (out as f64 + 0.5) * scale;
            // `as` truncates toward zero like C's (int) cast; negative starts clamp to 0.
            let first = ((centre - support + 0.5) as i64).max(0) as usize;
            let end = ((centre + support + 0.5) as i64).clamp(0, in_size as i64) as usize;
            let count = end.saturating_sub(first).min(stride);
            let mut sum = 0.0;
            for (j, w) in float_weights[..count].iter_mut().enumerate() {
                *w = filter.weight(((j + first) as f64 - centre + 0.5) / filter_scale);
                sum += *w;
            }
            let fixed = &mut taps.weights[slot * stride..slot * stride + count];
            for (f, &w) in fixed.iter_mut().zip(&float_weights[..count]) {
                let w = if sum != 0.0 { w / sum } else { w };
                let scaled = w * f64::from(1u32 << PRECISION_BITS);
                *f = if w < 0.0 {
                    (scaled - 0.5) as i32
                } else {
                    (scaled + 0.5) as i32
                };
            }
            taps.first.push(first);
            taps.count.push(count);
        }
        taps
    }

    fn of(&self, slot: usize) -> (usize, &[i32]) {
        let start = slot * self.stride;
        (
            self.first[slot],
            &self.weights[start..start + self.count[slot]],
        )
    }

    /// Source positions `[first, end)` that any output position reads.
    fn source_span(&self) -> (usize, usize) {
        let first = self.first.iter().copied().min().unwrap_or(0);
        let end = (0..self.first.len())
            .map(|s| self.first[s] + self.count[s])
            .max()
            .unwrap_or(0);
        (first, end)
    }
}

fn clip8(acc: i32) -> u8 {
    (acc >> PRECISION_BITS).clamp(0, 255) as u8
}

/// Bytes the intermediate (between the two passes) buffer may take at most: 1 GiB.
pub const MAX_INTERMEDIATE_BYTES: usize = 1 << 30;

/// The intermediate image between the two resize passes would exceed
/// [`MAX_INTERMEDIATE_BYTES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IntermediateTooLarge {
    /// Intermediate width in pixels.
    pub width: usize,
    /// Intermediate height in pixels.
    pub height: usize,
}

/// Whether Pillow 12's `Image.resize` resamples vertically first: the source is more than 100
/// times taller than wide and the height shrinks (`PIL/Image.py`:
/// `self.size[1] > self.size[0] * 100 and size[1] < self.size[1]`). Each pass then rounds to
/// 8 bits on its own, so the order changes the pixels.
pub(crate) fn vertical_first(in_width: usize, in_height: usize, out_height: usize) -> bool {
    in_height as u128 > in_width as u128 * 100 && out_height < in_height
}

/// Resizes the whole image to `out_width × out_height` (both > 0) with Pillow's antialiased
/// `filter`. Returns `None` when a target side is 0 or the intermediate buffer would exceed
/// [`MAX_INTERMEDIATE_BYTES`].
pub fn resize_antialiased(
    image: &RgbImage,
    out_width: usize,
    out_height: usize,
    filter: Filter,
) -> Option<RgbImage> {
    if out_width == 0 || out_height == 0 {
        return None;
    }
    let window = Window::full(out_width, out_height);
    let pixels = resize_window(image, out_width, out_height, filter, window).ok()?;
    RgbImage::new(out_width, out_height, pixels)
}

/// The `window` part (which must lie inside `out_width × out_height`) of the resized image, as
/// interleaved RGB rows of `window.width` pixels; an error when the buffer between the passes
/// would exceed [`MAX_INTERMEDIATE_BYTES`].
pub(crate) fn resize_window(
    image: &RgbImage,
    out_width: usize,
    out_height: usize,
    filter: Filter,
    window: Window,
) -> Result<Vec<u8>, IntermediateTooLarge> {
    resize_window_capped(
        image,
        out_width,
        out_height,
        filter,
        window,
        MAX_INTERMEDIATE_BYTES,
    )
}

fn resize_window_capped(
    image: &RgbImage,
    out_width: usize,
    out_height: usize,
    filter: Filter,
    window: Window,
    max_bytes: usize,
) -> Result<Vec<u8>, IntermediateTooLarge> {
    if window.width == 0 || window.height == 0 {
        return Ok(Vec::new());
    }
    let (in_width, in_height) = (image.width(), image.height());
    let columns = window.left..window.left + window.width;
    let rows = window.top..window.top + window.height;
    let horizontal =
        (out_width != in_width).then(|| Taps::new(in_width, out_width, filter, columns.clone()));
    let vertical =
        (out_height != in_height).then(|| Taps::new(in_height, out_height, filter, rows.clone()));
    let check = |width: usize, height: usize| {
        let fits = width
            .checked_mul(height)
            .and_then(|p| p.checked_mul(3))
            .is_some_and(|b| b <= max_bytes);
        if fits {
            Ok(())
        } else {
            Err(IntermediateTooLarge { width, height })
        }
    };
    let src = image.pixels();
    let src_stride = in_width * 3;

    if vertical_first(in_width, in_height, out_height) {
        // Vertical pass over the source columns the horizontal pass reads, then horizontal.
        let (col_first, col_end) = horizontal
            .as_ref()
            .map_or((columns.start, columns.end), Taps::source_span);
        check(col_end - col_first, window.height)?;
        let mid_row_bytes = (col_end - col_first) * 3;
        let mid = match &vertical {
            Some(taps) => vertical_pass(
                src,
                src_stride,
                col_first * 3,
                0,
                taps,
                mid_row_bytes,
                window.height,
            ),
            None => Vec::new(),
        };
        return Ok(horizontal_pass(
            &mid,
            mid_row_bytes,
            col_first,
            horizontal.as_ref(),
            columns,
            window.width * 3,
        ));
    }

    let (row_first, row_end) = vertical
        .as_ref()
        .map_or((rows.start, rows.end), Taps::source_span);
    check(window.width, row_end - row_first)?;
    let row_bytes = window.width * 3;
    let horizontal_out = horizontal_pass(
        &src[row_first * src_stride..row_end * src_stride],
        src_stride,
        0,
        horizontal.as_ref(),
        columns,
        row_bytes,
    );
    let Some(taps) = vertical else {
        return Ok(horizontal_out);
    };
    Ok(vertical_pass(
        &horizontal_out,
        row_bytes,
        0,
        row_first,
        &taps,
        row_bytes,
        window.height,
    ))
}

/// Horizontal pass over rows of `src_stride` bytes whose first pixel is source column
/// `col_offset`; `taps` `None` copies `columns`.
fn horizontal_pass(
    src: &[u8],
    src_stride: usize,
    col_offset: usize,
    taps: Option<&Taps>,
    columns: std::ops::Range<usize>,
    row_bytes: usize,
) -> Vec<u8> {
    let rows = src.len() / src_stride.max(1);
    let mut out = vec![0u8; rows * row_bytes];
    let source_rows = src.par_chunks_exact(src_stride.max(1));
    match taps {
        Some(taps) => out
            .par_chunks_exact_mut(row_bytes)
            .zip(source_rows)
            .with_min_len(MIN_ROWS_PER_TASK)
            .for_each(|(out_row, src_row)| horizontal_row(taps, src_row, col_offset, out_row)),
        None => out
            .par_chunks_exact_mut(row_bytes)
            .zip(source_rows)
            .for_each(|(out_row, src_row)| {
                out_row.copy_from_slice(
                    &src_row[(columns.start - col_offset) * 3..(columns.end - col_offset) * 3],
                )
            }),
    }
    out
}

/// Vertical pass: output row `slot` sums rows `first − row_offset + tap` of `src` (rows of
/// `src_stride` bytes), reading `row_bytes` bytes from byte `byte_offset` of each.
fn vertical_pass(
    src: &[u8],
    src_stride: usize,
    byte_offset: usize,
    row_offset: usize,
    taps: &Taps,
    row_bytes: usize,
    out_rows: usize,
) -> Vec<u8> {
    let mut out = vec![0u8; out_rows * row_bytes];
    out.par_chunks_exact_mut(row_bytes)
        .enumerate()
        .with_min_len(MIN_ROWS_PER_TASK)
        .for_each_init(
            || vec![0i32; row_bytes],
            |acc, (slot, out_row)| {
                let (first, weights) = taps.of(slot);
                acc.fill(ROUNDING);
                for (tap, &w) in weights.iter().enumerate() {
                    let start = (first - row_offset + tap) * src_stride + byte_offset;
                    let row = &src[start..start + row_bytes];
                    for (a, &p) in acc.iter_mut().zip(row) {
                        *a += i32::from(p) * w;
                    }
                }
                for (o, &a) in out_row.iter_mut().zip(acc.iter()) {
                    *o = clip8(a);
                }
            },
        );
    out
}

fn horizontal_row(taps: &Taps, src_row: &[u8], col_offset: usize, out_row: &mut [u8]) {
    for (slot, out_pixel) in out_row.chunks_exact_mut(3).enumerate() {
        let (first, weights) = taps.of(slot);
        let first = first - col_offset;
        let src = &src_row[first * 3..(first + weights.len()) * 3];
        let (mut r, mut g, mut b) = (ROUNDING, ROUNDING, ROUNDING);
        for (p, &w) in src.chunks_exact(3).zip(weights) {
            r += i32::from(p[0]) * w;
            g += i32::from(p[1]) * w;
            b += i32::from(p[2]) * w;
        }
        out_pixel[0] = clip8(r);
        out_pixel[1] = clip8(g);
        out_pixel[2] = clip8(b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_of_each_output_sum_to_one_in_fixed_point_within_rounding() {
        for (input, output) in [(100, 7), (7, 100), (4032, 256), (3, 3)] {
            for filter in [Filter::Bilinear, Filter::Bicubic] {
                let taps = Taps::new(input, output, filter, 0..output);
                for slot in 0..output {
                    let sum: i64 = taps.of(slot).1.iter().map(|&w| i64::from(w)).sum();
                    let one = 1i64 << PRECISION_BITS;
                    assert!(
                        (sum - one).abs() <= taps.stride as i64,
                        "{input}->{output} {sum}"
                    );
                }
            }
        }
    }

    #[test]
    fn same_size_is_identity_and_window_matches_full() {
        let pixels: Vec<u8> = (0..5 * 4 * 3).map(|i| (i * 37 % 256) as u8).collect();
        let image = RgbImage::new(5, 4, pixels).unwrap();
        let same = resize_antialiased(&image, 5, 4, Filter::Bicubic).unwrap();
        assert_eq!(same, image);
        let full = resize_antialiased(&image, 9, 7, Filter::Bicubic).unwrap();
        let window = Window {
            left: 2,
            top: 3,
            width: 4,
            height: 2,
        };
        let part = resize_window(&image, 9, 7, Filter::Bicubic, window).unwrap();
        for y in 0..2 {
            let row = &full.pixels()[((3 + y) * 9 + 2) * 3..((3 + y) * 9 + 6) * 3];
            assert_eq!(&part[y * 12..(y + 1) * 12], row);
        }
    }

    fn pattern(width: usize, height: usize) -> RgbImage {
        let pixels: Vec<u8> = (0..width * height * 3)
            .map(|i| ((i * 7919 + i / 3 * 31) % 256) as u8)
            .collect();
        RgbImage::new(width, height, pixels).unwrap()
    }

    #[test]
    fn tall_shrinking_sources_resample_vertically_first_like_pillow() {
        assert!(vertical_first(5, 501, 10));
        assert!(!vertical_first(5, 500, 10));
        assert!(!vertical_first(5, 501, 501));
        assert!(!vertical_first(5, 501, 600));
        // A window of the vertical-first resize equals the same part of the full one.
        let image = pattern(3, 400);
        for filter in [Filter::Bilinear, Filter::Bicubic] {
            let full = resize_antialiased(&image, 7, 37, filter).unwrap();
            let window = Window {
                left: 2,
                top: 5,
                width: 3,
                height: 20,
            };
            let part = resize_window(&image, 7, 37, filter, window).unwrap();
            for y in 0..20 {
                let row = &full.pixels()[((5 + y) * 7 + 2) * 3..((5 + y) * 7 + 5) * 3];
                assert_eq!(&part[y * 9..(y + 1) * 9], row);
            }
        }
    }

    #[test]
    fn very_tall_source_needs_only_a_small_intermediate() {
        // 1 x 10,000,000 to 640 x 640: horizontal first would hold 10^7 x 640 x 3 bytes.
        let image = RgbImage::new(1, 10_000_000, vec![128; 30_000_000]).unwrap();
        let window = Window::full(640, 640);
        let out = resize_window_capped(&image, 640, 640, Filter::Bilinear, window, 1 << 20);
        assert_eq!(out.unwrap().len(), 640 * 640 * 3);
    }

    #[test]
    fn intermediate_over_the_cap_is_an_error_naming_its_size() {
        // 20 x 1999 (not vertical-first) widened to 300 x 1000: intermediate 300 x 1999.
        let image = pattern(20, 1999);
        let window = Window::full(300, 1000);
        let err = resize_window_capped(&image, 300, 1000, Filter::Bicubic, window, 1 << 20);
        assert_eq!(
            err,
            Err(IntermediateTooLarge {
                width: 300,
                height: 1999
            })
        );
        // Vertical-first: 1 x 5000 to 1000 x 10: intermediate 1 x 10.
        let image = pattern(1, 5000);
        let window = Window::full(1000, 10);
        assert!(resize_window_capped(&image, 1000, 10, Filter::Bicubic, window, 64).is_ok());
    }
}
