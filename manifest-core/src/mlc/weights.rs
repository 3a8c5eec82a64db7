//! MLC's weights manifest (`tensor-cache.json`, formerly `ndarray-cache.json`): shards of raw
//! parameter bytes and, per parameter, its name, shape, dtype, storage format, byte offset and
//! size. This is MLC's own format, not ours, so fields this reader does not use are ignored; the
//! fields it uses are type-checked.
//!
//! ```json
//! {"metadata": {...}, "records": [{"dataPath": "params_shard_0.bin", "format": "raw-shard",
//!   "nbytes": 32, "records": [{"name": "w", "shape": [2, 4], "dtype": "float32",
//!   "format": "raw", "nbytes": 32, "byteOffset": 0}]}]}
//! ```

use serde_json::Value;

use crate::fileref::read_relative_path;
use crate::hash::ParamSchema;
use crate::problem::{Pointer, ProblemKind, Problems};
use crate::read::{Reader, UnknownFields};

/// A parsed weights manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WeightsManifest {
    /// Data files, in order.
    pub shards: Vec<Shard>,
    /// Every parameter of every shard, in order.
    pub params: Vec<WeightParam>,
}

/// One data file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shard {
    /// Path relative to the weights manifest's folder.
    pub data_path: String,
    /// Size of the file in bytes.
    pub nbytes: u64,
}

/// A dimension: a number, or a name resolved from the model config (e.g. `vocab_size`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShapeDim {
    /// A fixed size.
    Fixed(u64),
    /// A named size, looked up in `mlc-chat-config.json`.
    Named(String),
}

/// One parameter record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WeightParam {
    /// Parameter name.
    pub name: String,
    /// Dimensions as written.
    pub shape: Vec<ShapeDim>,
    /// Element type on the device (e.g. `uint32`, `float16`).
    pub dtype: String,
    /// Storage format (`raw`, or `f32-to-bf16` for float32 stored as bfloat16).
    pub format: String,
    /// Stored bytes, if recorded.
    pub nbytes: Option<u64>,
}

/// A parameter with its shape resolved and its device size computed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedParam {
    /// Name, resolved shape, dtype: what the parameter schema hashes.
    pub schema: ParamSchema,
    /// Bytes on the device: elements × dtype size.
    pub bytes: u64,
}

/// Bytes per element of a TVM dtype name, `None` if unknown.
pub fn dtype_size(dtype: &str) -> Option<u64> {
    Some(match dtype {
        "float64" | "int64" | "uint64" => 8,
        "float32" | "int32" | "uint32" => 4,
        "float16" | "bfloat16" | "int16" | "uint16" => 2,
        "int8" | "uint8" | "bool" | "float8_e4m3fn" | "float8_e5m2" | "e4m3_float8"
        | "e5m2_float8" => 1,
        _ => return None,
    })
}

fn read_dim(r: &mut Reader, v: &Value, at: &Pointer) -> Option<ShapeDim> {
    match v {
        Value::String(s) if !s.is_empty() => Some(ShapeDim::Named(s.clone())),
        _ => r.natural(v, at).map(ShapeDim::Fixed),
    }
}

fn read_param(r: &mut Reader, v: &Value, at: &Pointer) -> Option<WeightParam> {
    let fields = ["name", "shape", "dtype", "format", "nbytes", "byteOffset"];
    let obj = r.object(v, at, &fields)?;
    let name = r
        .required(&obj, "name")
        .and_then(|(v, p)| r.string(v, &p).map(str::to_owned));
    let shape = r
        .required(&obj, "shape")
        .and_then(|(v, p)| r.list(v, &p, read_dim));
    let dtype = r.required(&obj, "dtype").and_then(|(v, p)| {
        let s = r.string(v, &p)?;
        if dtype_size(s).is_none() {
            r.problem(&p, ProblemKind::Value, format!("unknown dtype `{s}`"));
            return None;
        }
        Some(s.to_owned())
    });
    let format = match Reader::optional(&obj, "format") {
        None => Some("raw".to_owned()),
        Some((v, p)) => r.string(v, &p).map(str::to_owned),
    };
    let nbytes = match Reader::optional(&obj, "nbytes") {
        None => Some(None),
        Some((v, p)) => r.natural(v, &p).map(Some),
    };
    Some(WeightParam {
        name: name?,
        shape: shape?,
        dtype: dtype?,
        format: format?,
        nbytes: nbytes?,
    })
}

/// Parses a weights manifest. Problems carry pointers into the weights manifest itself.
pub fn parse_weights_manifest(text: &str) -> Result<WeightsManifest, Problems> {
    let value = crate::json::parse_strict(text)?;
    // MLC's format: members this reader does not use (metadata, md5sum, ...) are allowed.
    let mut r = Reader::new(UnknownFields::Ignore);
    let root = Pointer::root();
    let mut shards = Vec::new();
    let mut params = Vec::new();
    if let Some(obj) = r.object(&value, &root, &["records"])
        && let Some((v, p)) = r.required(&obj, "records")
        && let Some(files) = r.array(v, &p)
    {
        for (i, file) in files.iter().enumerate() {
            let at = p.index(i);
            let Some(f) = r.object(file, &at, &["dataPath", "nbytes", "records"]) else {
                continue;
            };
            let data_path = r
                .required(&f, "dataPath")
                .and_then(|(v, p)| read_relative_path(&mut r, v, &p));
            let nbytes = r.required(&f, "nbytes").and_then(|(v, p)| r.natural(v, &p));
            if let (Some(data_path), Some(nbytes)) = (data_path, nbytes) {
                shards.push(Shard { data_path, nbytes });
            }
            if let Some((v, p)) = r.required(&f, "records") {
                params.extend(r.list(v, &p, read_param).unwrap_or_default());
            }
        }
    }
    r.problems.into_result(WeightsManifest { shards, params })
}

/// Looks a named dimension up in the chat config: `model_config.<name>` first, then `<name>`.
fn lookup_dim(chat_config: &Value, name: &str) -> Option<u64> {
    chat_config
        .get("model_config")
        .and_then(|m| m.get(name))
        .or_else(|| chat_config.get(name))
        .and_then(Value::as_u64)
}

/// Resolves every parameter's shape and computes its device size. Problems are reported at
/// `at` (the package's `weights/manifest`), naming the parameter.
pub fn resolve_params(
    manifest: &WeightsManifest,
    chat_config: &Value,
    at: &Pointer,
) -> Result<Vec<ResolvedParam>, Problems> {
    let mut problems = Problems::default();
    let mut out = Vec::with_capacity(manifest.params.len());
    let mut names = std::collections::HashSet::new();
    for p in &manifest.params {
        if !names.insert(p.name.as_str()) {
            let msg = format!("parameter `{}` is listed twice", p.name);
            problems.push(at, ProblemKind::Conflict, msg);
            continue;
        }
        let mut shape = Vec::with_capacity(p.shape.len());
        for d in &p.shape {
            match d {
                ShapeDim::Fixed(n) => shape.push(*n),
                ShapeDim::Named(name) => match lookup_dim(chat_config, name) {
                    Some(n) => shape.push(n),
                    None => {
                        let msg = format!(
                            "parameter `{}`: dimension `{name}` is not a number in the chat config's `model_config` or top level",
                            p.name
                        );
                        problems.push(at, ProblemKind::Missing, msg);
                    }
                },
            }
        }
        if shape.len() != p.shape.len() {
            continue;
        }
        let size = dtype_size(&p.dtype).unwrap_or(0);
        let bytes = shape.iter().try_fold(size, |acc, d| acc.checked_mul(*d));
        let Some(bytes) = bytes else {
            problems.push(
                at,
                ProblemKind::Value,
                format!("parameter `{}` is too large", p.name),
            );
            continue;
        };
        if let (Some(stored), "raw") = (p.nbytes, p.format.as_str())
            && stored != bytes
        {
            let msg = format!(
                "parameter `{}` records {stored} bytes but its shape and dtype give {bytes}",
                p.name
            );
            problems.push(at, ProblemKind::Conflict, msg);
        }
        out.push(ResolvedParam {
            schema: ParamSchema {
                name: p.name.clone(),
                shape,
                dtype: p.dtype.clone(),
            },
            bytes,
        });
    }
    problems.into_result(out)
}

/// `(max_storage_buffer_binding_size, estimated_device_memory_bytes)`: the largest parameter and
/// the total, in bytes.
pub fn parameter_resources(params: &[ResolvedParam]) -> (u64, u64) {
    let max = params.iter().map(|p| p.bytes).max().unwrap_or(0);
    let total = params.iter().map(|p| p.bytes).sum();
    (max, total)
}
