//! `gpuport inspect MODEL.gguf [--program]`: a GGUF model as the LLM executor sees it, and the
//! `mlc.compiled-program` document the executor satisfies for it (mlc-model-package-v1):
//!
//! - `interface_id`: the canonical id of the tasks the file implies — `chat.completions` when
//!   it carries a chat template, else `text.completions` — each run by the `generation`
//!   executor, text in (the tokenizer) and text out;
//! - `parameter_schema_id`: the canonical id of the parameters the forward pass reads, each
//!   `{name, shape (outermost first), dtype}` with the GGML type name as the dtype (a GGUF
//!   stores blocks, not MLC's element dtypes; docs/spec/hashes.md);
//! - `programs.generation.exports`: the roles of `gpuport_llm::program`;
//! - `resources`: from the parameter shapes — the largest parameter and their total, the
//!   figures `gpuport can-run` reports as `largest_tensor_bytes` and `weight_bytes`; no
//!   WebGPU feature is required (the kernels read f16 through `unpack2x16float`, subgroups
//!   are optional).

use std::collections::BTreeMap;
use std::path::Path;

use gpuport_llm::{ModelConfig, program, weights};
use gpuport_manifest_core::hash::{ParamSchema, interface_id, parameter_schema_id};
use gpuport_manifest_core::mlc::PROGRAM_SCHEMA;
use gpuport_runtime::gguf::{Gguf, Metadata, TensorInfo};
use serde_json::{Value, json};

use crate::{EXIT_INVALID, EXIT_OK};

/// Whether `path` names a GGUF file (by its magic, whatever its extension).
pub fn is_gguf(path: &Path) -> bool {
    gpuport_runtime::gguf::has_magic(path).unwrap_or(false)
}

/// Runs `gpuport inspect` on a GGUF file.
pub fn run(path: &Path, as_program: bool) -> u8 {
    let opened = Gguf::open(path)
        .map_err(|e| (e.code(), e.to_string()))
        .and_then(|g| {
            let cfg = ModelConfig::from_gguf(&g).map_err(|e| (e.code(), e.to_string()))?;
            Ok((g, cfg))
        });
    let (g, cfg) = match opened {
        Ok(v) => v,
        Err((code, e)) => {
            eprintln!("error [{code}]: {}: {e}", path.display());
            return EXIT_INVALID;
        }
    };
    if as_program {
        match program_document(&g, &cfg) {
            Ok(doc) => {
                println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
                EXIT_OK
            }
            Err(e) => {
                eprintln!("error: {}: {e}", path.display());
                EXIT_INVALID
            }
        }
    } else {
        summary(path, &g, &cfg);
        EXIT_OK
    }
}

/// The tasks object a GGUF implies (what `interface_id` hashes).
pub fn tasks(g: &Gguf) -> Value {
    let task = if g.value("tokenizer.chat_template").is_some() {
        "chat.completions"
    } else {
        "text.completions"
    };
    json!({
        task: {
            "executor": "generation",
            "inputs": {"text": {"processor": "tokenizer"}},
            "output": "text"
        }
    })
}

fn params(parameters: &[&TensorInfo]) -> Vec<ParamSchema> {
    parameters
        .iter()
        .map(|t| ParamSchema {
            name: t.name.clone(),
            shape: t.dims.iter().rev().copied().collect(),
            dtype: t.type_name(),
        })
        .collect()
}

/// The `mlc.compiled-program` document this executor satisfies for `g`.
pub fn program_document(g: &Gguf, cfg: &ModelConfig) -> Result<Value, String> {
    let parameters = weights::parameters(cfg, g);
    let interface = interface_id(&tasks(g)).map_err(|e| e.to_string())?;
    let schema = parameter_schema_id(&params(&parameters)).map_err(|e| e.to_string())?;
    let exports: BTreeMap<&str, &str> = program::EXPORTS.into_iter().collect();
    let largest = parameters.iter().map(|t| t.bytes).max().unwrap_or(0);
    let total: u64 = parameters.iter().map(|t| t.bytes).sum();
    Ok(json!({
        "schema": PROGRAM_SCHEMA,
        "schema_version": 1,
        "interface_id": interface,
        "parameter_schema_id": schema,
        "programs": {
            "generation": {"kind": "token_generation", "exports": exports}
        },
        "resources": {
            "required_features": [],
            "max_storage_buffer_binding_size": largest,
            "estimated_device_memory_bytes": total
        }
    }))
}

fn summary(path: &Path, g: &Gguf, cfg: &ModelConfig) {
    let parameters = weights::parameters(cfg, g);
    let mut by_type: BTreeMap<String, (usize, u64)> = BTreeMap::new();
    for t in &parameters {
        let e = by_type.entry(t.type_name()).or_default();
        e.0 += 1;
        e.1 += t.bytes;
    }
    let total: u64 = parameters.iter().map(|t| t.bytes).sum();
    let largest = parameters.iter().max_by_key(|t| t.bytes);
    println!("model         {}", path.display());
    println!("architecture  {}", cfg.arch.name());
    println!(
        "shape         {} layers, hidden {}, feed-forward {}, {} query / {} KV heads of {}",
        cfg.layers, cfg.embd, cfg.ff, cfg.heads, cfg.kv_heads, cfg.head_dim
    );
    println!(
        "vocabulary    {} tokens; trained context {}",
        cfg.vocab, cfg.context
    );
    let template = g.value("tokenizer.chat_template").is_some();
    println!(
        "chat template {}",
        if template {
            "yes (gpuport chat works)"
        } else {
            "no (gpuport generate --raw)"
        }
    );
    println!(
        "parameters    {} tensors, {}",
        parameters.len(),
        crate::output::bytes(total)
    );
    for (ty, (n, b)) in &by_type {
        println!("  {ty:<10}  {n:>4} tensors  {}", crate::output::bytes(*b));
    }
    if let Some(t) = largest {
        println!(
            "largest       {} ({})",
            t.name,
            crate::output::bytes(t.bytes)
        );
    }
    let roles: Vec<&str> = program::EXPORTS.iter().map(|(role, _)| *role).collect();
    println!("MLC roles     {}", roles.join(", "));
}
