//! Differential test against the reference validator: `modelport validate` (modelport-cli 0.1.0)
//! and gpuport's reader judge the same corpus, and their verdicts agree except where a case
//! lists the intended `difference`.
//!
//! Needs `modelport` on PATH (`pip install -r tools/requirements-test.txt`). Without it the test
//! says it is skipped; with `GPUPORT_REQUIRE_REFERENCES=1` (set by `.ci/run`) it fails instead.

#![allow(clippy::unwrap_used)]

mod support;

use std::collections::BTreeMap;
use std::process::Command;

use gpuport_manifest_core::document::{ValidateOptions, validate_path};

#[test]
fn verdicts_agree_with_modelport_validate() {
    if !support::modelport_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cases = support::cases();
    let mut files = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let path = dir.path().join(format!("case{i:03}.json"));
        std::fs::write(
            &path,
            serde_json::to_string_pretty(&support::document(case)).unwrap(),
        )
        .unwrap();
        files.push(path);
    }
    let out = Command::new("modelport")
        .arg("validate")
        .args(&files)
        .env("COLUMNS", "100000")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    // One line per file: `✓ PATH ...` or `✗ PATH`, followed by indented details.
    let mut reference: BTreeMap<String, &str> = BTreeMap::new();
    for line in stdout.lines() {
        for (mark, verdict) in [("✓ ", "valid"), ("✗ ", "invalid")] {
            if let Some(rest) = line.strip_prefix(mark) {
                let path = rest
                    .split_whitespace()
                    .next()
                    .unwrap_or_default()
                    .to_owned();
                reference.insert(path, verdict);
            }
        }
    }
    let mut failures = Vec::new();
    let options = ValidateOptions::default();
    for (case, file) in cases.iter().zip(&files) {
        let theirs = reference
            .get(file.to_str().unwrap())
            .copied()
            .unwrap_or("missing from output");
        let reports = validate_path(file, &options).unwrap();
        let ours = if reports.iter().all(|r| r.is_valid()) {
            "valid"
        } else {
            "invalid"
        };
        if theirs != case.reference {
            failures.push(format!(
                "{}: reference says {theirs}, the corpus records {}",
                case.name, case.reference
            ));
        }
        let expected_ours = if case.expect.is_empty() {
            "valid"
        } else {
            "invalid"
        };
        if ours != expected_ours {
            failures.push(format!(
                "{}: gpuport says {ours}, expected {expected_ours}",
                case.name
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{}\n--- modelport output ---\n{stdout}",
        failures.join("\n")
    );
    let differences = cases.iter().filter(|c| c.difference.is_some()).count();
    eprintln!(
        "{} cases; verdicts agree on {}; {differences} intended differences",
        cases.len(),
        cases.len() - differences
    );
}
