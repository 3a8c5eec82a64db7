//! MLC model package v1: the package sidecar (`mlc-model-manifest.json`), the compiled-program
//! contract, the weights manifest, and the rules that tie them together.

mod matching;
mod package;
mod program;
mod weights;

pub use matching::{check_resources, match_package_program};
pub use package::*;
pub use program::*;
pub use weights::*;

use std::path::Path;

use serde_json::Value;

use crate::bundle::resolve_inside;
use crate::problem::{Pointer, ProblemKind, Problems};
use crate::read::{Obj, Reader};

/// The only `schema_version` of both documents.
pub const SCHEMA_VERSION: u64 = 1;

/// Checks `schema` and `schema_version`.
fn read_header(r: &mut Reader, obj: &Obj<'_>, expected: &str) {
    if let Some((v, p)) = r.required(obj, "schema")
        && let Some(s) = r.string(v, &p)
        && s != expected
    {
        r.problem(
            &p,
            ProblemKind::Value,
            format!("must be `{expected}`, found `{s}`"),
        );
    }
    if let Some((v, p)) = r.required(obj, "schema_version")
        && let Some(n) = r.natural(v, &p)
        && n != SCHEMA_VERSION
    {
        let msg = format!("version {n} is not supported (this reader implements {SCHEMA_VERSION})");
        r.problem(&p, ProblemKind::Unsupported, msg);
    }
}

/// A name of a program, function or adapter: non-empty, no whitespace or control characters.
fn read_id_field(r: &mut Reader, v: &Value, at: &Pointer) -> Option<String> {
    let s = r.string(v, at)?;
    if s.is_empty() || s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        let msg = "must be a non-empty name without whitespace";
        r.problem(at, ProblemKind::Value, msg);
        return None;
    }
    Some(s.to_owned())
}

/// What the files of a package folder say: its parameters and the resources they need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageFiles {
    /// Every parameter, shapes resolved.
    pub params: Vec<ResolvedParam>,
    /// The canonical id of the parameters.
    pub parameter_schema_id: String,
    /// Largest parameter in bytes.
    pub max_storage_buffer_binding_size: u64,
    /// Total parameter bytes.
    pub estimated_device_memory_bytes: u64,
}

fn read_json_inside(
    dir: &Path,
    rel: &str,
    at: &Pointer,
    problems: &mut Problems,
) -> Option<(Value, std::path::PathBuf)> {
    let path = match resolve_inside(dir, rel) {
        Ok(p) => p,
        Err(msg) => {
            problems.push(at, ProblemKind::File, msg);
            return None;
        }
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            problems.push(
                at,
                ProblemKind::File,
                format!("`{rel}` cannot be read: {e}"),
            );
            return None;
        }
    };
    match crate::json::parse_strict(&text) {
        Ok(v) => Some((v, path)),
        Err(p) => {
            problems.push(at, ProblemKind::File, format!("`{rel}`: {p}"));
            None
        }
    }
}

/// Reads the chat config and weights manifest of the package folder `dir`, checks every data
/// shard is inside the folder with its recorded size, resolves the parameters and computes their
/// schema id and resources. `check_declared` compares the computed id with the package's.
pub fn check_package_files(
    dir: &Path,
    package: &ModelPackage,
    check_declared: bool,
) -> Result<PackageFiles, Problems> {
    let mut problems = Problems::default();
    let dir = match std::fs::canonicalize(dir) {
        Ok(d) => d,
        Err(e) => {
            problems.push(
                &Pointer::root(),
                ProblemKind::File,
                format!("{}: {e}", dir.display()),
            );
            return Err(problems);
        }
    };
    let root = Pointer::root();
    let config_at = root.key("chat_config");
    let weights_at = root.key("weights").key("manifest");
    let chat_config = read_json_inside(&dir, &package.chat_config, &config_at, &mut problems);
    if chat_config.as_ref().is_some_and(|(v, _)| !v.is_object()) {
        problems.push(
            &config_at,
            ProblemKind::File,
            "the chat config must be a JSON object",
        );
    }
    let weights = resolve_inside(&dir, &package.weights.manifest).and_then(|p| {
        std::fs::read_to_string(&p)
            .map_err(|e| e.to_string())
            .map(|t| (t, p))
    });
    let (text, weights_path) = match weights {
        Ok(x) => x,
        Err(msg) => {
            problems.push(&weights_at, ProblemKind::File, msg);
            return Err(problems);
        }
    };
    let manifest = match parse_weights_manifest(&text) {
        Ok(m) => m,
        Err(inner) => {
            for p in &inner {
                let msg = format!(
                    "`{}` {}: {}",
                    package.weights.manifest, p.pointer, p.message
                );
                problems.push(&weights_at, p.kind, msg);
            }
            return Err(problems);
        }
    };
    let shard_dir = weights_path.parent().unwrap_or(&dir).to_path_buf();
    for shard in &manifest.shards {
        match resolve_inside(&shard_dir, &shard.data_path) {
            Ok(p) if !p.starts_with(&dir) => {
                let msg = format!("shard `{}` leaves the package folder", shard.data_path);
                problems.push(&weights_at, ProblemKind::File, msg);
            }
            Ok(p) => match std::fs::metadata(&p) {
                Ok(m) if m.is_file() && m.len() == shard.nbytes => {}
                Ok(m) => {
                    let msg = format!(
                        "shard `{}` is {} bytes, the weights manifest says {}",
                        shard.data_path,
                        m.len(),
                        shard.nbytes
                    );
                    problems.push(&weights_at, ProblemKind::File, msg);
                }
                Err(e) => {
                    let msg = format!("shard `{}` cannot be read: {e}", shard.data_path);
                    problems.push(&weights_at, ProblemKind::File, msg);
                }
            },
            Err(msg) => problems.push(&weights_at, ProblemKind::File, format!("shard: {msg}")),
        }
    }
    let Some((chat_config, _)) = chat_config else {
        return Err(problems);
    };
    let params = match resolve_params(&manifest, &chat_config, &weights_at) {
        Ok(p) => p,
        Err(p) => {
            problems.extend(p);
            return Err(problems);
        }
    };
    let schema: Vec<crate::hash::ParamSchema> = params.iter().map(|p| p.schema.clone()).collect();
    let id = match crate::hash::parameter_schema_id(&schema) {
        Ok(id) => id,
        Err(e) => {
            problems.push(&weights_at, ProblemKind::Value, e.to_string());
            return Err(problems);
        }
    };
    if check_declared && id != package.weights.parameter_schema_id {
        let msg =
            format!("does not match the weights manifest: its parameters' canonical id is {id}");
        problems.push(
            &root.key("weights").key("parameter_schema_id"),
            ProblemKind::Mismatch,
            msg,
        );
    }
    let (max, total) = parameter_resources(&params);
    problems.into_result(PackageFiles {
        params,
        parameter_schema_id: id,
        max_storage_buffer_binding_size: max,
        estimated_device_memory_bytes: total,
    })
}
