//! The typed ModelPort 0.1 manifest. Every default of the spec is filled in, so a reader of these
//! types never has to know one.

use std::collections::BTreeMap;

use serde::{Serialize, Serializer};

use crate::fileref::FileRef;
use crate::problem::Pointer;
use crate::read::choice_enum;

/// `modelport/MAJOR.MINOR` from the `schema` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct SchemaVersion {
    /// Major version: a newer one is refused.
    pub major: u32,
    /// Minor version: a newer one may carry fields this reader ignores.
    pub minor: u32,
}

impl SchemaVersion {
    /// The version this crate implements, `modelport/0.1`.
    pub const CURRENT: Self = Self { major: 0, minor: 1 };
}

impl std::fmt::Display for SchemaVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "modelport/{}.{}", self.major, self.minor)
    }
}

impl Serialize for SchemaVersion {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

choice_enum! {
    /// What the model does.
    pub enum Task {
        /// Scores over a fixed set of classes.
        ImageClassification = "image-classification",
        /// Boxes with class scores.
        ObjectDetection = "object-detection",
        /// A language model (GGUF through llama.cpp-compatible runtimes).
        TextGeneration = "text-generation",
    }
}

impl Task {
    /// Tasks whose model is described by input and output tensors.
    pub fn is_tensor_task(self) -> bool {
        !matches!(self, Task::TextGeneration)
    }
}

choice_enum! {
    /// Inference engine that runs a variant.
    pub enum Runtime {
        /// ONNX graph.
        Onnx = "onnx",
        /// ExecuTorch `.pte` program.
        Executorch = "executorch",
        /// GGUF file for llama.cpp-compatible runtimes.
        Llamacpp = "llamacpp",
    }
}

choice_enum! {
    /// Element type of a tensor.
    pub enum DType {
        /// IEEE binary32.
        Float32 = "float32",
        /// IEEE binary16.
        Float16 = "float16",
        /// Signed 64-bit.
        Int64 = "int64",
        /// Signed 32-bit.
        Int32 = "int32",
        /// Signed 8-bit.
        Int8 = "int8",
        /// Unsigned 8-bit.
        Uint8 = "uint8",
        /// One byte, 0 or 1.
        Bool = "bool",
    }
}

impl DType {
    /// Bytes per element in the raw little-endian golden files.
    pub fn size_bytes(self) -> u64 {
        match self {
            DType::Float32 | DType::Int32 => 4,
            DType::Float16 => 2,
            DType::Int64 => 8,
            DType::Int8 | DType::Uint8 | DType::Bool => 1,
        }
    }
}

choice_enum! {
    /// Dimension order of an image tensor.
    pub enum Layout {
        /// Batch, channels, height, width.
        Nchw = "NCHW",
        /// Batch, height, width, channels.
        Nhwc = "NHWC",
    }
}

choice_enum! {
    /// Resampling filter.
    pub enum ResizeMethod {
        /// Triangle filter (antialiased: PIL; plain: half-pixel float bilinear).
        Bilinear = "bilinear",
        /// PIL-compatible nearest neighbour.
        Nearest = "nearest",
        /// PIL's bicubic (a = -0.5), antialiased only.
        Bicubic = "bicubic",
    }
}

choice_enum! {
    /// Channel order of the tensor.
    pub enum ColorOrder {
        /// Red, green, blue.
        Rgb = "RGB",
        /// Blue, green, red.
        Bgr = "BGR",
    }
}

choice_enum! {
    /// Function applied to raw scores.
    pub enum Activation {
        /// Softmax over the classes.
        Softmax = "softmax",
        /// Logistic sigmoid per score.
        Sigmoid = "sigmoid",
        /// Scores used as they are.
        None = "none",
    }
}

choice_enum! {
    /// Detection output layout.
    pub enum DetectionFormat {
        /// YOLO style `[1, N, 4 + objectness + classes]`.
        Rows = "rows",
        /// DETR style: class scores here, boxes in `boxes_output`.
        Detr = "detr",
    }
}

choice_enum! {
    /// How four numbers describe a box.
    pub enum BoxFormat {
        /// Corners.
        Xyxy = "xyxy",
        /// Centre and size.
        Cxcywh = "cxcywh",
    }
}

choice_enum! {
    /// Where the chat template comes from (0.1 allows only the GGUF).
    pub enum ChatTemplate {
        /// The template stored in the GGUF file.
        FromGguf = "from_gguf",
    }
}

/// A parsed, fully valid `modelport.json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Manifest {
    /// Spec version of the document.
    pub schema: SchemaVersion,
    /// Lowercase id.
    pub id: String,
    /// Semantic version of the bundle.
    pub version: String,
    /// What the model does.
    pub task: Task,
    /// SPDX license expression of the weights.
    pub license: String,
    /// Human-friendly name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// One or two sentences.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Where the model came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Concrete forms of the model, in order of preference.
    pub variants: Vec<Variant>,
    /// Model inputs (tensor tasks).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<InputSpec>,
    /// Model outputs (tensor tasks).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub outputs: Vec<OutputSpec>,
    /// Language-model settings (text-generation).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm: Option<LlmConfig>,
    /// Saved inputs and expected outputs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub golden: Option<Golden>,
}

/// One concrete form of the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Variant {
    /// Unique id within the manifest.
    pub id: String,
    /// Engine that runs it.
    pub runtime: Runtime,
    /// Engine backend, such as `xnnpack`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    /// Such as `fp32`, `q4_k_m`.
    pub precision: String,
    /// The main model file.
    pub file: FileRef,
    /// Files the main file needs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub extra_files: Vec<FileRef>,
    /// Skip this variant on devices with less RAM.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_ram_mb: Option<u64>,
    /// Overrides the golden tolerance for this variant.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tolerance: Option<Tolerance>,
}

/// `|device - expected| <= atol + rtol * |expected|`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Tolerance {
    /// Absolute tolerance (default 0.001).
    pub atol: f64,
    /// Relative tolerance (default 0.001).
    pub rtol: f64,
}

impl Default for Tolerance {
    fn default() -> Self {
        Self {
            atol: 1e-3,
            rtol: 1e-3,
        }
    }
}

/// A tensor dimension: fixed, or `-1` (known only at run time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dim {
    /// A fixed size (> 0).
    Fixed(u64),
    /// `-1`.
    Dynamic,
}

impl Dim {
    /// The fixed size, if any.
    pub fn fixed(self) -> Option<u64> {
        match self {
            Dim::Fixed(n) => Some(n),
            Dim::Dynamic => None,
        }
    }
}

impl Serialize for Dim {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Dim::Fixed(n) => s.serialize_u64(*n),
            Dim::Dynamic => s.serialize_i64(-1),
        }
    }
}

/// Number of elements of a fully static shape (`None` if a dimension is dynamic or the product
/// overflows).
pub fn element_count(shape: &[Dim]) -> Option<u64> {
    shape
        .iter()
        .try_fold(1u64, |acc, d| acc.checked_mul(d.fixed()?))
}

/// A model input.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InputSpec {
    /// Tensor name.
    pub name: String,
    /// Element type.
    pub dtype: DType,
    /// Dimensions.
    pub shape: Vec<Dim>,
    /// Dimension order (required with `preprocess`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layout: Option<Layout>,
    /// How to build the tensor from an image.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preprocess: Option<ImagePreprocess>,
}

/// A model output.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OutputSpec {
    /// Tensor name.
    pub name: String,
    /// Element type.
    pub dtype: DType,
    /// Dimensions.
    pub shape: Vec<Dim>,
    /// How to turn the tensor into results.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub postprocess: Option<Postprocess>,
}

/// Image preprocessing, with the spec's defaults filled in.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename = "image")]
pub struct ImagePreprocess {
    /// Resize step.
    pub resize: Resize,
    /// `[height, width]` crop from the centre after resizing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub center_crop: Option<[u64; 2]>,
    /// Channel order (default RGB).
    pub color: ColorOrder,
    /// Multiplier for 0–255 pixels (default 1/255).
    pub scale: f64,
    /// Per-channel mean, in output channel order (default 0).
    pub mean: [f64; 3],
    /// Per-channel std, > 0 (default 1).
    pub std: [f64; 3],
}

impl ImagePreprocess {
    /// The final `[height, width]` when it does not depend on the image.
    pub fn output_size(&self) -> Option<[u64; 2]> {
        self.center_crop.or(match self.resize.target {
            ResizeTarget::Size(hw) => Some(hw),
            ResizeTarget::ShorterSide(_) => None,
        })
    }
}

/// The resize step.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Resize {
    /// Target size rule.
    #[serde(flatten)]
    pub target: ResizeTarget,
    /// Filter (default bilinear).
    pub method: ResizeMethod,
    /// Low-pass filter when shrinking (default false).
    pub antialias: bool,
}

/// `shorter_side` xor `size`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ResizeTarget {
    /// Shorter side becomes N; longer side floor(N × long / short).
    ShorterSide(u64),
    /// Exact `[height, width]`.
    Size([u64; 2]),
}

/// Output post-processing.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Postprocess {
    /// Class scores.
    Classification(ClassificationPostprocess),
    /// Boxes.
    Detection(DetectionPostprocess),
}

impl Postprocess {
    /// The labels file, if any.
    pub fn labels(&self) -> Option<&FileRef> {
        match self {
            Postprocess::Classification(c) => c.labels.as_ref(),
            Postprocess::Detection(d) => d.labels.as_ref(),
        }
    }
}

/// Classification post-processing with defaults filled in.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassificationPostprocess {
    /// Default softmax.
    pub activation: Activation,
    /// One class name per line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub labels: Option<FileRef>,
    /// Default 5.
    pub top_k: u64,
}

/// Detection post-processing with defaults filled in.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DetectionPostprocess {
    /// Default rows.
    pub format: DetectionFormat,
    /// DETR: name of the `[1, N, 4]` boxes output.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boxes_output: Option<String>,
    /// Default none.
    pub activation: Activation,
    /// Last class is "no object" (default false).
    pub background_class: bool,
    /// Default cxcywh.
    pub box_format: BoxFormat,
    /// Boxes are 0–1 fractions of the input size (default false).
    pub normalized: bool,
    /// Rows: an objectness score follows the box (default false).
    pub has_objectness: bool,
    /// 0..=1, default 0.25.
    pub score_threshold: f64,
    /// 0..=1, default 0.45; 1 turns NMS off.
    pub iou_threshold: f64,
    /// Default 100.
    pub max_detections: u64,
    /// One class name per line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub labels: Option<FileRef>,
}

/// Language-model settings.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LlmConfig {
    /// Context window to allocate.
    pub context_length: u64,
    /// Always from the GGUF in 0.1.
    pub chat_template: ChatTemplate,
    /// Sampling defaults.
    pub defaults: GenerationDefaults,
}

/// Sampling defaults with the spec's values filled in.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GenerationDefaults {
    /// 0..=2, default 0.7.
    pub temperature: f64,
    /// (0, 1], default 0.9.
    pub top_p: f64,
    /// Optional, > 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_k: Option<u64>,
    /// Default 512.
    pub max_tokens: u64,
    /// Optional, > 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeat_penalty: Option<f64>,
}

impl Default for GenerationDefaults {
    fn default() -> Self {
        Self {
            temperature: 0.7,
            top_p: 0.9,
            top_k: None,
            max_tokens: 512,
            repeat_penalty: None,
        }
    }
}

/// Saved inputs and expected outputs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Golden {
    /// Input tensor name → raw data file.
    pub inputs: BTreeMap<String, FileRef>,
    /// Output tensor name → raw data file.
    pub outputs: BTreeMap<String, FileRef>,
    /// Default atol = rtol = 0.001.
    pub tolerance: Tolerance,
}

impl Manifest {
    /// Every file the manifest points to, with the pointer of its FileRef, in document order.
    pub fn files(&self) -> Vec<(Pointer, &FileRef)> {
        let root = Pointer::root();
        let mut out = Vec::new();
        for (i, v) in self.variants.iter().enumerate() {
            let at = root.key("variants").index(i);
            out.push((at.key("file"), &v.file));
            for (j, f) in v.extra_files.iter().enumerate() {
                out.push((at.key("extra_files").index(j), f));
            }
        }
        for (i, o) in self.outputs.iter().enumerate() {
            if let Some(labels) = o.postprocess.as_ref().and_then(Postprocess::labels) {
                let at = root
                    .key("outputs")
                    .index(i)
                    .key("postprocess")
                    .key("labels");
                out.push((at, labels));
            }
        }
        if let Some(g) = &self.golden {
            for (side, map) in [("inputs", &g.inputs), ("outputs", &g.outputs)] {
                for (name, f) in map {
                    out.push((root.key("golden").key(side).key(name), f));
                }
            }
        }
        out
    }
}
