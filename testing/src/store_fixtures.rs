//! Store test fixtures shared by the store crate's tests and the CLI's store tests: seeded
//! bytes, ModelPort bundles on disk or on the test HTTPS server, and the check that every blob
//! hashes to its name.

use std::path::{Path, PathBuf};

use gpuport_manifest_core::digest::sha256_hex;
use serde_json::json;

use crate::https_server::HttpsServer;

/// A text-generation ModelPort manifest for `files` (path, bytes).
pub fn manifest(id: &str, files: &[(&str, &[u8])]) -> String {
    let file_ref = |(path, data): &(&str, &[u8])| json!({"path": path, "size": data.len(), "sha256": sha256_hex(data)});
    serde_json::to_string_pretty(&json!({
        "schema": "modelport/0.1",
        "id": id,
        "version": "1.0.0",
        "task": "text-generation",
        "license": "Apache-2.0",
        "variants": [{
            "id": "gguf",
            "runtime": "llamacpp",
            "precision": "q4_0",
            "file": file_ref(&files[0]),
            "extra_files": files[1..].iter().map(file_ref).collect::<Vec<_>>(),
        }],
        "llm": {"context_length": 512},
    }))
    .unwrap()
}

/// Writes a bundle folder.
pub fn write_bundle(dir: &Path, id: &str, files: &[(&str, &[u8])]) -> PathBuf {
    for (path, data) in files {
        let target = dir.join(path);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::write(target, data).unwrap();
    }
    std::fs::write(dir.join("modelport.json"), manifest(id, files)).unwrap();
    dir.to_path_buf()
}

/// Serves a bundle under `/<prefix>/`.
pub fn serve_bundle(server: &HttpsServer, prefix: &str, id: &str, files: &[(&str, &[u8])]) {
    for (path, data) in files {
        server.put(&format!("/{prefix}/{path}"), data.to_vec());
    }
    server.put(&format!("/{prefix}/modelport.json"), manifest(id, files));
}

/// Every file under `dir`, recursively.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// Asserts every blob under `root/blobs` hashes to its name (nothing wrong ever landed).
pub fn assert_blobs_sound(root: &Path) {
    for path in files_under(&root.join("blobs").join("sha256")) {
        let name = format!(
            "{}{}",
            path.parent()
                .unwrap()
                .file_name()
                .unwrap()
                .to_str()
                .unwrap(),
            path.file_name().unwrap().to_str().unwrap()
        );
        assert_eq!(
            sha256_hex(&std::fs::read(&path).unwrap()),
            name,
            "{}",
            path.display()
        );
    }
}

/// The number of blobs in the store.
pub fn blob_count(root: &Path) -> usize {
    files_under(&root.join("blobs").join("sha256")).len()
}
