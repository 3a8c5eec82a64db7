//! Bundle file checks: existence, containment (including symlinks), size, SHA-256.

#![allow(clippy::unwrap_used)]

mod support;

use std::path::Path;

use gpuport_manifest_core::bundle::check_files;
use gpuport_manifest_core::digest::sha256_hex;
use gpuport_manifest_core::modelport::{Manifest, read_manifest};
use gpuport_manifest_core::{ProblemKind, Problems};
use serde_json::json;

/// A classification bundle whose files are written with the given contents.
fn bundle(dir: &Path, model: &[u8], labels: &[u8]) -> Manifest {
    std::fs::create_dir_all(dir.join("onnx")).unwrap();
    std::fs::write(dir.join("onnx/model.onnx"), model).unwrap();
    std::fs::write(dir.join("labels.txt"), labels).unwrap();
    let doc = json!({
        "schema": "modelport/0.1", "id": "tiny", "version": "1.0.0",
        "task": "image-classification", "license": "MIT",
        "variants": [{"id": "onnx-fp32", "runtime": "onnx", "precision": "fp32",
            "file": {"path": "onnx/model.onnx", "size": model.len(), "sha256": sha256_hex(model)}}],
        "inputs": [{"name": "x", "dtype": "float32", "shape": [1, 3, 8, 8], "layout": "NCHW",
            "preprocess": {"resize": {"size": [8, 8]}}}],
        "outputs": [{"name": "y", "dtype": "float32", "shape": [1, 2],
            "postprocess": {"type": "classification",
                "labels": {"path": "labels.txt", "size": labels.len(), "sha256": sha256_hex(labels)}}}]
    });
    read_manifest(&doc).unwrap().document
}

fn check(dir: &Path, m: &Manifest) -> Problems {
    check_files(dir, &m.files())
}

#[test]
fn a_complete_bundle_passes() {
    let dir = tempfile::tempdir().unwrap();
    let m = bundle(dir.path(), b"model bytes", b"cat\ndog\n");
    assert!(check(dir.path(), &m).is_empty());
}

#[test]
fn missing_wrong_size_and_wrong_digest_are_reported_with_pointers() {
    let dir = tempfile::tempdir().unwrap();
    let m = bundle(dir.path(), b"model bytes", b"cat\ndog\n");
    std::fs::write(dir.path().join("onnx/model.onnx"), b"model bytez").unwrap();
    std::fs::remove_file(dir.path().join("labels.txt")).unwrap();
    let p = check(dir.path(), &m);
    let got: Vec<&str> = p.iter().map(|p| p.pointer.as_str()).collect();
    assert_eq!(
        got,
        [
            "/outputs/0/postprocess/labels/path",
            "/variants/0/file/sha256"
        ],
        "{p}"
    );
    assert!(p.iter().all(|p| p.kind == ProblemKind::File));

    std::fs::write(dir.path().join("onnx/model.onnx"), b"short").unwrap();
    let p = check(dir.path(), &m);
    assert!(p.has("/variants/0/file/size"), "{p}");
}

#[cfg(unix)]
#[test]
fn symlinks_out_of_the_bundle_are_refused_and_inside_ones_allowed() {
    let outside = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let m = bundle(dir.path(), b"model bytes", b"cat\ndog\n");
    // A symlink to a file inside the bundle is fine.
    std::fs::rename(
        dir.path().join("labels.txt"),
        dir.path().join("real-labels.txt"),
    )
    .unwrap();
    std::os::unix::fs::symlink("real-labels.txt", dir.path().join("labels.txt")).unwrap();
    assert!(check(dir.path(), &m).is_empty());
    // The same bytes outside the bundle, reached through a symlinked folder, are refused.
    std::fs::write(outside.path().join("model.onnx"), b"model bytes").unwrap();
    std::fs::remove_dir_all(dir.path().join("onnx")).unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("onnx")).unwrap();
    let p = check(dir.path(), &m);
    assert!(p.has("/variants/0/file/path"), "{p}");
    assert!(p.to_string().contains("leaves the bundle folder"), "{p}");
}

#[test]
fn a_folder_where_a_file_belongs_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let m = bundle(dir.path(), b"model bytes", b"cat\ndog\n");
    std::fs::remove_file(dir.path().join("labels.txt")).unwrap();
    std::fs::create_dir(dir.path().join("labels.txt")).unwrap();
    let p = check(dir.path(), &m);
    assert!(p.to_string().contains("not a regular file"), "{p}");
}

#[test]
fn url_files_are_not_fetched() {
    let doc: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            support::repo_root().join("examples/modelport/text-generation.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let m = read_manifest(&doc).unwrap().document;
    let dir = tempfile::tempdir().unwrap();
    assert!(check(dir.path(), &m).is_empty());
}
