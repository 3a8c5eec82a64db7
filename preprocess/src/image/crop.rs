//! Centre crop with zero padding, as a plan: which part of the resized image is visible where.

use super::resize::Window;

/// Where a `crop_width × crop_height` centre crop of a `width × height` image sits.
///
/// The top offset is `round_half_to_even((H − crop_h) / 2)` (Python's `round`, as torchvision);
/// when the image is smaller than the crop it is first padded with zeros, `floor(d / 2)` before
/// and `ceil(d / 2)` after, `d` the missing size. The same for widths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CropPlan {
    /// Resized image column at crop column 0 (negative inside the left padding).
    pub left: i64,
    /// Resized image row at crop row 0 (negative inside the top padding).
    pub top: i64,
    /// Crop width.
    pub width: usize,
    /// Crop height.
    pub height: usize,
    /// The part of the resized image inside the crop.
    pub visible: Window,
}

/// `round_half_to_even(d / 2)` for `d >= 0`.
fn half_rounded_to_even(d: usize) -> usize {
    let half = d / 2;
    if d % 2 == 1 && half % 2 == 1 {
        half + 1
    } else {
        half
    }
}

fn axis(size: usize, crop: usize) -> (i64, usize, usize) {
    let start = if crop > size {
        -(((crop - size) / 2) as i64)
    } else {
        half_rounded_to_even(size - crop) as i64
    };
    let first = start.max(0) as usize;
    let end = (start + crop as i64).min(size as i64) as usize;
    (start, first, end - first)
}

impl CropPlan {
    /// Plans a `crop_width × crop_height` crop of a `width × height` image.
    pub fn new(width: usize, height: usize, crop_width: usize, crop_height: usize) -> Self {
        let (left, x, w) = axis(width, crop_width);
        let (top, y, h) = axis(height, crop_height);
        Self {
            left,
            top,
            width: crop_width,
            height: crop_height,
            visible: Window {
                left: x,
                top: y,
                width: w,
                height: h,
            },
        }
    }

    /// Crop column of the first visible column.
    pub fn visible_left_in_crop(&self) -> usize {
        (self.visible.left as i64 - self.left) as usize
    }

    /// Crop row of the first visible row.
    pub fn visible_top_in_crop(&self) -> usize {
        (self.visible.top as i64 - self.top) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_round_half_to_even_and_pad_floor_before() {
        assert_eq!(half_rounded_to_even(1), 0); // round(0.5) = 0
        assert_eq!(half_rounded_to_even(3), 2); // round(1.5) = 2
        assert_eq!(half_rounded_to_even(5), 2); // round(2.5) = 2
        assert_eq!(half_rounded_to_even(117), 58); // round(58.5) = 58
        let plan = CropPlan::new(341, 256, 224, 224);
        assert_eq!((plan.left, plan.top), (58, 16));
        // 5 wide into 8: pad 1 before, 2 after.
        let plan = CropPlan::new(5, 10, 8, 4);
        assert_eq!((plan.left, plan.top), (-1, 3));
        assert_eq!(
            plan.visible,
            Window {
                left: 0,
                top: 3,
                width: 5,
                height: 4
            }
        );
        assert_eq!(plan.visible_left_in_crop(), 1);
    }
}
