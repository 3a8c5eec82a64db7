//! Helpers for the `gpuport` store command tests: run the binary against a store, trusting a
//! loopback HTTPS server's test CA.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub use gpuport_testing::https_server;

use https_server::HttpsServer;

pub use gpuport_testing::rng::bytes;
pub use gpuport_testing::store_fixtures::*;

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

/// Writes the server's CA to `dir/ca.pem`.
pub fn write_ca(server: &HttpsServer, dir: &Path) -> PathBuf {
    let path = dir.join("ca.pem");
    std::fs::write(&path, &server.ca_pem).unwrap();
    path
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
