//! A bare `.gguf` becomes a one-variant text-generation ModelPort bundle, shaped like the one
//! `modelport import-gguf FILE` (pip package `modelport-cli`) writes: variant `gguf-<quant>`,
//! file `gguf-<quant>/model.gguf` with its real size and SHA-256, `min_ram_mb` from the same
//! estimate, context 4096, template `from_gguf`, the default sampling settings.
//!
//! Differences, by design: the GGUF header is not parsed here (the store sits below the
//! runtime), so the id and name come from the file name rather than `general.name`, the
//! context is not clamped to the trained length, and the license is the caller's
//! ([`GgufOptions::license`]).

use std::fs::File;
use std::io::Read;
use std::path::Path;

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

/// Refuses a file that does not start with the `GGUF` magic.
pub fn check_magic(path: &Path) -> Result<()> {
    let mut magic = [0u8; 4];
    let mut file = File::open(path).at(path)?;
    match file.read_exact(&mut magic) {
        Ok(()) if &magic == b"GGUF" => Ok(()),
        Ok(()) => Err(StoreError::NotGguf(path.to_path_buf())),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            Err(StoreError::NotGguf(path.to_path_buf()))
        }
        Err(e) => Err(StoreError::io(path, e)),
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

/// The id a bare GGUF gets: its file stem, by the ModelPort id rule, without a `-gguf` tail.
pub fn default_id(file_name: &str) -> String {
    let stem = file_name
        .strip_suffix(".gguf")
        .or_else(|| file_name.strip_suffix(".GGUF"))
        .unwrap_or(file_name);
    let id = id_from_name(stem);
    id.strip_suffix("-gguf").map(str::to_owned).unwrap_or(id)
}

/// The generated `modelport.json` (pretty JSON, trailing newline).
pub fn manifest(
    id: &str,
    file_name: &str,
    size: u64,
    sha256: &str,
    options: &GgufOptions,
) -> Vec<u8> {
    let quant = quant_of(file_name).unwrap_or_else(|| "unknown".into());
    let stem = file_name.strip_suffix(".gguf").unwrap_or(file_name);
    let doc = json!({
        "schema": "modelport/0.1",
        "id": id,
        "version": "1.0.0",
        "task": "text-generation",
        "license": options.license,
        "name": stem,
        "source": format!("file:{file_name}"),
        "variants": [{
            "id": format!("gguf-{quant}"),
            "runtime": "llamacpp",
            "precision": quant,
            "file": {"path": bundle_path(file_name), "size": size, "sha256": sha256},
            "extra_files": [],
            "min_ram_mb": estimate_min_ram_mb(size, options.context_length),
        }],
        "inputs": [],
        "outputs": [],
        "llm": {
            "context_length": options.context_length,
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

    #[test]
    fn the_generated_manifest_is_a_valid_modelport_bundle() {
        let digest = "b".repeat(64);
        let bytes = manifest("m", "x.Q8_0.gguf", 1000, &digest, &GgufOptions::default());
        let parsed = parse_manifest(std::str::from_utf8(&bytes).unwrap())
            .unwrap()
            .document;
        assert_eq!(parsed.variants[0].file.path(), Some("gguf-q8_0/model.gguf"));
        assert_eq!(parsed.variants[0].file.sha256, digest);
        assert_eq!(parsed.llm.unwrap().context_length, 4096);
    }
}
