//! `gpuport inspect MODEL.gguf [--program]`: a GGUF model as the LLM executor sees it, and
//! (`--program`) the `mlc.compiled-program` document the executor satisfies for it, which
//! `gpuport_llm::program::document` builds.

use std::collections::BTreeMap;
use std::path::Path;

use gpuport_llm::{ModelConfig, program, weights};
use gpuport_runtime::gguf::{Gguf, Metadata};

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
        match program::document(&g, &cfg) {
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
