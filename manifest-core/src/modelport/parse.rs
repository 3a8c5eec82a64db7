//! Reading each section of `modelport.json` into its typed form, one function per section.
//! Cross-field rules live in `rules.rs`; this file checks each field on its own.

use std::collections::BTreeMap;

use serde_json::Value;

use super::types::*;
use crate::fileref::{FileRef, read_file_ref};
use crate::problem::{Pointer, ProblemKind};
use crate::read::{NumberRange, Reader};

/// `^[a-z0-9][a-z0-9._-]*$`: the spec's id charset (lowercase letters, digits, `.`, `_`, `-`),
/// starting with a letter or digit as the reference schema requires.
pub fn is_valid_id(s: &str) -> bool {
    let mut bytes = s.bytes();
    matches!(bytes.next(), Some(b'a'..=b'z' | b'0'..=b'9'))
        && bytes.all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'.' | b'_' | b'-'))
}

fn read_id(r: &mut Reader, v: &Value, at: &Pointer) -> Option<String> {
    let s = r.string(v, at)?;
    if is_valid_id(s) {
        Some(s.to_owned())
    } else {
        let msg = format!(
            "`{s}` must be lowercase letters, digits, `.`, `_` or `-`, starting with a letter or digit"
        );
        r.problem(at, ProblemKind::Value, msg);
        None
    }
}

fn read_non_empty(r: &mut Reader, v: &Value, at: &Pointer) -> Option<String> {
    let s = r.string(v, at)?;
    if s.is_empty() {
        r.problem(at, ProblemKind::Value, "must not be empty");
        return None;
    }
    Some(s.to_owned())
}

fn read_semver(r: &mut Reader, v: &Value, at: &Pointer) -> Option<String> {
    let s = r.string(v, at)?;
    match semver::Version::parse(s) {
        Ok(_) => Some(s.to_owned()),
        Err(e) => {
            let msg = format!("`{s}` is not a semantic version like 1.0.0: {e}");
            r.problem(at, ProblemKind::Value, msg);
            None
        }
    }
}

fn read_license(r: &mut Reader, v: &Value, at: &Pointer) -> Option<String> {
    let s = r.string(v, at)?;
    match spdx::Expression::parse(s) {
        Ok(_) => Some(s.to_owned()),
        Err(e) => {
            let msg = format!(
                "`{s}` is not an SPDX license identifier or expression (e.g. Apache-2.0, MIT OR Apache-2.0, LicenseRef-custom): {}",
                e.reason
            );
            r.problem(at, ProblemKind::Value, msg);
            None
        }
    }
}

/// Reads the `schema` field: `modelport/MAJOR.MINOR`.
pub(crate) fn read_schema(r: &mut Reader, v: &Value, at: &Pointer) -> Option<SchemaVersion> {
    let s = r.string(v, at)?;
    let parsed = s.strip_prefix("modelport/").and_then(|rest| {
        let (major, minor) = rest.split_once('.')?;
        let digits = |x: &str| !x.is_empty() && x.bytes().all(|b| b.is_ascii_digit());
        if !digits(major) || !digits(minor) || (major.len() > 1 && major.starts_with('0')) {
            return None;
        }
        Some(SchemaVersion {
            major: major.parse().ok()?,
            minor: minor.parse().ok()?,
        })
    });
    let Some(version) = parsed else {
        let msg = format!("`{s}` is not a ModelPort schema version like `modelport/0.1`");
        r.problem(at, ProblemKind::Value, msg);
        return None;
    };
    if version.major != SchemaVersion::CURRENT.major {
        let msg = format!(
            "`{s}` is a different major version than this reader's {} and must be refused",
            SchemaVersion::CURRENT
        );
        r.problem(at, ProblemKind::Unsupported, msg);
        return None;
    }
    if version.minor < SchemaVersion::CURRENT.minor {
        let msg =
            format!("`{s}` is not a published ModelPort version (the first is modelport/0.1)");
        r.problem(at, ProblemKind::Unsupported, msg);
        return None;
    }
    Some(version)
}

pub(crate) fn read_tolerance(r: &mut Reader, v: &Value, at: &Pointer) -> Option<Tolerance> {
    let obj = r.object(v, at, &["atol", "rtol"])?;
    let mut t = Tolerance::default();
    let mut ok = true;
    for (key, slot) in [("atol", &mut t.atol), ("rtol", &mut t.rtol)] {
        if let Some((v, p)) = Reader::optional(&obj, key) {
            match r.number_in(v, &p, NumberRange::at_least(0.0)) {
                Some(x) => *slot = x,
                None => ok = false,
            }
        }
    }
    ok.then_some(t)
}

fn read_precision(r: &mut Reader, v: &Value, at: &Pointer) -> Option<String> {
    let s = r.string(v, at)?;
    let valid = !s.is_empty()
        && s.bytes()
            .all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_'));
    if !valid {
        let msg = format!("`{s}` must be lowercase letters, digits and `_` (e.g. fp32, q4_k_m)");
        r.problem(at, ProblemKind::Value, msg);
        return None;
    }
    Some(s.to_owned())
}

pub(crate) fn read_variant(r: &mut Reader, v: &Value, at: &Pointer) -> Option<Variant> {
    let fields = [
        "id",
        "runtime",
        "backend",
        "precision",
        "file",
        "extra_files",
        "min_ram_mb",
        "tolerance",
    ];
    let obj = r.object(v, at, &fields)?;
    let id = r.required(&obj, "id").and_then(|(v, p)| read_id(r, v, &p));
    let runtime = r
        .required(&obj, "runtime")
        .and_then(|(v, p)| r.choice(v, &p));
    let backend = opt(r, &obj, "backend", read_non_empty);
    let precision = r
        .required(&obj, "precision")
        .and_then(|(v, p)| read_precision(r, v, &p));
    let file = r
        .required(&obj, "file")
        .and_then(|(v, p)| read_file_ref(r, v, &p));
    let extra_files = opt(r, &obj, "extra_files", |r, v, p| {
        r.list(v, p, read_file_ref)
    });
    let min_ram_mb = opt(r, &obj, "min_ram_mb", Reader::positive);
    let tolerance = opt(r, &obj, "tolerance", read_tolerance);
    Some(Variant {
        id: id?,
        runtime: runtime?,
        backend: backend?,
        precision: precision?,
        file: file?,
        extra_files: extra_files?.unwrap_or_default(),
        min_ram_mb: min_ram_mb?,
        tolerance: tolerance?,
    })
}

/// Reads an optional member with `read`: `Some(None)` when absent, `None` when present but bad.
pub(crate) fn opt<T>(
    r: &mut Reader,
    obj: &crate::read::Obj<'_>,
    key: &str,
    read: impl FnOnce(&mut Reader, &Value, &Pointer) -> Option<T>,
) -> Option<Option<T>> {
    match Reader::optional(obj, key) {
        None => Some(None),
        Some((v, p)) => read(r, v, &p).map(Some),
    }
}

/// Like [`opt`] with a default for the absent case.
pub(crate) fn opt_or<T>(
    r: &mut Reader,
    obj: &crate::read::Obj<'_>,
    key: &str,
    default: T,
    read: impl FnOnce(&mut Reader, &Value, &Pointer) -> Option<T>,
) -> Option<T> {
    opt(r, obj, key, read).map(|x| x.unwrap_or(default))
}

fn read_dim(r: &mut Reader, v: &Value, at: &Pointer) -> Option<Dim> {
    match r.integer(v, at)? {
        -1 => Some(Dim::Dynamic),
        n if n > 0 => Some(Dim::Fixed(n as u64)),
        n => {
            let msg = format!("dimension must be a positive integer or -1, found {n}");
            r.problem(at, ProblemKind::Value, msg);
            None
        }
    }
}

fn read_shape(r: &mut Reader, v: &Value, at: &Pointer) -> Option<Vec<Dim>> {
    r.list(v, at, read_dim)
}

fn read_pair(r: &mut Reader, v: &Value, at: &Pointer) -> Option<[u64; 2]> {
    r.fixed(v, at, Reader::positive)
}

fn read_resize(r: &mut Reader, v: &Value, at: &Pointer) -> Option<Resize> {
    let obj = r.object(v, at, &["shorter_side", "size", "method", "antialias"])?;
    let shorter = Reader::optional(&obj, "shorter_side");
    let size = Reader::optional(&obj, "size");
    let target = match (shorter, size) {
        (Some((v, p)), None) => r.positive(v, &p).map(ResizeTarget::ShorterSide),
        (None, Some((v, p))) => read_pair(r, v, &p).map(ResizeTarget::Size),
        (Some(_), Some(_)) => {
            let msg = "set exactly one of `shorter_side` or `size`, not both";
            r.problem(at, ProblemKind::Conflict, msg);
            None
        }
        (None, None) => {
            r.problem(
                at,
                ProblemKind::Missing,
                "set exactly one of `shorter_side` or `size`",
            );
            None
        }
    };
    let method = opt_or(r, &obj, "method", ResizeMethod::Bilinear, Reader::choice);
    let antialias = opt_or(r, &obj, "antialias", false, Reader::boolean);
    if let (Some(method), Some(antialias)) = (method, antialias) {
        let forbidden = match (method, antialias) {
            (ResizeMethod::Bicubic, false) => {
                Some("bicubic resize needs `antialias: true` in spec 0.1")
            }
            (ResizeMethod::Nearest, true) => {
                Some("nearest resize cannot use `antialias: true` in spec 0.1")
            }
            _ => None,
        };
        if let Some(msg) = forbidden {
            r.problem(&at.key("method"), ProblemKind::Conflict, msg);
            return None;
        }
    }
    Some(Resize {
        target: target?,
        method: method?,
        antialias: antialias?,
    })
}

/// Reads an optional `"type"` tag that, when present, must be `expected`.
fn read_type_tag(r: &mut Reader, obj: &crate::read::Obj<'_>, expected: &str) -> Option<()> {
    let (v, p) = match Reader::optional(obj, "type") {
        None => return Some(()),
        Some(x) => x,
    };
    let s = r.string(v, &p)?;
    if s == expected {
        Some(())
    } else {
        r.problem(
            &p,
            ProblemKind::Value,
            format!("must be `{expected}`, found `{s}`"),
        );
        None
    }
}

fn read_three(r: &mut Reader, v: &Value, at: &Pointer) -> Option<[f64; 3]> {
    r.fixed(v, at, Reader::number)
}

fn read_preprocess(r: &mut Reader, v: &Value, at: &Pointer) -> Option<ImagePreprocess> {
    let fields = [
        "type",
        "resize",
        "center_crop",
        "color",
        "scale",
        "mean",
        "std",
    ];
    let obj = r.object(v, at, &fields)?;
    let tag = read_type_tag(r, &obj, "image");
    let resize = r
        .required(&obj, "resize")
        .and_then(|(v, p)| read_resize(r, v, &p));
    let center_crop = opt(r, &obj, "center_crop", read_pair);
    let color = opt_or(r, &obj, "color", ColorOrder::Rgb, Reader::choice);
    let scale = opt_or(r, &obj, "scale", 1.0 / 255.0, |r, v, p| {
        r.number_in(v, p, NumberRange::above(0.0))
    });
    let mean = opt_or(r, &obj, "mean", [0.0; 3], read_three);
    let std = opt_or(r, &obj, "std", [1.0; 3], |r, v, p| {
        let std = read_three(r, v, p)?;
        for (i, s) in std.iter().enumerate() {
            if *s <= 0.0 {
                let msg = format!("must be greater than 0, found {s}");
                r.problem(&p.index(i), ProblemKind::Value, msg);
            }
        }
        std.iter().all(|s| *s > 0.0).then_some(std)
    });
    tag?;
    Some(ImagePreprocess {
        resize: resize?,
        center_crop: center_crop?,
        color: color?,
        scale: scale?,
        mean: mean?,
        std: std?,
    })
}

/// The fields inputs and outputs share: `name`, `dtype`, `shape`.
fn read_tensor_fields(
    r: &mut Reader,
    obj: &crate::read::Obj<'_>,
) -> (Option<String>, Option<DType>, Option<Vec<Dim>>) {
    let name = r
        .required(obj, "name")
        .and_then(|(v, p)| read_non_empty(r, v, &p));
    let dtype = r.required(obj, "dtype").and_then(|(v, p)| r.choice(v, &p));
    let shape = r
        .required(obj, "shape")
        .and_then(|(v, p)| read_shape(r, v, &p));
    (name, dtype, shape)
}

pub(crate) fn read_input(r: &mut Reader, v: &Value, at: &Pointer) -> Option<InputSpec> {
    let obj = r.object(v, at, &["name", "dtype", "shape", "layout", "preprocess"])?;
    let (name, dtype, shape) = read_tensor_fields(r, &obj);
    let layout = opt(r, &obj, "layout", Reader::choice);
    let preprocess = opt(r, &obj, "preprocess", read_preprocess);
    Some(InputSpec {
        name: name?,
        dtype: dtype?,
        shape: shape?,
        layout: layout?,
        preprocess: preprocess?,
    })
}

/// Reads an output. `task` decides the postprocess kind when its `"type"` tag is absent.
pub(crate) fn read_output(
    r: &mut Reader,
    v: &Value,
    at: &Pointer,
    task: Option<Task>,
) -> Option<OutputSpec> {
    let obj = r.object(v, at, &["name", "dtype", "shape", "postprocess"])?;
    let (name, dtype, shape) = read_tensor_fields(r, &obj);
    let postprocess = opt(r, &obj, "postprocess", |r, v, p| {
        read_postprocess(r, v, p, task)
    });
    Some(OutputSpec {
        name: name?,
        dtype: dtype?,
        shape: shape?,
        postprocess: postprocess?,
    })
}

fn read_postprocess(
    r: &mut Reader,
    v: &Value,
    at: &Pointer,
    task: Option<Task>,
) -> Option<Postprocess> {
    let tag = match v.get("type") {
        Some(t) => match t.as_str() {
            Some(s @ ("classification" | "detection")) => s,
            Some(s) => {
                let msg = format!("`{s}` is not one of `classification`, `detection`");
                r.problem(&at.key("type"), ProblemKind::Value, msg);
                return None;
            }
            None => {
                r.string(t, &at.key("type"));
                return None;
            }
        },
        // The spec leaves the tag implicit; the reference writes it. Without one, the task says
        // which kind is meant.
        None => match task {
            Some(Task::ImageClassification) => "classification",
            Some(Task::ObjectDetection) => "detection",
            Some(Task::TextGeneration) => {
                let msg = "text-generation outputs have no postprocess";
                r.problem(at, ProblemKind::Conflict, msg);
                return None;
            }
            // The task itself is broken and already reported.
            None => return None,
        },
    };
    if tag == "classification" {
        read_classification(r, v, at).map(Postprocess::Classification)
    } else {
        read_detection(r, v, at).map(Postprocess::Detection)
    }
}

fn read_classification(
    r: &mut Reader,
    v: &Value,
    at: &Pointer,
) -> Option<ClassificationPostprocess> {
    let obj = r.object(v, at, &["type", "activation", "labels", "top_k"])?;
    let activation = opt_or(r, &obj, "activation", Activation::Softmax, Reader::choice);
    let labels = opt(r, &obj, "labels", read_file_ref);
    let top_k = opt_or(r, &obj, "top_k", 5, Reader::positive);
    Some(ClassificationPostprocess {
        activation: activation?,
        labels: labels?,
        top_k: top_k?,
    })
}

fn read_detection(r: &mut Reader, v: &Value, at: &Pointer) -> Option<DetectionPostprocess> {
    let fields = [
        "type",
        "format",
        "boxes_output",
        "activation",
        "background_class",
        "box_format",
        "normalized",
        "has_objectness",
        "score_threshold",
        "iou_threshold",
        "max_detections",
        "labels",
    ];
    let obj = r.object(v, at, &fields)?;
    let unit =
        |r: &mut Reader, v: &Value, p: &Pointer| r.number_in(v, p, NumberRange::closed(0.0, 1.0));
    let format = opt_or(r, &obj, "format", DetectionFormat::Rows, Reader::choice);
    let boxes_output = opt(r, &obj, "boxes_output", read_non_empty);
    let activation = opt_or(r, &obj, "activation", Activation::None, Reader::choice);
    let background_class = opt_or(r, &obj, "background_class", false, Reader::boolean);
    let box_format = opt_or(r, &obj, "box_format", BoxFormat::Cxcywh, Reader::choice);
    let normalized = opt_or(r, &obj, "normalized", false, Reader::boolean);
    let has_objectness = opt_or(r, &obj, "has_objectness", false, Reader::boolean);
    let score_threshold = opt_or(r, &obj, "score_threshold", 0.25, unit);
    let iou_threshold = opt_or(r, &obj, "iou_threshold", 0.45, unit);
    let max_detections = opt_or(r, &obj, "max_detections", 100, Reader::positive);
    let labels = opt(r, &obj, "labels", read_file_ref);
    let d = DetectionPostprocess {
        format: format?,
        boxes_output: boxes_output?,
        activation: activation?,
        background_class: background_class?,
        box_format: box_format?,
        normalized: normalized?,
        has_objectness: has_objectness?,
        score_threshold: score_threshold?,
        iou_threshold: iou_threshold?,
        max_detections: max_detections?,
        labels: labels?,
    };
    let conflict = match (d.format, d.boxes_output.is_some(), d.has_objectness) {
        (DetectionFormat::Detr, false, _) => Some(("", "format `detr` needs `boxes_output`")),
        (DetectionFormat::Rows, true, _) => {
            Some(("boxes_output", "`boxes_output` is only for format `detr`"))
        }
        (DetectionFormat::Detr, _, true) => Some((
            "has_objectness",
            "`has_objectness` is only for format `rows`",
        )),
        _ => None,
    };
    if let Some((key, msg)) = conflict {
        let p = if key.is_empty() {
            at.clone()
        } else {
            at.key(key)
        };
        r.problem(&p, ProblemKind::Conflict, msg);
        return None;
    }
    Some(d)
}

fn read_defaults(r: &mut Reader, v: &Value, at: &Pointer) -> Option<GenerationDefaults> {
    let fields = [
        "temperature",
        "top_p",
        "top_k",
        "max_tokens",
        "repeat_penalty",
    ];
    let obj = r.object(v, at, &fields)?;
    let d = GenerationDefaults::default();
    let temperature = opt_or(r, &obj, "temperature", d.temperature, |r, v, p| {
        r.number_in(v, p, NumberRange::closed(0.0, 2.0))
    });
    let top_p = opt_or(r, &obj, "top_p", d.top_p, |r, v, p| {
        r.number_in(v, p, NumberRange::above_up_to(0.0, 1.0))
    });
    let top_k = opt(r, &obj, "top_k", Reader::positive);
    let max_tokens = opt_or(r, &obj, "max_tokens", d.max_tokens, Reader::positive);
    let repeat_penalty = opt(r, &obj, "repeat_penalty", |r, v, p| {
        r.number_in(v, p, NumberRange::above(0.0))
    });
    Some(GenerationDefaults {
        temperature: temperature?,
        top_p: top_p?,
        top_k: top_k?,
        max_tokens: max_tokens?,
        repeat_penalty: repeat_penalty?,
    })
}

pub(crate) fn read_llm(r: &mut Reader, v: &Value, at: &Pointer) -> Option<LlmConfig> {
    let obj = r.object(v, at, &["context_length", "chat_template", "defaults"])?;
    let context_length = r
        .required(&obj, "context_length")
        .and_then(|(v, p)| r.positive(v, &p));
    let chat_template = opt_or(
        r,
        &obj,
        "chat_template",
        ChatTemplate::FromGguf,
        Reader::choice,
    );
    let defaults = opt_or(
        r,
        &obj,
        "defaults",
        GenerationDefaults::default(),
        read_defaults,
    );
    Some(LlmConfig {
        context_length: context_length?,
        chat_template: chat_template?,
        defaults: defaults?,
    })
}

fn read_file_map(r: &mut Reader, v: &Value, at: &Pointer) -> Option<BTreeMap<String, FileRef>> {
    let empty = Some("must name at least one tensor");
    r.entries(v, at, empty, |r, _, v, p| read_file_ref(r, v, p))
}

pub(crate) fn read_golden(r: &mut Reader, v: &Value, at: &Pointer) -> Option<Golden> {
    let obj = r.object(v, at, &["inputs", "outputs", "tolerance"])?;
    let inputs = r
        .required(&obj, "inputs")
        .and_then(|(v, p)| read_file_map(r, v, &p));
    let outputs = r
        .required(&obj, "outputs")
        .and_then(|(v, p)| read_file_map(r, v, &p));
    let tolerance = opt_or(r, &obj, "tolerance", Tolerance::default(), read_tolerance);
    Some(Golden {
        inputs: inputs?,
        outputs: outputs?,
        tolerance: tolerance?,
    })
}

/// The top-level fields, each read on its own. `None` entries are parts that were broken (their
/// problems are recorded); the rules in `rules.rs` check what did parse.
pub(crate) struct Draft {
    pub schema: Option<SchemaVersion>,
    pub id: Option<String>,
    pub version: Option<String>,
    pub task: Option<Task>,
    pub license: Option<String>,
    pub name: Option<Option<String>>,
    pub description: Option<Option<String>>,
    pub source: Option<Option<String>>,
    pub variants: Option<Vec<Option<Variant>>>,
    /// Each variant's runtime, read even when another field of that variant is broken, so the
    /// task rules still see it.
    pub variant_runtimes: Vec<(usize, Runtime)>,
    pub inputs: Option<Vec<Option<InputSpec>>>,
    pub outputs: Option<Vec<Option<OutputSpec>>>,
    pub llm: Option<Option<LlmConfig>>,
    pub golden: Option<Option<Golden>>,
}

/// Reads every element of an optional array, keeping broken elements as `None` so that indices
/// stay aligned with pointers.
fn read_elements<T>(
    r: &mut Reader,
    obj: &crate::read::Obj<'_>,
    key: &str,
    mut read: impl FnMut(&mut Reader, &Value, &Pointer) -> Option<T>,
) -> Option<Vec<Option<T>>> {
    let Some((v, p)) = Reader::optional(obj, key) else {
        return Some(Vec::new());
    };
    let items = r.array(v, &p)?;
    Some(
        items
            .iter()
            .enumerate()
            .map(|(i, item)| read(r, item, &p.index(i)))
            .collect(),
    )
}

pub(crate) const TOP_LEVEL_FIELDS: [&str; 13] = [
    "schema",
    "id",
    "version",
    "task",
    "license",
    "name",
    "description",
    "source",
    "variants",
    "inputs",
    "outputs",
    "llm",
    "golden",
];

/// Reads the top-level object (already known to be one) into a [`Draft`].
pub(crate) fn read_draft(r: &mut Reader, obj: &crate::read::Obj<'_>) -> Draft {
    let id = r.required(obj, "id").and_then(|(v, p)| read_id(r, v, &p));
    let version = r
        .required(obj, "version")
        .and_then(|(v, p)| read_semver(r, v, &p));
    let task: Option<Task> = r.required(obj, "task").and_then(|(v, p)| r.choice(v, &p));
    let license = r
        .required(obj, "license")
        .and_then(|(v, p)| read_license(r, v, &p));
    let text = |r: &mut Reader, v: &Value, p: &Pointer| r.string(v, p).map(str::to_owned);
    let name = opt(r, obj, "name", text);
    let description = opt(r, obj, "description", text);
    let source = opt(r, obj, "source", text);
    let variants = match r.required(obj, "variants") {
        None => None,
        Some((v, p)) => match r.array(v, &p) {
            Some([]) => {
                r.problem(&p, ProblemKind::Value, "must list at least one variant");
                None
            }
            Some(items) => Some(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| read_variant(r, item, &p.index(i)))
                    .collect(),
            ),
            None => None,
        },
    };
    let variant_runtimes = Reader::optional(obj, "variants")
        .and_then(|(v, _)| v.as_array())
        .map(|items| {
            items
                .iter()
                .enumerate()
                .filter_map(|(i, v)| {
                    let name = v.get("runtime")?.as_str()?;
                    let runtime = <Runtime as crate::read::Choice>::ALL
                        .iter()
                        .find(|r| crate::read::Choice::name(**r) == name)?;
                    Some((i, *runtime))
                })
                .collect()
        })
        .unwrap_or_default();
    let inputs = read_elements(r, obj, "inputs", read_input);
    let outputs = read_elements(r, obj, "outputs", |r, v, p| read_output(r, v, p, task));
    let llm = opt(r, obj, "llm", read_llm);
    let golden = opt(r, obj, "golden", read_golden);
    Draft {
        schema: None,
        id,
        version,
        task,
        license,
        name,
        description,
        source,
        variants,
        variant_runtimes,
        inputs,
        outputs,
        llm,
        golden,
    }
}
