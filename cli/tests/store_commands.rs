//! The store commands end to end: output, `--json`, exit codes (0 ok, 1 invalid content or
//! verification failure, 2 usage or I/O), `--store` over `GPUPORT_STORE`, user catalogs.
#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

mod store_common;

use gpuport_manifest_core::digest::sha256_hex;
use store_common::https_server::HttpsServer;
use store_common::*;

#[test]
fn import_ls_verify_evict_rm_gc_through_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let server = HttpsServer::start();
    let ca = write_ca(&server, dir.path());
    let data = bytes(200_000, 1);
    let bundle = write_bundle(&dir.path().join("b"), "tiny", &[("w.gguf", &data)]);
    let store = dir.path().join("store");

    let (code, out, err) = run(gpuport(&store, &ca).arg("import").arg(&bundle));
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("imported tiny (2 files"), "{out}");
    assert_eq!(
        states(&store, &ca),
        [("tiny".to_owned(), "cached".to_owned())]
    );
    let (code, out, _) = run(gpuport(&store, &ca).arg("ls"));
    assert_eq!(code, 0);
    assert!(out.contains("tiny") && out.contains("cached"), "{out}");

    // Corrupt the blob: verify exits 1 and quarantines it; the model is then partial.
    let digest = sha256_hex(&data);
    let blob = store
        .join("blobs/sha256")
        .join(&digest[..2])
        .join(&digest[2..]);
    let mut bad = data.clone();
    bad[0] ^= 1;
    std::fs::write(&blob, &bad).unwrap();
    let (code, out, _) = run(gpuport(&store, &ca).arg("verify"));
    assert_eq!(code, 1, "{out}");
    assert!(out.contains(&format!("corrupt blob {digest}")), "{out}");
    assert_eq!(
        states(&store, &ca),
        [("tiny".to_owned(), "partial".to_owned())]
    );
    let (code, _, _) = run(gpuport(&store, &ca).args(["verify", "tiny"]));
    assert_eq!(code, 1, "a named model that is not complete fails verify");
    // A local model is repaired by importing again.
    let (code, _, err) = run(gpuport(&store, &ca).arg("import").arg(&bundle));
    assert_eq!(code, 0, "{err}");
    let (code, out, _) = run(gpuport(&store, &ca).args(["verify", "tiny", "--json"]));
    assert_eq!(code, 0, "{out}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["blobs_checked"], 2);

    let (code, out, _) = run(gpuport(&store, &ca).args(["evict", "tiny"]));
    assert_eq!(code, 0);
    assert!(out.starts_with("evicted tiny"), "{out}");
    assert_eq!(
        states(&store, &ca),
        [("tiny".to_owned(), "absent".to_owned())]
    );
    let (code, _, _) = run(gpuport(&store, &ca).args(["rm", "tiny"]));
    assert_eq!(code, 0);
    assert!(states(&store, &ca).is_empty());
    let (code, out, _) = run(gpuport(&store, &ca).arg("gc"));
    assert_eq!(code, 0);
    assert!(out.starts_with("gc: "), "{out}");
}

#[test]
fn exit_codes_separate_bad_content_from_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let server = HttpsServer::start();
    let ca = write_ca(&server, dir.path());
    let store = dir.path().join("store");
    // I/O: no such path → 2.
    let (code, _, err) = run(gpuport(&store, &ca)
        .arg("import")
        .arg(dir.path().join("nope")));
    assert_eq!(code, 2, "{err}");
    // Unknown model → 2.
    let (code, _, err) = run(gpuport(&store, &ca).args(["rm", "ghost"]));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no model `ghost`"), "{err}");
    // Bad content: a digest mismatch → 1.
    let data = bytes(1000, 2);
    let bundle = write_bundle(&dir.path().join("b"), "tiny", &[("w.gguf", &data)]);
    std::fs::write(bundle.join("w.gguf"), bytes(1000, 3)).unwrap();
    let (code, _, err) = run(gpuport(&store, &ca).arg("import").arg(&bundle));
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("SHA-256"), "{err}");
    // Plain http is refused → 1.
    let (code, _, err) = run(gpuport(&store, &ca).args(["pull", "http://127.0.0.1:9/b/"]));
    assert_eq!(code, 1, "{err}");
    // A catalog name that no catalog has → 2.
    let (code, _, err) = run(gpuport(&store, &ca).args(["pull", "no-such-model"]));
    assert_eq!(code, 2, "{err}");
}

#[test]
fn the_store_flag_beats_the_environment_variable() {
    let dir = tempfile::tempdir().unwrap();
    let server = HttpsServer::start();
    let ca = write_ca(&server, dir.path());
    let bundle = write_bundle(&dir.path().join("b"), "tiny", &[("w.gguf", &bytes(100, 4))]);
    let env_store = dir.path().join("env-store");
    let flag_store = dir.path().join("flag-store");
    let (code, _, err) = run(gpuport(&env_store, &ca)
        .arg("import")
        .arg(&bundle)
        .arg("--store")
        .arg(&flag_store));
    assert_eq!(code, 0, "{err}");
    assert!(flag_store.join("models/tiny.json").is_file());
    assert!(!env_store.join("models/tiny.json").exists());
    assert_eq!(states(&flag_store, &ca).len(), 1);
}

#[test]
fn a_user_catalog_entry_is_pulled_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let server = HttpsServer::start();
    let ca = write_ca(&server, dir.path());
    let data = bytes(150_000, 5);
    server.put("/mirror/m.gguf", data.clone());
    let catalog = serde_json::json!({
        "catalog": "gpuport-catalog/1",
        "models": {"my-model": {
            "description": "a test model",
            "base_url": "${MY_MIRROR}/mirror/",
            "manifest": serde_json::from_str::<serde_json::Value>(&manifest("my-model", &[("m.gguf", &data)])).unwrap(),
        }}
    });
    let catalog_file = dir.path().join("catalog.json");
    std::fs::write(&catalog_file, catalog.to_string()).unwrap();
    let store = dir.path().join("store");
    // Without the variable: a clear error naming it.
    let (code, _, err) = run(gpuport(&store, &ca)
        .args(["pull", "my-model", "--catalog"])
        .arg(&catalog_file));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("MY_MIRROR"), "{err}");
    let (code, out, err) = run(gpuport(&store, &ca)
        .args(["pull", "my-model", "--id", "renamed"])
        .env("GPUPORT_CATALOG", &catalog_file)
        .env("MY_MIRROR", format!("https://{}", server.addr)));
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("pulled renamed") && out.contains("catalog:my-model"),
        "{out}"
    );
    assert_eq!(
        states(&store, &ca),
        [("renamed".to_owned(), "cached".to_owned())]
    );
}

#[test]
fn without_flag_or_variable_the_store_is_under_xdg_data_home() {
    let dir = tempfile::tempdir().unwrap();
    let server = HttpsServer::start();
    let ca = write_ca(&server, dir.path());
    let bundle = write_bundle(&dir.path().join("b"), "tiny", &[("w.gguf", &bytes(100, 6))]);
    let data_home = dir.path().join("data");
    let (code, _, err) = run(gpuport(&dir.path().join("unused"), &ca)
        .env_remove("GPUPORT_STORE")
        .env("XDG_DATA_HOME", &data_home)
        .arg("import")
        .arg(&bundle));
    assert_eq!(code, 0, "{err}");
    assert!(data_home.join("gpuport/models/tiny.json").is_file());
}

/// Issue 18: `--store DIR` is a global option, accepted before and after the subcommand (as
/// cargo's and git's are), and it wins over `GPUPORT_STORE`.
#[test]
fn store_is_accepted_before_and_after_the_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let server = HttpsServer::start();
    let ca = write_ca(&server, dir.path());
    let bundle = write_bundle(&dir.path().join("b"), "tiny", &[("w.bin", b"weights")]);
    let env_store = dir.path().join("env-store");
    let store = dir.path().join("store");
    let (code, _, err) = run(gpuport(&env_store, &ca)
        .arg("--store")
        .arg(&store)
        .arg("import")
        .arg(&bundle));
    assert_eq!(code, 0, "{err}");
    for args in [
        vec![
            "--store".into(),
            store.clone().into_os_string(),
            "ls".into(),
        ],
        vec![
            "ls".into(),
            "--store".into(),
            store.clone().into_os_string(),
        ],
    ] {
        let (code, out, err) = run(gpuport(&env_store, &ca).args(&args));
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(out.contains("tiny"), "{args:?}: {out}");
    }
    let (_, out, _) = run(gpuport(&env_store, &ca).arg("ls"));
    assert!(
        !out.contains("tiny"),
        "GPUPORT_STORE's store is another one: {out}"
    );
}
