//! Shared helpers of the store's integration tests.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::Path;
use std::time::Duration;

use gpuport_store::{HttpOptions, Store, StoreOptions};

pub use gpuport_testing::https_server;

use https_server::HttpsServer;

pub use gpuport_testing::rng::bytes;
pub use gpuport_testing::store_fixtures::*;

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

/// The bytes the store serves for `path` of model `id` (resolved, so rehashed first).
pub fn resolved_bytes(store: &Store, id: &str, path: &str) -> Vec<u8> {
    std::fs::read(&store.resolve(id).unwrap().files[path]).unwrap()
}
