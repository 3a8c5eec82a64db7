//! `mlc-model-manifest.json` (schema `mlc.model-package`, version 1): the package sidecar that ties
//! converted weights, a compiled library and a frontend together. Unknown fields are rejected at
//! every level, as the spec says.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::{read_header, read_id_field};
use crate::fileref::read_relative_path;
use crate::modelport::Parsed;
use crate::problem::{Pointer, ProblemKind, Problems};
use crate::read::{Reader, UnknownFields, choice_enum};

/// The package document's `schema` value.
pub const PACKAGE_SCHEMA: &str = "mlc.model-package";
/// The file name of the package sidecar in a converted model folder.
pub const PACKAGE_FILE_NAME: &str = "mlc-model-manifest.json";

/// A valid package document.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelPackage {
    /// Path of `mlc-chat-config.json`, relative to the package folder.
    pub chat_config: String,
    /// `sha256:` id of `tasks` (see [`crate::hash::interface_id`]).
    pub interface_id: String,
    /// The weights manifest and its parameter schema id.
    pub weights: Weights,
    /// Task name (e.g. `chat.completions`) → task.
    pub tasks: BTreeMap<String, PackageTask>,
    /// The `tasks` object exactly as written: `interface_id` hashes this.
    #[serde(skip)]
    pub tasks_json: Value,
}

/// `weights`: where the parameters are described.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Weights {
    /// Path of the weights manifest (`tensor-cache.json`), relative to the package folder.
    pub manifest: String,
    /// `sha256:` id of the parameter names, shapes and dtypes.
    pub parameter_schema_id: String,
}

/// One task the package serves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PackageTask {
    /// Name of the program (in the compiled-program document) that runs it.
    pub executor: String,
    /// Input name → how the frontend turns raw input into model input.
    pub inputs: BTreeMap<String, PackageInput>,
    /// What the task produces (v1: text).
    pub output: TaskOutput,
}

choice_enum! {
    /// What a task produces.
    pub enum TaskOutput {
        /// Generated text.
        Text = "text",
    }
}

/// One input of a task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PackageInput {
    /// The frontend processor.
    pub processor: Processor,
    /// Name of the compiled adapter that embeds the processed input (media inputs only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adapter: Option<String>,
    /// Token ids around the adapter's embeddings (media inputs only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<Prompt>,
}

/// How a frontend decodes one input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Processor {
    /// Text through the model's tokenizer (written as the string `"tokenizer"`).
    Tokenizer,
    /// Decoded PCM audio.
    AudioDecode(AudioDecode),
    /// Decoded, resized RGB image.
    ImageDecode(ImageDecode),
}

choice_enum! {
    /// PCM sample format of `audio_decode`.
    pub enum AudioFormat {
        /// 32-bit float samples.
        PcmF32 = "pcm_f32",
    }
}

/// `audio_decode` parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AudioDecode {
    /// Sample format.
    pub format: AudioFormat,
    /// Sample rate the adapter expects.
    pub sample_rate_hz: u64,
    /// Channel count (after down-mixing).
    pub channels: u64,
    /// Fewest samples the adapter accepts.
    pub min_samples: u64,
    /// Most samples the adapter accepts.
    pub max_samples: u64,
}

choice_enum! {
    /// Pixel format of `image_decode`.
    pub enum ImageFormat {
        /// 8-bit RGB.
        RgbU8 = "rgb_u8",
    }
}

choice_enum! {
    /// Tensor layout of `image_decode`.
    pub enum ImageLayout {
        /// `[1, height, width, 3]`.
        Nhwc = "nhwc",
    }
}

choice_enum! {
    /// Resize policy of `image_decode`.
    pub enum ResizeMode {
        /// Scale each axis to the target, ignoring the aspect ratio.
        Stretch = "stretch",
        /// Scale uniformly to cover the target, keep the centred region.
        CenterCrop = "center_crop",
    }
}

/// `image_decode` parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImageDecode {
    /// Pixel format.
    pub format: ImageFormat,
    /// Tensor layout.
    pub layout: ImageLayout,
    /// Resize policy and target size.
    pub resize: ImageResize,
    /// Rows the adapter returns.
    pub num_embeddings: u64,
}

/// `image_decode.resize`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImageResize {
    /// Policy.
    pub mode: ResizeMode,
    /// Target height.
    pub height: u64,
    /// Target width.
    pub width: u64,
}

/// Token ids placed around an adapter's embeddings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Prompt {
    /// Tokens before the placeholder span.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub prefix_token_ids: Vec<u32>,
    /// The token id that marks the adapter's span.
    pub placeholder_token_id: u32,
    /// Tokens after the span.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub suffix_token_ids: Vec<u32>,
}

fn token_id(r: &mut Reader, v: &Value, at: &Pointer) -> Option<u32> {
    let n = r.natural(v, at)?;
    match u32::try_from(n) {
        Ok(id) => Some(id),
        Err(_) => {
            r.problem(
                at,
                ProblemKind::Value,
                format!("token id {n} does not fit in 32 bits"),
            );
            None
        }
    }
}

fn read_prompt(r: &mut Reader, v: &Value, at: &Pointer) -> Option<Prompt> {
    let obj = r.object(
        v,
        at,
        &[
            "prefix_token_ids",
            "placeholder_token_id",
            "suffix_token_ids",
        ],
    )?;
    let ids = |r: &mut Reader, key: &str| match Reader::optional(&obj, key) {
        None => Some(Vec::new()),
        Some((v, p)) => r.list(v, &p, token_id),
    };
    let prefix = ids(r, "prefix_token_ids");
    let suffix = ids(r, "suffix_token_ids");
    let placeholder = r
        .required(&obj, "placeholder_token_id")
        .and_then(|(v, p)| token_id(r, v, &p));
    Some(Prompt {
        prefix_token_ids: prefix?,
        placeholder_token_id: placeholder?,
        suffix_token_ids: suffix?,
    })
}

fn req_positive(r: &mut Reader, obj: &crate::read::Obj<'_>, key: &str) -> Option<u64> {
    r.required(obj, key).and_then(|(v, p)| r.positive(v, &p))
}

fn read_processor(r: &mut Reader, v: &Value, at: &Pointer) -> Option<Processor> {
    let kind = match v {
        Value::String(s) => s.as_str(),
        Value::Object(m) => match m.get("kind") {
            Some(Value::String(s)) => s.as_str(),
            Some(other) => {
                r.string(other, &at.key("kind"));
                return None;
            }
            None => {
                r.problem(
                    &at.key("kind"),
                    ProblemKind::Missing,
                    "missing required field `kind`",
                );
                return None;
            }
        },
        other => {
            let found = crate::read::type_name(other);
            let msg = format!("must be \"tokenizer\" or a processor object, found {found}");
            r.problem(at, ProblemKind::Type, msg);
            return None;
        }
    };
    let kind_at = if v.is_string() {
        at.clone()
    } else {
        at.key("kind")
    };
    match (kind, v.is_string()) {
        ("tokenizer", true) => Some(Processor::Tokenizer),
        ("tokenizer", false) => r.object(v, at, &["kind"]).map(|_| Processor::Tokenizer),
        ("audio_decode", false) => {
            let fields = [
                "kind",
                "format",
                "sample_rate_hz",
                "channels",
                "min_samples",
                "max_samples",
            ];
            let obj = r.object(v, at, &fields)?;
            let format = r
                .required(&obj, "format")
                .and_then(|(v, p)| r.choice(v, &p));
            let rate = req_positive(r, &obj, "sample_rate_hz");
            let channels = req_positive(r, &obj, "channels");
            let min = req_positive(r, &obj, "min_samples");
            let max = req_positive(r, &obj, "max_samples");
            if let (Some(lo), Some(hi)) = (min, max)
                && lo > hi
            {
                let msg = format!("must be at least `min_samples` ({lo}), found {hi}");
                r.problem(&at.key("max_samples"), ProblemKind::Conflict, msg);
                return None;
            }
            Some(Processor::AudioDecode(AudioDecode {
                format: format?,
                sample_rate_hz: rate?,
                channels: channels?,
                min_samples: min?,
                max_samples: max?,
            }))
        }
        ("image_decode", false) => {
            let fields = ["kind", "format", "layout", "resize", "num_embeddings"];
            let obj = r.object(v, at, &fields)?;
            let format = r
                .required(&obj, "format")
                .and_then(|(v, p)| r.choice(v, &p));
            let layout = r
                .required(&obj, "layout")
                .and_then(|(v, p)| r.choice(v, &p));
            let resize = r.required(&obj, "resize").and_then(|(v, p)| {
                let obj = r.object(v, &p, &["mode", "height", "width"])?;
                let mode = r.required(&obj, "mode").and_then(|(v, p)| r.choice(v, &p));
                let height = req_positive(r, &obj, "height");
                let width = req_positive(r, &obj, "width");
                Some(ImageResize {
                    mode: mode?,
                    height: height?,
                    width: width?,
                })
            });
            let num_embeddings = req_positive(r, &obj, "num_embeddings");
            Some(Processor::ImageDecode(ImageDecode {
                format: format?,
                layout: layout?,
                resize: resize?,
                num_embeddings: num_embeddings?,
            }))
        }
        ("audio_decode" | "image_decode", true) => {
            let msg =
                format!("processor `{kind}` takes parameters: write it as an object with `kind`");
            r.problem(at, ProblemKind::Type, msg);
            None
        }
        (other, _) => {
            let msg = format!(
                "unsupported processor kind `{other}`: this reader knows `tokenizer`, `audio_decode` and `image_decode`, and rejects a package whose input it cannot honour"
            );
            r.problem(&kind_at, ProblemKind::Unsupported, msg);
            None
        }
    }
}

fn read_input(r: &mut Reader, v: &Value, at: &Pointer) -> Option<PackageInput> {
    let obj = r.object(v, at, &["processor", "adapter", "prompt"])?;
    let processor = r
        .required(&obj, "processor")
        .and_then(|(v, p)| read_processor(r, v, &p));
    let adapter = match Reader::optional(&obj, "adapter") {
        None => Some(None),
        Some((v, p)) => read_id_field(r, v, &p).map(Some),
    };
    let prompt = match Reader::optional(&obj, "prompt") {
        None => Some(None),
        Some((v, p)) => read_prompt(r, v, &p).map(Some),
    };
    let (processor, adapter, prompt) = (processor?, adapter?, prompt?);
    let media = !matches!(processor, Processor::Tokenizer);
    for (key, present) in [("adapter", adapter.is_some()), ("prompt", prompt.is_some())] {
        match (media, present) {
            (true, false) => {
                let msg = format!("a media input needs `{key}`");
                r.problem(&at.key(key), ProblemKind::Missing, msg);
            }
            (false, true) => {
                let msg = format!("a `tokenizer` input takes no `{key}`");
                r.problem(&at.key(key), ProblemKind::Conflict, msg);
            }
            _ => {}
        }
    }
    Some(PackageInput {
        processor,
        adapter,
        prompt,
    })
}

fn read_task(r: &mut Reader, v: &Value, at: &Pointer) -> Option<PackageTask> {
    let obj = r.object(v, at, &["executor", "inputs", "output"])?;
    let executor = r
        .required(&obj, "executor")
        .and_then(|(v, p)| read_id_field(r, v, &p));
    let inputs = r.required(&obj, "inputs").and_then(|(v, p)| {
        let out = r.entries(v, &p, None, |r, _, v, p| read_input(r, v, p))?;
        if !out.values().any(|i| i.processor == Processor::Tokenizer) {
            let msg = "needs a text input (`\"processor\": \"tokenizer\"`): speech-only and image-only pipelines are outside v1";
            r.problem(&p, ProblemKind::Missing, msg);
            return None;
        }
        Some(out)
    });
    let output = r
        .required(&obj, "output")
        .and_then(|(v, p)| r.choice(v, &p));
    Some(PackageTask {
        executor: executor?,
        inputs: inputs?,
        output: output?,
    })
}

pub(crate) fn read_canonical_id(r: &mut Reader, v: &Value, at: &Pointer) -> Option<String> {
    let s = r.string(v, at)?;
    if crate::hash::is_canonical_id(s) {
        Some(s.to_owned())
    } else {
        r.problem(
            at,
            ProblemKind::Value,
            "must be `sha256:` followed by 64 lowercase hex digits",
        );
        None
    }
}

/// Parses and validates a package document from JSON text.
pub fn parse_package(text: &str) -> Result<Parsed<ModelPackage>, Problems> {
    read_package(&crate::json::parse_strict(text)?)
}

/// Validates a parsed JSON value as a package document, including that `interface_id` is the
/// canonical id of `tasks`.
pub fn read_package(value: &Value) -> Result<Parsed<ModelPackage>, Problems> {
    let mut r = Reader::new(UnknownFields::Reject);
    let root = Pointer::root();
    let fields = [
        "schema",
        "schema_version",
        "chat_config",
        "interface_id",
        "weights",
        "tasks",
    ];
    let Some(obj) = r.object(value, &root, &fields) else {
        return Err(r.problems);
    };
    read_header(&mut r, &obj, PACKAGE_SCHEMA);
    let chat_config = r
        .required(&obj, "chat_config")
        .and_then(|(v, p)| read_relative_path(&mut r, v, &p));
    let interface_id = r
        .required(&obj, "interface_id")
        .and_then(|(v, p)| read_canonical_id(&mut r, v, &p));
    let weights = r.required(&obj, "weights").and_then(|(v, p)| {
        let obj = r.object(v, &p, &["manifest", "parameter_schema_id"])?;
        let manifest = r
            .required(&obj, "manifest")
            .and_then(|(v, p)| read_relative_path(&mut r, v, &p));
        let id = r
            .required(&obj, "parameter_schema_id")
            .and_then(|(v, p)| read_canonical_id(&mut r, v, &p));
        Some(Weights {
            manifest: manifest?,
            parameter_schema_id: id?,
        })
    });
    let tasks_json = obj.map.get("tasks").cloned();
    let tasks = r.required(&obj, "tasks").and_then(|(v, p)| {
        let empty = Some("must declare at least one task");
        r.entries(v, &p, empty, |r, _, v, p| read_task(r, v, p))
    });
    if let (Some(declared), Some(tasks)) = (&interface_id, &tasks_json) {
        match crate::hash::interface_id(tasks) {
            Ok(computed) if computed != *declared => {
                let msg = format!("does not match the tasks: their canonical id is {computed}");
                r.problem(&root.key("interface_id"), ProblemKind::Mismatch, msg);
            }
            Ok(_) => {}
            Err(e) => r.problem(&root.key("tasks"), ProblemKind::Value, e.to_string()),
        }
    }
    let package = match (chat_config, interface_id, weights, tasks, tasks_json) {
        (Some(chat_config), Some(interface_id), Some(weights), Some(tasks), Some(tasks_json)) => {
            ModelPackage {
                chat_config,
                interface_id,
                weights,
                tasks,
                tasks_json,
            }
        }
        _ => return Err(r.problems),
    };
    r.problems.into_result(Parsed {
        document: package,
        ignored_fields: Vec::new(),
    })
}
