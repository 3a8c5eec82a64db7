//! Greedy non-maximum suppression (torchvision's rule: a box is dropped when its IoU with a kept
//! box of the same class is greater than the threshold; a threshold of 1 keeps everything).

/// Intersection over union of two `[x1, y1, x2, y2]` boxes; 0 when the union is empty.
/// A box with `x2 < x1` (or `y2 < y1`) has area 0.
pub fn iou(a: &[f64; 4], b: &[f64; 4]) -> f64 {
    let area = |r: &[f64; 4]| (r[2] - r[0]).max(0.0) * (r[3] - r[1]).max(0.0);
    let w = (a[2].min(b[2]) - a[0].max(b[0])).max(0.0);
    let h = (a[3].min(b[3]) - a[1].max(b[1])).max(0.0);
    let inter = w * h;
    let union = area(a) + area(b) - inter;
    if union > 0.0 { inter / union } else { 0.0 }
}

/// Indices of the boxes kept, best score first (equal scores: lower index first).
pub fn nms(boxes: &[[f64; 4]], scores: &[f64], iou_threshold: f64) -> Vec<usize> {
    let classes = vec![0; boxes.len()];
    batched_nms(boxes, scores, &classes, iou_threshold)
}

/// [`nms`] run separately per class: boxes of different classes never suppress each other.
/// `boxes`, `scores` and `classes` have one entry per box (extra entries of a longer slice are
/// ignored).
pub fn batched_nms(
    boxes: &[[f64; 4]],
    scores: &[f64],
    classes: &[usize],
    iou_threshold: f64,
) -> Vec<usize> {
    let n = boxes.len().min(scores.len()).min(classes.len());
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    let mut kept: Vec<usize> = Vec::new();
    for i in order {
        let suppressed = kept
            .iter()
            .any(|&k| classes[k] == classes[i] && iou(&boxes[k], &boxes[i]) > iou_threshold);
        if !suppressed {
            kept.push(i);
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_computed_overlaps() {
        // Overlap 5x10 = 50, union 100 + 100 - 50 = 150.
        assert!((iou(&[0.0, 0.0, 10.0, 10.0], &[5.0, 0.0, 15.0, 10.0]) - 1.0 / 3.0).abs() < 1e-15);
        assert_eq!(iou(&[0.0, 0.0, 1.0, 1.0], &[2.0, 2.0, 3.0, 3.0]), 0.0);
        assert_eq!(iou(&[0.0, 0.0, 0.0, 0.0], &[0.0, 0.0, 0.0, 0.0]), 0.0);
        let boxes = [
            [0.0, 0.0, 10.0, 10.0],
            [5.0, 0.0, 15.0, 10.0],
            [1.0, 1.0, 10.0, 10.0],
            [20.0, 20.0, 30.0, 30.0],
        ];
        let scores = [0.9, 0.8, 0.7, 0.95];
        // Box 2 overlaps box 0 by 81/100; box 1 overlaps box 0 by 1/3.
        assert_eq!(nms(&boxes, &scores, 0.5), [3, 0, 1]);
        assert_eq!(nms(&boxes, &scores, 0.3), [3, 0]);
        assert_eq!(nms(&boxes, &scores, 1.0), [3, 0, 1, 2]);
        assert_eq!(batched_nms(&boxes, &scores, &[0, 0, 1, 0], 0.3), [3, 0, 2]);
    }
}
