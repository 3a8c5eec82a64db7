//! Shared helpers of the store's integration tests.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use gpuport_manifest_core::digest::sha256_hex;
use gpuport_store::{HttpOptions, Store, StoreOptions};
use serde_json::json;

#[path = "../../../testing/https_server.rs"]
pub mod https_server;

use https_server::HttpsServer;

/// Deterministic pseudo-random bytes (xorshift), different per `seed`.
pub fn bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// A text-generation ModelPort manifest naming `files` (path, bytes) by path; the first is
/// the variant's file, the rest its extra files.
pub fn manifest(id: &str, files: &[(&str, &[u8])]) -> String {
    let file_ref = |(path, data): &(&str, &[u8])| json!({"path": path, "size": data.len(), "sha256": sha256_hex(data)});
    let doc = json!({
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
    });
    serde_json::to_string_pretty(&doc).unwrap()
}

/// Writes a bundle folder: `modelport.json` plus `files`.
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

/// Network options trusting exactly the test CA, with short timeouts.
pub fn http_options(server: &HttpsServer) -> HttpOptions {
    HttpOptions {
        root_certs: vec![server.ca_der.clone()],
        connect_timeout: Duration::from_secs(5),
        read_timeout: Duration::from_millis(700),
        max_resumes: 3,
        proxy_from_env: false,
    }
}

/// A store at `root` that trusts the test CA.
pub fn store(root: &Path, server: &HttpsServer) -> Store {
    Store::open_with(
        root,
        StoreOptions {
            http: http_options(server),
        },
    )
    .unwrap()
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
        let data = std::fs::read(&path).unwrap();
        assert_eq!(sha256_hex(&data), name, "blob {} is wrong", path.display());
    }
}

/// The number of blobs in the store.
pub fn blob_count(root: &Path) -> usize {
    files_under(&root.join("blobs").join("sha256")).len()
}
