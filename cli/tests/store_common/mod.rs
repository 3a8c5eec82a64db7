//! Helpers for the `gpuport` store command tests: run the binary against a store, trusting a
//! loopback HTTPS server's test CA.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use gpuport_manifest_core::digest::sha256_hex;
use serde_json::json;

#[path = "../../../testing/https_server.rs"]
pub mod https_server;

use https_server::HttpsServer;

/// A `gpuport` command using `store` and trusting the server's CA (`ca_file`), with proxy
/// variables removed (the server is on loopback).
pub fn gpuport(store: &Path, ca_file: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gpuport"));
    cmd.env("GPUPORT_CA_FILE", ca_file)
        .env("GPUPORT_STORE", store)
        .env_remove("GPUPORT_CATALOG");
    for var in [
        "HTTPS_PROXY",
        "https_proxy",
        "HTTP_PROXY",
        "http_proxy",
        "ALL_PROXY",
        "all_proxy",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

/// Runs and returns (exit code, stdout, stderr).
pub fn run(cmd: &mut Command) -> (i32, String, String) {
    let Output {
        status,
        stdout,
        stderr,
    } = cmd.output().expect("run gpuport");
    (
        status.code().unwrap_or(-1),
        String::from_utf8_lossy(&stdout).into_owned(),
        String::from_utf8_lossy(&stderr).into_owned(),
    )
}

/// Deterministic pseudo-random bytes (xorshift).
pub fn bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng::new(seed);
    (0..len).map(|_| rng.next() as u8).collect()
}

/// xorshift64: the tests' random points (seed printed so a failure can be replayed).
pub struct Rng(u64);

impl Rng {
    /// Seeded generator.
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    /// Next value.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 >> 8
    }
    /// A value in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

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

/// Writes the server's CA to `dir/ca.pem`.
pub fn write_ca(server: &HttpsServer, dir: &Path) -> PathBuf {
    let path = dir.join("ca.pem");
    std::fs::write(&path, &server.ca_pem).unwrap();
    path
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

/// Asserts every blob hashes to its name.
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

/// `gpuport ls --json` as (id, state) pairs.
pub fn states(store: &Path, ca: &Path) -> Vec<(String, String)> {
    let (code, out, err) = run(gpuport(store, ca).args(["ls", "--json"]));
    assert_eq!(code, 0, "{err}");
    let list: serde_json::Value = serde_json::from_str(&out).unwrap();
    list.as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["id"].as_str().unwrap().to_owned(),
                m["state"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}
