//! `pull` against a real HTTPS server on loopback (test CA made at test time): resume after a
//! cut, refusal of wrong bytes, oversize bodies, http redirects and stalls — and nothing wrong
//! ever lands in `blobs/`.
#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

mod common;

use std::time::{Duration, Instant};

use common::https_server::{Fault, HttpsServer};
use common::*;
use gpuport_manifest_core::digest::sha256_hex;
use gpuport_store::{NoProgress, Presence, Store, StoreError, StoreOptions};

const SIZE: usize = 600_000;

fn setup(prefix: &str) -> (HttpsServer, Vec<u8>, tempfile::TempDir) {
    let server = HttpsServer::start();
    let weights = bytes(SIZE, 1);
    serve_bundle(&server, prefix, "tiny", &[("w/model.gguf", &weights)]);
    (server, weights, tempfile::tempdir().unwrap())
}

#[test]
fn a_pull_stores_every_file_and_resolves_to_the_same_bytes() {
    let (server, weights, dir) = setup("b");
    let store = store(dir.path(), &server);
    let record = store.pull(&server.url("/b/"), None, &NoProgress).unwrap();
    assert_eq!(record.id, "tiny");
    let model = store.resolve("tiny").unwrap();
    assert_eq!(
        std::fs::read(&model.files["w/model.gguf"]).unwrap(),
        weights
    );
    assert_eq!(store.list().unwrap()[0].state, Presence::Cached);
    // A second pull finds everything present: only the manifest is fetched again.
    store
        .pull(&server.url("/b/modelport.json"), None, &NoProgress)
        .unwrap();
    assert_eq!(server.bytes_served("/b/w/model.gguf"), SIZE as u64);
    assert_blobs_sound(dir.path());
}

#[test]
fn a_cut_transfer_resumes_with_a_range_request() {
    let (server, weights, dir) = setup("b");
    server.fault("/b/w/model.gguf", Fault::CutAfter(200_000));
    server.fault("/b/w/model.gguf", Fault::CutAfter(100_000));
    let store = store(dir.path(), &server);
    store.pull(&server.url("/b/"), None, &NoProgress).unwrap();
    let starts: Vec<Option<u64>> = server
        .requests_for("/b/w/model.gguf")
        .iter()
        .map(|l| l.range_start)
        .collect();
    assert_eq!(starts, [None, Some(200_000), Some(300_000)]);
    assert_eq!(server.bytes_served("/b/w/model.gguf"), SIZE as u64);
    let model = store.resolve("tiny").unwrap();
    assert_eq!(
        std::fs::read(&model.files["w/model.gguf"]).unwrap(),
        weights
    );
    assert!(files_under(&dir.path().join("partial")).is_empty());
}

#[test]
fn an_interrupted_pull_leaves_a_partial_file_that_the_next_pull_resumes() {
    let (server, _, dir) = setup("b");
    for _ in 0..4 {
        server.fault("/b/w/model.gguf", Fault::CutAfter(100_000));
    }
    let store = store(dir.path(), &server); // max_resumes = 3: four cuts exhaust it
    let err = store
        .pull(&server.url("/b/"), None, &NoProgress)
        .unwrap_err();
    assert!(matches!(err, StoreError::Network { .. }), "{err}");
    assert_eq!(store.list().unwrap()[0].state, Presence::Partial);
    assert_eq!(blob_count(dir.path()), 1, "only the manifest is a blob");
    let partial = files_under(&dir.path().join("partial"));
    assert_eq!(partial.len(), 1);
    assert_eq!(std::fs::metadata(&partial[0]).unwrap().len(), 400_000);
    // A new Store (as a new process would) resumes from byte 400000.
    let store = common::store(dir.path(), &server);
    store.pull(&server.url("/b/"), None, &NoProgress).unwrap();
    let last = server
        .requests_for("/b/w/model.gguf")
        .last()
        .cloned()
        .unwrap();
    assert_eq!(last.range_start, Some(400_000));
    assert_eq!(store.list().unwrap()[0].state, Presence::Cached);
    assert_eq!(server.bytes_served("/b/w/model.gguf"), SIZE as u64);
    assert!(files_under(&dir.path().join("partial")).is_empty());
    assert_blobs_sound(dir.path());
}

#[test]
fn wrong_bytes_are_refused_and_never_stored() {
    let (server, _, dir) = setup("b");
    server.fault("/b/w/model.gguf", Fault::WrongBytes);
    let store = store(dir.path(), &server);
    let err = store
        .pull(&server.url("/b/"), None, &NoProgress)
        .unwrap_err();
    assert!(matches!(err, StoreError::DigestMismatch { .. }), "{err}");
    assert!(!store.blob_path(&sha256_hex(&bytes(SIZE, 1))).exists());
    assert!(files_under(&dir.path().join("partial")).is_empty());
    assert_blobs_sound(dir.path());
    // The fault was one-shot: pulling again succeeds.
    store.pull(&server.url("/b/"), None, &NoProgress).unwrap();
    assert_blobs_sound(dir.path());
}

#[test]
fn a_body_longer_than_declared_is_refused_with_or_without_content_length() {
    for declare in [true, false] {
        let (server, _, dir) = setup("b");
        server.fault("/b/w/model.gguf", Fault::Oversize { extra: 10, declare });
        let store = store(dir.path(), &server);
        let err = store
            .pull(&server.url("/b/"), None, &NoProgress)
            .unwrap_err();
        assert!(
            matches!(err, StoreError::Oversize { declared, .. } if declared == SIZE as u64),
            "{err}"
        );
        assert_eq!(blob_count(dir.path()), 1, "only the manifest");
        assert!(files_under(&dir.path().join("partial")).is_empty());
    }
}

#[test]
fn http_urls_and_redirects_to_http_are_refused() {
    let (server, _, dir) = setup("b");
    let store = store(dir.path(), &server);
    let plain = format!("http://{}/b/", server.addr);
    let err = store.pull(&plain, None, &NoProgress).unwrap_err();
    assert!(matches!(err, StoreError::InsecureUrl { .. }), "{err}");
    assert!(server.log().is_empty(), "nothing was requested");

    server.fault("/b/w/model.gguf", Fault::RedirectToHttp);
    let err = store
        .pull(&server.url("/b/"), None, &NoProgress)
        .unwrap_err();
    assert!(matches!(err, StoreError::InsecureUrl { .. }), "{err}");
    assert_eq!(blob_count(dir.path()), 1);

    // An https → https redirect is followed.
    server.put("/elsewhere/model.gguf", bytes(SIZE, 1));
    server.fault(
        "/b/w/model.gguf",
        Fault::RedirectTo("/elsewhere/model.gguf".into()),
    );
    store.pull(&server.url("/b/"), None, &NoProgress).unwrap();
    assert_blobs_sound(dir.path());
}

#[test]
fn a_stalled_transfer_times_out_and_the_next_attempt_resumes() {
    let (server, weights, dir) = setup("b");
    // One stall: the read timeout (700 ms) fires, the download resumes from 100_000.
    server.fault(
        "/b/w/model.gguf",
        Fault::Stall(100_000, Duration::from_secs(3)),
    );
    let store = store(dir.path(), &server);
    store.pull(&server.url("/b/"), None, &NoProgress).unwrap();
    let starts: Vec<Option<u64>> = server
        .requests_for("/b/w/model.gguf")
        .iter()
        .map(|l| l.range_start)
        .collect();
    assert_eq!(starts, [None, Some(100_000)]);
    assert_eq!(resolved_bytes(&store, "tiny", "w/model.gguf"), weights);

    // Stalls every time: a Timeout error after the allowed resumes, well before the stalls end.
    let (server, _, dir) = setup("c");
    for _ in 0..4 {
        server.fault("/c/w/model.gguf", Fault::Stall(0, Duration::from_secs(5)));
    }
    let store = common::store(dir.path(), &server);
    let started = Instant::now();
    let err = store
        .pull(&server.url("/c/"), None, &NoProgress)
        .unwrap_err();
    assert!(matches!(err, StoreError::Timeout { .. }), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_blobs_sound(dir.path());
}

#[test]
fn a_server_that_ignores_the_range_is_restarted_from_zero() {
    let (server, weights, dir) = setup("b");
    server.fault("/b/w/model.gguf", Fault::CutAfter(250_000));
    server.fault("/b/w/model.gguf", Fault::IgnoreRange);
    let store = store(dir.path(), &server);
    store.pull(&server.url("/b/"), None, &NoProgress).unwrap();
    let seen: Vec<(Option<u64>, u16, u64)> = server
        .requests_for("/b/w/model.gguf")
        .iter()
        .map(|l| (l.range_start, l.status, l.body_bytes))
        .collect();
    // The second request asked for a range and was answered 200 with the whole file.
    assert_eq!(
        seen,
        [(None, 200, 250_000), (Some(250_000), 200, SIZE as u64)]
    );
    assert_eq!(resolved_bytes(&store, "tiny", "w/model.gguf"), weights);
}

#[test]
fn an_untrusted_certificate_is_refused() {
    let (server, _, dir) = setup("b");
    // Default options: Mozilla's roots, which do not include the test CA.
    let mut options = StoreOptions::default();
    options.http.proxy_from_env = false;
    let store = Store::open_with(dir.path(), options).unwrap();
    let err = store
        .pull(&server.url("/b/"), None, &NoProgress)
        .unwrap_err();
    assert!(matches!(err, StoreError::Network { .. }), "{err}");
    assert_eq!(blob_count(dir.path()), 0);
}

#[test]
fn a_shared_file_is_downloaded_once_for_two_models() {
    let server = HttpsServer::start();
    let shared = bytes(SIZE, 7);
    serve_bundle(&server, "a", "model-a", &[("w.gguf", &shared)]);
    serve_bundle(
        &server,
        "b",
        "model-b",
        &[("weights.gguf", &shared), ("extra.bin", &bytes(1000, 8))],
    );
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), &server);
    store.pull(&server.url("/a/"), None, &NoProgress).unwrap();
    store.pull(&server.url("/b/"), None, &NoProgress).unwrap();
    assert_eq!(server.bytes_served("/a/w.gguf"), SIZE as u64);
    assert_eq!(server.bytes_served("/b/weights.gguf"), 0);
    assert_eq!(
        blob_count(dir.path()),
        4,
        "two manifests, the shared file, extra.bin"
    );
}

#[test]
fn a_catalog_entry_pulls_from_its_base_url() {
    let server = HttpsServer::start();
    let weights = bytes(SIZE, 3);
    server.put("/mirror/m.gguf", weights.clone());
    let catalog_text = serde_json::json!({
        "catalog": "gpuport-catalog/1",
        "models": {"tiny-cat": {
            "base_url": "${TEST_MIRROR}/mirror",
            "manifest": serde_json::from_str::<serde_json::Value>(&manifest("tiny-cat", &[("m.gguf", &weights)])).unwrap(),
        }}
    });
    let catalog =
        gpuport_store::Catalog::parse(&catalog_text.to_string(), "c.json".as_ref()).unwrap();
    let base = format!("https://{}", server.addr);
    let entry = catalog
        .resolve("tiny-cat", |v| (v == "TEST_MIRROR").then(|| base.clone()))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), &server);
    let record = store.pull_entry(&entry, None, &NoProgress).unwrap();
    assert_eq!(record.source.describe(), "catalog:tiny-cat");
    assert_eq!(resolved_bytes(&store, "tiny-cat", "m.gguf"), weights);
}

#[test]
fn repair_refetches_a_corrupted_remote_blob() {
    let (server, weights, dir) = setup("b");
    let store = store(dir.path(), &server);
    store.pull(&server.url("/b/"), None, &NoProgress).unwrap();
    let blob = store.blob_path(&sha256_hex(&weights));
    let mut damaged = weights.clone();
    damaged[1234] ^= 1;
    std::fs::write(&blob, &damaged).unwrap();
    assert!(matches!(
        store.resolve("tiny"),
        Err(StoreError::CorruptBlob { .. })
    ));
    let report = store.verify(None, true, &NoProgress).unwrap();
    assert_eq!(report.corrupt, [sha256_hex(&weights)]);
    assert_eq!(report.repaired, ["tiny: w/model.gguf"]);
    assert_eq!(std::fs::read(&blob).unwrap(), weights);
    assert!(store.verify(None, false, &NoProgress).unwrap().consistent());
    assert_eq!(files_under(&dir.path().join("quarantine")).len(), 1);
}

#[test]
fn url_file_refs_are_fetched_from_their_url() {
    let server = HttpsServer::start();
    let weights = bytes(SIZE, 21);
    server.put("/release/official.gguf", weights.clone());
    let text = manifest("tiny", &[("w/model.gguf", &weights)]).replace(
        "\"path\": \"w/model.gguf\"",
        &format!("\"url\": \"{}\"", server.url("/release/official.gguf")),
    );
    server.put("/b/modelport.json", text);
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), &server);
    let record = store.pull(&server.url("/b/"), None, &NoProgress).unwrap();
    let key = format!("url/{}", sha256_hex(&weights));
    assert_eq!(
        record.files[&key].url.as_deref(),
        Some(server.url("/release/official.gguf").as_str())
    );
    let model = store.resolve("tiny").unwrap();
    assert_eq!(std::fs::read(&model.files[&key]).unwrap(), weights);
    assert_eq!(server.bytes_served("/release/official.gguf"), SIZE as u64);
}

#[test]
fn a_503_is_retried_and_the_transfer_resumes_where_it_was() {
    let (server, weights, dir) = setup("b");
    server.fault("/b/w/model.gguf", Fault::CutAfter(200_000));
    server.fault("/b/w/model.gguf", Fault::Status(503));
    server.fault("/b/w/model.gguf", Fault::Status(429));
    let store = store(dir.path(), &server);
    store.pull(&server.url("/b/"), None, &NoProgress).unwrap();
    let seen: Vec<(Option<u64>, u16)> = server
        .requests_for("/b/w/model.gguf")
        .iter()
        .map(|l| (l.range_start, l.status))
        .collect();
    assert_eq!(
        seen,
        [
            (None, 200),
            (Some(200_000), 503),
            (Some(200_000), 429),
            (Some(200_000), 206)
        ]
    );
    assert_eq!(server.bytes_served("/b/w/model.gguf"), SIZE as u64);
    assert_eq!(resolved_bytes(&store, "tiny", "w/model.gguf"), weights);
}

#[test]
fn an_http_error_keeps_the_partial_download_for_the_next_pull() {
    let (server, weights, dir) = setup("b");
    server.fault("/b/w/model.gguf", Fault::CutAfter(200_000));
    server.fault("/b/w/model.gguf", Fault::Status(404));
    let store = store(dir.path(), &server);
    let err = store
        .pull(&server.url("/b/"), None, &NoProgress)
        .unwrap_err();
    assert!(
        matches!(err, StoreError::HttpStatus { status: 404, .. }),
        "{err}"
    );
    let partial = files_under(&dir.path().join("partial"));
    assert_eq!(partial.len(), 1);
    assert_eq!(std::fs::metadata(&partial[0]).unwrap().len(), 200_000);
    // gc keeps it (the partial record wants it); the next pull resumes from byte 200_000.
    store.gc().unwrap();
    store.pull(&server.url("/b/"), None, &NoProgress).unwrap();
    let starts: Vec<Option<u64>> = server
        .requests_for("/b/w/model.gguf")
        .iter()
        .map(|l| l.range_start)
        .collect();
    assert_eq!(starts, [None, Some(200_000), Some(200_000)]);
    assert_eq!(server.bytes_served("/b/w/model.gguf"), SIZE as u64);
    assert_eq!(resolved_bytes(&store, "tiny", "w/model.gguf"), weights);
}

#[test]
fn a_failed_re_pull_keeps_the_previous_model_resolvable() {
    let (server, weights, dir) = setup("b");
    let store = store(dir.path(), &server);
    store.pull(&server.url("/b/"), None, &NoProgress).unwrap();
    // Version 2 of the bundle; its weights are refused (wrong bytes).
    serve_bundle(&server, "b", "tiny", &[("w/model.gguf", &bytes(SIZE, 7))]);
    server.fault("/b/w/model.gguf", Fault::WrongBytes);
    let err = store
        .pull(&server.url("/b/"), None, &NoProgress)
        .unwrap_err();
    assert!(matches!(err, StoreError::DigestMismatch { .. }), "{err}");
    store.gc().unwrap();
    assert_eq!(resolved_bytes(&store, "tiny", "w/model.gguf"), weights);
    assert_eq!(store.list().unwrap()[0].state, Presence::Cached);
    // The next pull of version 2 completes it.
    store.pull(&server.url("/b/"), None, &NoProgress).unwrap();
    assert_eq!(
        resolved_bytes(&store, "tiny", "w/model.gguf"),
        bytes(SIZE, 7)
    );
    assert!(files_under(&dir.path().join("pending")).is_empty());
}

#[test]
fn declared_sizes_that_overflow_u64_are_refused_naming_the_field() {
    let server = HttpsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (bytes(7, 1), bytes(8, 2));
    let text = manifest("huge", &[("a.bin", &a), ("b.bin", &b)])
        .replace("\"size\": 7", &format!("\"size\": {}", u64::MAX))
        .replace("\"size\": 8", "\"size\": 1");
    server.put("/h/modelport.json", text);
    let store = store(dir.path(), &server);
    let err = store
        .pull(&server.url("/h/"), None, &NoProgress)
        .unwrap_err();
    match &err {
        StoreError::SizeOverflow { field, .. } => {
            assert_eq!(field, "/variants/0/extra_files/0/size", "{err}")
        }
        other => panic!("{other}"),
    }
    assert!(server.requests_for("/h/a.bin").is_empty());
    assert_eq!(blob_count(dir.path()), 0);
    assert!(store.list().unwrap().is_empty());
}
