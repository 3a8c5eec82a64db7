//! Post-processing: model outputs → ranked classes or boxes in original-image pixels
//! (ModelPort 0.1 "Classification postprocessing" and "Detection postprocessing").

mod activation;
mod classification;
mod detection;
mod nms;

pub use activation::{activate, parse_labels};
pub use classification::{ClassScore, classify};
pub use detection::{Detection, OutputTensor, detect};
pub use nms::{batched_nms, iou, nms};

/// Why outputs could not be post-processed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PostprocessError {
    /// An output does not have the shape the format needs.
    #[error("output '{output}' has shape {actual:?}, expected {expected}")]
    BadShape {
        /// Output name.
        output: String,
        /// What the format needs.
        expected: String,
        /// What it has.
        actual: Vec<usize>,
    },
    /// The number of values does not match the shape.
    #[error("output '{output}' has {values} values for shape {shape:?}")]
    LengthMismatch {
        /// Output name.
        output: String,
        /// Values given.
        values: usize,
        /// Declared shape.
        shape: Vec<usize>,
    },
    /// A score or box coordinate is NaN or infinite.
    #[error("output '{output}' element {index} is not finite")]
    NotFinite {
        /// Output name.
        output: String,
        /// Flat element index.
        index: usize,
    },
    /// `detr` without the boxes output it names.
    #[error("detection format detr needs the boxes output '{boxes_output}'")]
    MissingBoxes {
        /// The name from `boxes_output`.
        boxes_output: String,
    },
    /// A labels file that is not UTF-8.
    #[error("labels file is not UTF-8")]
    LabelsNotUtf8,
}
