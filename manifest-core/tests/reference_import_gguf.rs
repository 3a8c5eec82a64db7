//! A bundle written by the reference writer (`modelport import-gguf`, modelport-cli 0.1.0) for a
//! real GGUF validates as a bundle, files included; corrupting its model file is caught.

#![allow(clippy::unwrap_used)]

mod support;

use std::process::Command;

use gpuport_manifest_core::document::{ValidateOptions, validate_path};
use gpuport_manifest_core::modelport::{Runtime, Task};

#[test]
fn import_gguf_bundle_of_smollm2_validates_with_files() {
    let Some(model) = support::model("SmolLM2-135M-Instruct.Q4_1.gguf") else {
        return;
    };
    if !support::modelport_available() {
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let status = Command::new("modelport")
        .args([
            "import-gguf",
            model.to_str().unwrap(),
            "--license",
            "Apache-2.0",
            "--id",
            "smollm2-135m",
            "-o",
        ])
        .arg(out.path())
        .env("COLUMNS", "200")
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "import-gguf failed: {}",
        String::from_utf8_lossy(&status.stderr)
    );
    let bundle = out.path().join("smollm2-135m");
    let options = ValidateOptions {
        check_files: true,
        program: None,
    };
    let reports = validate_path(&bundle, &options).unwrap();
    assert!(reports[0].is_valid(), "{}", reports[0].problems);

    let (_, opened) = gpuport_manifest_core::document::open(&bundle).unwrap();
    let Some(gpuport_manifest_core::document::Opened::Modelport { manifest, .. }) = opened else {
        panic!()
    };
    assert_eq!(manifest.task, Task::TextGeneration);
    assert_eq!(manifest.variants[0].runtime, Runtime::Llamacpp);
    assert_eq!(manifest.variants[0].precision, "q4_1");
    assert_eq!(manifest.variants[0].file.size, 98_362_432);
    assert_eq!(
        manifest.variants[0].file.sha256,
        "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
    );

    // One flipped byte: same size, wrong digest.
    let file = bundle.join("gguf-q4_1/model.gguf");
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[1_000_000] ^= 1;
    std::fs::write(&file, &bytes).unwrap();
    let reports = validate_path(&bundle, &options).unwrap();
    let pointers: Vec<&str> = reports[0]
        .problems
        .iter()
        .map(|p| p.pointer.as_str())
        .collect();
    assert_eq!(pointers, ["/variants/0/file/sha256"]);
}
