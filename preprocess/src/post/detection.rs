//! Detection decoding: `rows` (YOLO) and `detr` layouts → scored, suppressed boxes in the
//! original image's pixels.
//!
//! Rules the spec leaves open, pinned in `docs/spec/preprocess.md`: each box gets its best class
//! (the first of equal maxima) and that class's score; the activation applies to the class scores
//! only, and `has_objectness` multiplies them by the raw objectness value; a box is kept when its
//! score is at least `score_threshold`; suppression is per class; `max_detections` keeps the
//! best after suppression.

use gpuport_manifest_core::modelport::{BoxFormat, DetectionFormat, DetectionPostprocess};

use super::PostprocessError;
use super::activation::activate;
use super::nms::batched_nms;
use crate::image::InverseTransform;

/// A model output as `f32` values with its shape.
#[derive(Debug, Clone, Copy)]
pub struct OutputTensor<'a> {
    /// Output name (for messages).
    pub name: &'a str,
    /// Dimensions.
    pub shape: &'a [usize],
    /// Row-major values.
    pub values: &'a [f32],
}

impl OutputTensor<'_> {
    pub(crate) fn bad_shape(&self, expected: &str) -> PostprocessError {
        PostprocessError::BadShape {
            output: self.name.to_owned(),
            expected: expected.to_owned(),
            actual: self.shape.to_vec(),
        }
    }

    /// The values as `f64` after checking there are `count` of them.
    pub(crate) fn checked_values(&self, count: usize) -> Result<Vec<f64>, PostprocessError> {
        if self.values.len() != count {
            return Err(PostprocessError::LengthMismatch {
                output: self.name.to_owned(),
                values: self.values.len(),
                shape: self.shape.to_vec(),
            });
        }
        Ok(self.values.iter().map(|&v| f64::from(v)).collect())
    }

    pub(crate) fn not_finite(&self, index: usize) -> PostprocessError {
        PostprocessError::NotFinite {
            output: self.name.to_owned(),
            index,
        }
    }
}

/// One detected object.
#[derive(Debug, Clone, PartialEq)]
pub struct Detection {
    /// Class index.
    pub class_index: usize,
    /// Its name from the labels file, if there is one for this index.
    pub label: Option<String>,
    /// Score (after activation and objectness).
    pub score: f64,
    /// `[x1, y1, x2, y2]` in model-input pixels.
    pub input_box: [f64; 4],
    /// `[x1, y1, x2, y2]` in original-image pixels, clipped to the image.
    pub image_box: [f64; 4],
}

/// `[1, N, K]` → `(N, K)`.
fn rows_of(output: &OutputTensor<'_>, expected: &str) -> Result<(usize, usize), PostprocessError> {
    match output.shape {
        [1, n, k] => Ok((*n, *k)),
        _ => Err(output.bad_shape(expected)),
    }
}

/// Decodes detections from `scores` (the output carrying the postprocess; for `detr` `boxes` is
/// the output `boxes_output` names) and maps them back through `transform`.
pub fn detect(
    scores: &OutputTensor<'_>,
    boxes: Option<&OutputTensor<'_>>,
    post: &DetectionPostprocess,
    labels: &[String],
    transform: &InverseTransform,
) -> Result<Vec<Detection>, PostprocessError> {
    let objectness = usize::from(post.has_objectness && post.format == DetectionFormat::Rows);
    let background = usize::from(post.background_class);
    // (box values, their output, row stride, offset of the box in a row, class offset, classes).
    let (n, score_stride, class_offset, box_output, box_stride) = match post.format {
        DetectionFormat::Rows => {
            let (n, k) = rows_of(scores, "[1, N, 4 + objectness + classes]")?;
            if k <= 4 + objectness + background {
                return Err(
                    scores.bad_shape("[1, N, 4 + objectness + classes] with at least one class")
                );
            }
            (n, k, 4 + objectness, scores, k)
        }
        DetectionFormat::Detr => {
            let boxes = boxes.ok_or_else(|| PostprocessError::MissingBoxes {
                boxes_output: post.boxes_output.clone().unwrap_or_default(),
            })?;
            let (n, c) = rows_of(scores, "[1, N, classes]")?;
            if c <= background {
                return Err(scores.bad_shape("[1, N, classes] with at least one class"));
            }
            let (bn, four) = rows_of(boxes, "[1, N, 4]")?;
            if bn != n || four != 4 {
                return Err(boxes.bad_shape(&format!("[1, {n}, 4]")));
            }
            (n, c, 0, boxes, 4)
        }
    };
    let score_values = scores.checked_values(n * score_stride)?;
    let box_values = box_output.checked_values(n * box_stride)?;
    let classes = score_stride - class_offset;
    let (input_w, input_h) = (transform.input_width as f64, transform.input_height as f64);

    let mut candidates: Vec<([f64; 4], f64, usize)> = Vec::new();
    for row in 0..n {
        let row_scores = &score_values[row * score_stride..(row + 1) * score_stride];
        if let Some(i) = row_scores.iter().position(|v| !v.is_finite()) {
            return Err(scores.not_finite(row * score_stride + i));
        }
        let mut class_scores = activate(post.activation, &row_scores[class_offset..]);
        class_scores.truncate(classes - background);
        if objectness == 1 {
            class_scores.iter_mut().for_each(|s| *s *= row_scores[4]);
        }
        let Some((class, score)) = class_scores
            .iter()
            .copied()
            .enumerate()
            .reduce(|best, c| if c.1 > best.1 { c } else { best })
        else {
            continue;
        };
        if score < post.score_threshold {
            continue;
        }
        let raw = &box_values[row * box_stride..row * box_stride + 4];
        if let Some(i) = raw.iter().position(|v| !v.is_finite()) {
            return Err(box_output.not_finite(row * box_stride + i));
        }
        let mut b = match post.box_format {
            BoxFormat::Xyxy => [raw[0], raw[1], raw[2], raw[3]],
            BoxFormat::Cxcywh => {
                let (cx, cy, w, h) = (raw[0], raw[1], raw[2], raw[3]);
                [cx - w / 2.0, cy - h / 2.0, cx + w / 2.0, cy + h / 2.0]
            }
        };
        if post.normalized {
            b = [
                b[0] * input_w,
                b[1] * input_h,
                b[2] * input_w,
                b[3] * input_h,
            ];
        }
        candidates.push((b, score, class));
    }

    let all_boxes: Vec<[f64; 4]> = candidates.iter().map(|c| c.0).collect();
    let all_scores: Vec<f64> = candidates.iter().map(|c| c.1).collect();
    let all_classes: Vec<usize> = candidates.iter().map(|c| c.2).collect();
    let kept = batched_nms(&all_boxes, &all_scores, &all_classes, post.iou_threshold);
    let max = usize::try_from(post.max_detections).unwrap_or(usize::MAX);
    Ok(kept
        .into_iter()
        .take(max)
        .map(|i| {
            let (input_box, score, class_index) = candidates[i];
            Detection {
                class_index,
                label: labels.get(class_index).cloned(),
                score,
                input_box,
                image_box: transform.box_to_original(input_box),
            }
        })
        .collect())
}
