//! A bare `.gguf` becomes a one-variant text-generation ModelPort bundle, shaped like the one
//! `modelport import-gguf FILE` (pip package `modelport-cli`) writes: variant `gguf-<quant>`,
//! file `gguf-<quant>/model.gguf` with its real size and SHA-256, `min_ram_mb` from the same
//! estimate, context 4096, template `from_gguf`, the default sampling settings.
//!
//! The file is parsed (header and tensor table, [`gpuport_gguf`]) before anything is stored,
//! and one without `general.architecture` or without tensors is refused. As `modelport`
//! does, the id and name come from `general.name` and the context is clamped to the trained
//! `<arch>.context_length`. Differences, by design: a file without `general.name` takes its
//! file stem (`modelport` names it `unknown`, so two such files would collide), and the
//! license is the caller's ([`GgufOptions::license`]).

use std::path::Path;

use gpuport_gguf::{Gguf, Metadata};
use serde_json::json;

use crate::error::{IoContext, Result, StoreError};
use crate::local::id_from_name;

/// Settings of the generated manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GgufOptions {
    /// SPDX license of the weights (ModelPort requires one).
    pub license: String,
    /// Context window to allocate.
    pub context_length: u64,
}

impl Default for GgufOptions {
    fn default() -> Self {
        GgufOptions {
            license: "LicenseRef-unknown".into(),
            context_length: 4096,
        }
    }
}

/// What the store takes from a GGUF header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GgufFacts {
    /// `general.architecture`.
    pub architecture: String,
    /// `general.name`, when present.
    pub name: Option<String>,
    /// `<arch>.context_length`, when present.
    pub trained_context: Option<u64>,
}

/// Parses the header and tensor table of the GGUF at `path` (memory-mapped: no tensor byte is
/// read) and refuses a file that is not a model.
pub fn read_facts(path: &Path) -> Result<GgufFacts> {
    check_magic(path)?;
    let invalid = |reason: String| StoreError::InvalidGguf {
        path: path.to_path_buf(),
        reason,
    };
    let file = Gguf::open(path).map_err(|e| match e {
        gpuport_gguf::GgufError::Io { source, .. } => StoreError::io(path, source),
        e => invalid(e.to_string()),
    })?;
    let architecture = file
        .str("general.architecture")
        .map_err(|e| invalid(e.to_string()))?
        .to_owned();
    if file.tensors.is_empty() {
        return Err(invalid("it holds no tensors".into()));
    }
    let name = file.str("general.name").ok().map(str::to_owned);
    let trained_context = file
        .value(&format!("{architecture}.context_length"))
        .and_then(|v| v.as_i128())
        .and_then(|v| u64::try_from(v).ok());
    Ok(GgufFacts {
        architecture,
        name,
        trained_context,
    })
}

/// Refuses a file that does not start with the `GGUF` magic.
pub fn check_magic(path: &Path) -> Result<()> {
    if gpuport_gguf::has_magic(path).at(path)? {
        Ok(())
    } else {
        Err(StoreError::NotGguf(path.to_path_buf()))
    }
}

/// The quantization a file name states, as `modelport`'s
/// `[-_.]((?:i?q\d\w*)|bf16|f16|f32)\.gguf$` (case-insensitive, leftmost match) finds it.
pub fn quant_of(file_name: &str) -> Option<String> {
    let lower = file_name.to_lowercase();
    let stem = lower.strip_suffix(".gguf")?;
    let word = |s: &str| s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    let is_quant = |s: &str| {
        let q = s.strip_prefix('i').unwrap_or(s);
        let quantized = q.strip_prefix('q').is_some_and(|rest| {
            rest.chars().next().is_some_and(|c| c.is_ascii_digit()) && word(rest)
        });
        quantized || matches!(s, "bf16" | "f16" | "f32")
    };
    stem.char_indices()
        .filter(|&(_, c)| matches!(c, '-' | '_' | '.'))
        .map(|(i, _)| &stem[i + 1..])
        .find(|rest| is_quant(rest))
        .map(str::to_owned)
}

/// `modelport`'s rough lower bound: weights ×1.1 + 256 MiB + 32 MiB per 1024 context
/// positions, rounded up to a multiple of 256 MiB.
pub fn estimate_min_ram_mb(size: u64, context: u64) -> u64 {
    let mib = size as f64 / 1_048_576.0 * 1.1 + 256.0 + context as f64 / 1024.0 * 32.0;
    ((mib / 256.0).ceil() as u64) * 256
}

/// The bundle path the GGUF gets: `gguf-<quant>/model.gguf`.
pub fn bundle_path(file_name: &str) -> String {
    let quant = quant_of(file_name).unwrap_or_else(|| "unknown".into());
    format!("gguf-{quant}/model.gguf")
}

/// A file name without its `.gguf` extension.
fn stem(file_name: &str) -> &str {
    file_name
        .strip_suffix(".gguf")
        .or_else(|| file_name.strip_suffix(".GGUF"))
        .unwrap_or(file_name)
}

/// The id a bare GGUF gets: `general.name` (else the file stem), by the ModelPort id rule,
/// without a `-gguf` tail.
pub fn default_id(file_name: &str, facts: &GgufFacts) -> String {
    let id = id_from_name(facts.name.as_deref().unwrap_or(stem(file_name)));
    id.strip_suffix("-gguf").map(str::to_owned).unwrap_or(id)
}

/// The context the manifest allocates: the requested one, clamped to the trained length.
pub fn context_length(options: &GgufOptions, facts: &GgufFacts) -> u64 {
    match facts.trained_context {
        Some(trained) if trained > 0 => options.context_length.min(trained),
        _ => options.context_length,
    }
}

/// The generated `modelport.json` (pretty JSON, trailing newline).
pub fn manifest(
    id: &str,
    file_name: &str,
    facts: &GgufFacts,
    file: (u64, &str),
    options: &GgufOptions,
) -> Vec<u8> {
    let (size, sha256) = file;
    let quant = quant_of(file_name).unwrap_or_else(|| "unknown".into());
    let context = context_length(options, facts);
    let doc = json!({
        "schema": "modelport/0.1",
        "id": id,
        "version": "1.0.0",
        "task": "text-generation",
        "license": options.license,
        "name": facts.name.as_deref().unwrap_or(stem(file_name)),
        "source": format!("file:{file_name}"),
        "variants": [{
            "id": format!("gguf-{quant}"),
            "runtime": "llamacpp",
            "precision": quant,
            "file": {"path": bundle_path(file_name), "size": size, "sha256": sha256},
            "extra_files": [],
            "min_ram_mb": estimate_min_ram_mb(size, context),
        }],
        "inputs": [],
        "outputs": [],
        "llm": {
            "context_length": context,
            "chat_template": "from_gguf",
            "defaults": {"temperature": 0.7, "top_p": 0.9, "max_tokens": 512},
        },
    });
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    text.push('\n');
    text.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpuport_manifest_core::modelport::parse_manifest;

    #[test]
    fn quantization_is_read_from_the_file_name_like_modelport() {
        assert_eq!(
            quant_of("SmolLM2-135M-Instruct.Q4_1.gguf").as_deref(),
            Some("q4_1")
        );
        assert_eq!(
            quant_of("gemma-3-270m-q4_k_m.gguf").as_deref(),
            Some("q4_k_m")
        );
        assert_eq!(
            quant_of("qwen2.5-0.5b-instruct-q4_k_m.gguf").as_deref(),
            Some("q4_k_m")
        );
        assert_eq!(quant_of("m-IQ3_XS.gguf").as_deref(), Some("iq3_xs"));
        assert_eq!(quant_of("m.BF16.gguf").as_deref(), Some("bf16"));
        assert_eq!(quant_of("model.gguf"), None);
        assert_eq!(quant_of("model-q.gguf"), None);
    }

    #[test]
    fn min_ram_matches_modelports_estimate() {
        // `modelport import-gguf` wrote 512 for the 98,362,432-byte SmolLM2 at context 4096.
        assert_eq!(estimate_min_ram_mb(98_362_432, 4096), 512);
        assert_eq!(estimate_min_ram_mb(124, 4096), 512);
        assert_eq!(estimate_min_ram_mb(253_113_024, 4096), 768);
    }

    fn facts(name: Option<&str>, trained: Option<u64>) -> GgufFacts {
        GgufFacts {
            architecture: "llama".into(),
            name: name.map(str::to_owned),
            trained_context: trained,
        }
    }

    #[test]
    fn the_generated_manifest_is_a_valid_modelport_bundle() {
        let digest = "b".repeat(64);
        let facts = facts(Some("Tiny Llama"), Some(2048));
        let bytes = manifest(
            "m",
            "x.Q8_0.gguf",
            &facts,
            (1000, &digest),
            &GgufOptions::default(),
        );
        let parsed = parse_manifest(std::str::from_utf8(&bytes).unwrap())
            .unwrap()
            .document;
        assert_eq!(parsed.variants[0].file.path(), Some("gguf-q8_0/model.gguf"));
        assert_eq!(parsed.variants[0].file.sha256, digest);
        assert_eq!(parsed.name.as_deref(), Some("Tiny Llama"));
        // Clamped to the trained length, as `modelport import-gguf` does.
        assert_eq!(parsed.llm.unwrap().context_length, 2048);
    }

    #[test]
    fn ids_come_from_general_name_else_the_file_stem() {
        let named = facts(Some("SmolLM2 135M Instruct"), None);
        assert_eq!(default_id("x.gguf", &named), "smollm2-135m-instruct");
        let unnamed = facts(None, None);
        assert_eq!(default_id("Tiny-Q8_0-GGUF.gguf", &unnamed), "tiny-q8_0");
        assert_eq!(context_length(&GgufOptions::default(), &unnamed), 4096);
    }
}
