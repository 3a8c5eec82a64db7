//! Output sizes and the inverse transform that maps model-input pixels back to the image.

use gpuport_manifest_core::modelport::ResizeTarget;
use serde::Serialize;

/// `(width, height)` after the resize rule: `size` is `[height, width]`; `shorter_side: N` makes
/// the shorter side N and the longer `floor(N × long / short)`, computed exactly in integers
/// (torchvision and `modelport.preprocess` use `int(N * long / short)` in floating point, which
/// agrees for every size below 2^26). Square images get N × N. `None` when a side would be 0 or
/// does not fit in `usize`.
pub fn resized_size(width: usize, height: usize, target: ResizeTarget) -> Option<(usize, usize)> {
    let (w, h) = match target {
        ResizeTarget::Size([h, w]) => (u128::from(w), u128::from(h)),
        ResizeTarget::ShorterSide(n) => {
            let (n, width, height) = (u128::from(n), width as u128, height as u128);
            if width <= height {
                (n, n * height / width.max(1))
            } else {
                (n * width / height.max(1), n)
            }
        }
    };
    let (w, h) = (usize::try_from(w).ok()?, usize::try_from(h).ok()?);
    (w > 0 && h > 0).then_some((w, h))
}

/// How the model input relates to the decoded (EXIF-oriented) image: resize by
/// `resized / original` per axis, then the input's origin sits at `(crop_left, crop_top)` in the
/// resized image (negative where zero padding was added).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct InverseTransform {
    /// Decoded image width.
    pub original_width: usize,
    /// Decoded image height.
    pub original_height: usize,
    /// Width after the resize step.
    pub resized_width: usize,
    /// Height after the resize step.
    pub resized_height: usize,
    /// Column of the resized image at input column 0 (negative: left padding).
    pub crop_left: i64,
    /// Row of the resized image at input row 0 (negative: top padding).
    pub crop_top: i64,
    /// Model input width.
    pub input_width: usize,
    /// Model input height.
    pub input_height: usize,
}

impl InverseTransform {
    /// Maps a point in model-input pixel coordinates (edges at integers, pixel `i` spans
    /// `[i, i + 1)`) to original-image pixel coordinates.
    pub fn to_original(&self, x: f64, y: f64) -> (f64, f64) {
        let sx = self.original_width as f64 / self.resized_width as f64;
        let sy = self.original_height as f64 / self.resized_height as f64;
        (
            (x + self.crop_left as f64) * sx,
            (y + self.crop_top as f64) * sy,
        )
    }

    /// Maps an `[x1, y1, x2, y2]` box in model-input pixels to the original image and clips it
    /// to the image.
    pub fn box_to_original(&self, b: [f64; 4]) -> [f64; 4] {
        let (x1, y1) = self.to_original(b[0], b[1]);
        let (x2, y2) = self.to_original(b[2], b[3]);
        let (w, h) = (self.original_width as f64, self.original_height as f64);
        [
            x1.clamp(0.0, w),
            y1.clamp(0.0, h),
            x2.clamp(0.0, w),
            y2.clamp(0.0, h),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shorter_side_follows_torchvision() {
        let t = ResizeTarget::ShorterSide(256);
        assert_eq!(resized_size(4032, 3024, t), Some((341, 256)));
        assert_eq!(resized_size(3024, 4032, t), Some((256, 341)));
        assert_eq!(resized_size(100, 100, t), Some((256, 256)));
        assert_eq!(resized_size(5, 3, ResizeTarget::Size([7, 9])), Some((9, 7)));
        assert_eq!(resized_size(5, 3, ResizeTarget::Size([0, 9])), None);
    }

    #[test]
    fn box_maps_back_through_crop_and_scale() {
        // 640x480 -> shorter side 240 -> 320x240 -> crop 224 at (48, 8).
        let t = InverseTransform {
            original_width: 640,
            original_height: 480,
            resized_width: 320,
            resized_height: 240,
            crop_left: 48,
            crop_top: 8,
            input_width: 224,
            input_height: 224,
        };
        assert_eq!(
            t.box_to_original([0.0, 0.0, 10.0, 20.0]),
            [96.0, 16.0, 116.0, 56.0]
        );
        assert_eq!(
            t.box_to_original([-100.0, 0.0, 400.0, 1000.0]),
            [0.0, 16.0, 640.0, 480.0]
        );
    }
}
