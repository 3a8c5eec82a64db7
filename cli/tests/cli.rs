//! The `gpuport` binary's contract: exit codes (0 valid, 1 invalid, 2 usage/IO), every problem
//! printed with its JSON pointer, `--json` output, `--no-files`, `--program`.

#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::{Command, Output};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn gpuport(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gpuport"))
        .args(args)
        .current_dir(repo())
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn valid_documents_exit_0() {
    for path in [
        "examples/modelport/image-classification.json",
        "examples/modelport/object-detection.json",
        "examples/modelport/text-generation.json",
    ] {
        let o = gpuport(&["validate", "--no-files", path]);
        assert_eq!(o.status.code(), Some(0), "{path}: {}", stdout(&o));
    }
    let o = gpuport(&[
        "validate",
        "examples/mlc/tiny-package",
        "--program",
        "examples/mlc/tiny-package/program.json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

#[test]
fn missing_files_make_a_bundle_invalid_unless_no_files() {
    // The official example's files are not in the repository.
    let o = gpuport(&["validate", "examples/modelport/image-classification.json"]);
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(
        out.contains("/variants/0/file/path: `onnx-fp32/model.onnx` does not exist in the bundle"),
        "{out}"
    );
    assert!(out.contains("/golden/outputs/logits/path"), "{out}");
}

#[test]
fn invalid_document_lists_every_problem_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("modelport.json");
    std::fs::write(
        &path,
        r#"{"schema": "modelport/0.1", "id": "X", "version": "1", "task": "text-generation",
            "license": "MIT", "variants": [{"id": "a", "runtime": "onnx", "precision": "fp32",
            "file": {"path": "../m.gguf", "size": 1, "sha256": "ABC"}}], "llm": {"context_length": 0}}"#,
    )
    .unwrap();
    let o = gpuport(&["validate", dir.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    for pointer in [
        "/id:",
        "/version:",
        "/variants/0/file/path:",
        "/variants/0/file/sha256:",
        "/variants/0/runtime:",
        "/llm/context_length:",
    ] {
        assert!(out.contains(pointer), "{pointer} missing from:\n{out}");
    }
    let o = gpuport(&["validate", "--json", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["valid"], false);
    let problems = report["documents"][0]["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 6, "{report:#}");
    assert_eq!(problems[0]["pointer"], "/id");
    assert_eq!(problems[0]["kind"], "value");
    assert_eq!(report["documents"][0]["kind"], "modelport_manifest");
}

#[test]
fn usage_and_io_errors_exit_2() {
    assert_eq!(
        gpuport(&["validate", "no/such/path"]).status.code(),
        Some(2)
    );
    assert_eq!(gpuport(&["validate", "examples"]).status.code(), Some(2));
    assert_eq!(gpuport(&["frobnicate"]).status.code(), Some(2));
    let o = gpuport(&[
        "validate",
        "examples/modelport/text-generation.json",
        "--program",
        "examples/mlc/tiny-package/program.json",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        gpuport(&[
            "inspect",
            "examples/modelport/text-generation.json",
            "--runtime",
            "tflite"
        ])
        .status
        .code(),
        Some(2)
    );
}

#[test]
fn mismatched_program_is_invalid_and_names_both_sides() {
    let o = gpuport(&[
        "validate",
        "--no-files",
        "examples/mlc/gemma4-audio",
        "--program",
        "examples/mlc/llava-image/program.json",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(
        out.contains("/interface_id: program says sha256:ead0"),
        "{out}"
    );
    assert!(
        out.contains("the package's /interface_id is sha256:d40a"),
        "{out}"
    );
}

#[test]
fn inspect_shows_the_choice_for_given_runtimes() {
    let o = gpuport(&[
        "inspect",
        "examples/modelport/text-generation.json",
        "--runtime",
        "llamacpp",
        "--ram-mb",
        "1500",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let out = stdout(&o);
    assert!(out.contains("chosen here: gguf-q4_k_m"), "{out}");
    assert!(out.contains("* gguf-q4_k_m"), "{out}");
    let o = gpuport(&[
        "inspect",
        "examples/modelport/text-generation.json",
        "--runtime",
        "llamacpp",
        "--ram-mb",
        "512",
    ]);
    assert!(stdout(&o).contains("chosen here: none"), "{}", stdout(&o));
}

#[test]
fn hash_prints_what_a_producer_fills_in() {
    let o = gpuport(&["hash", "interface", "examples/mlc/gemma4-audio"]);
    assert_eq!(
        stdout(&o).trim(),
        "sha256:d40adc35de07e2e9e9042a1641f1bbb172df3889383e276dcdbb743e00d1c574"
    );
    let o = gpuport(&["hash", "params", "examples/mlc/tiny-package"]);
    assert_eq!(
        stdout(&o).trim(),
        "sha256:0f97508c7e8297f348544281db8a19f17cf9be5b8e3196f1651cd3d7a2293cee"
    );
    let o = gpuport(&["hash", "resources", "examples/mlc/tiny-package"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["estimated_device_memory_bytes"], 1184);
    assert_eq!(v["max_storage_buffer_binding_size"], 512);
    // A producer's draft with a placeholder id still hashes.
    let dir = tempfile::tempdir().unwrap();
    let mut doc: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("examples/mlc/gemma4-audio/mlc-model-manifest.json"))
            .unwrap(),
    )
    .unwrap();
    doc["interface_id"] = format!("sha256:{}", "0".repeat(64)).into();
    let draft = dir.path().join("mlc-model-manifest.json");
    std::fs::write(&draft, doc.to_string()).unwrap();
    let o = gpuport(&["hash", "interface", draft.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).starts_with("sha256:d40adc35"));
}

/// Issue 18: on a machine without a display (no `XDG_RUNTIME_DIR`, as on CI and servers) a
/// successful command writes nothing to stderr — Mesa's device-select layer used to make
/// libwayland print two errors before every run.
#[test]
fn probe_is_quiet_on_a_headless_machine() {
    let out = Command::new(env!("CARGO_BIN_EXE_gpuport"))
        .arg("probe")
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("WAYLAND_DISPLAY")
        .env_remove("DISPLAY")
        .env_remove("NODEVICE_SELECT")
        .env_remove("MESA_VK_DEVICE_SELECT")
        .output()
        .unwrap();
    if !out.status.success() {
        assert!(
            std::env::var_os("GPUPORT_REQUIRE_GPU").is_none(),
            "probe failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        eprintln!("SKIPPED: no GPU adapter");
        return;
    }
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    assert!(!out.stdout.is_empty());
}

/// Every subcommand in `gpuport --help` has a description (`hash` had none).
#[test]
fn every_subcommand_is_described_in_help() {
    let out = gpuport(&["--help"]);
    let help = stdout(&out);
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .collect();
    assert!(commands.len() > 10, "{help}");
    for line in commands {
        let mut words = line.split_whitespace();
        let name = words.next().unwrap();
        assert!(
            words.next().is_some(),
            "`{name}` has no description:\n{help}"
        );
    }
}
