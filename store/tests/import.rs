//! Local imports: ModelPort bundles, MLC packages, bare GGUF files; whole-folder validation
//! before any copy; path escapes, wrong sizes and digests refused with typed errors.
#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

mod common;

use gpuport_testing::references;

use std::path::Path;

use common::*;
use gpuport_manifest_core::digest::{sha256_file, sha256_hex};
use gpuport_store::{ImportOptions, NoProgress, Presence, RecordState, Store, StoreError};

fn open(dir: &Path) -> Store {
    Store::open(dir.join("store")).unwrap()
}

fn import(store: &Store, path: &Path) -> Result<gpuport_store::ModelRecord, StoreError> {
    store.import(path, &ImportOptions::default(), &NoProgress)
}

/// Nothing was written: no blob, no record, no temp file.
fn assert_untouched(store: &Store) {
    let root = store.root();
    assert_eq!(blob_count(root), 0);
    assert!(files_under(&root.join("models")).is_empty());
    assert!(files_under(&root.join("tmp")).is_empty());
}

#[test]
fn a_bundle_is_imported_and_resolves_to_identical_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let weights = bytes(300_000, 1);
    let labels = b"a\nb\n".to_vec();
    let bundle = write_bundle(
        &dir.path().join("b"),
        "tiny",
        &[("w/model.gguf", &weights), ("labels.txt", &labels)],
    );
    let store = open(dir.path());
    let record = import(&store, &bundle).unwrap();
    assert_eq!(record.state, RecordState::Complete);
    let model = store.resolve("tiny").unwrap();
    assert_eq!(
        std::fs::read(&model.files["w/model.gguf"]).unwrap(),
        weights
    );
    assert_eq!(std::fs::read(&model.files["labels.txt"]).unwrap(), labels);
    assert_eq!(
        std::fs::read(&model.manifest).unwrap(),
        std::fs::read(bundle.join("modelport.json")).unwrap()
    );
    // The manifest file itself can be given, and --id renames.
    let options = ImportOptions {
        id: Some("other".into()),
        ..Default::default()
    };
    store
        .import(&bundle.join("modelport.json"), &options, &NoProgress)
        .unwrap();
    assert_eq!(
        blob_count(store.root()),
        3,
        "both models share all three blobs"
    );
    assert_eq!(store.list().unwrap().len(), 2);
    assert!(store.verify(None, false, &NoProgress).unwrap().consistent());
}

#[test]
fn a_missing_or_wrong_size_file_fails_before_anything_is_copied() {
    let dir = tempfile::tempdir().unwrap();
    let big = bytes(2_000_000, 2);
    let small = bytes(1000, 3);
    let bundle = write_bundle(
        &dir.path().join("b"),
        "tiny",
        &[("a-big.bin", &big), ("z-small.bin", &small)],
    );
    let store = open(dir.path());

    std::fs::write(bundle.join("z-small.bin"), &small[..999]).unwrap();
    let err = import(&store, &bundle).unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::SizeMismatch {
                expected: 1000,
                actual: 999,
                ..
            }
        ),
        "{err}"
    );
    assert_untouched(&store);

    std::fs::remove_file(bundle.join("z-small.bin")).unwrap();
    let err = import(&store, &bundle).unwrap_err();
    assert!(matches!(err, StoreError::MissingFile { .. }), "{err}");
    assert_untouched(&store);
}

#[test]
fn a_digest_mismatch_is_refused_and_leaves_no_blob() {
    let dir = tempfile::tempdir().unwrap();
    let data = bytes(100_000, 4);
    let bundle = write_bundle(&dir.path().join("b"), "tiny", &[("w.bin", &data)]);
    let mut other = data.clone();
    other[500] ^= 0xff;
    std::fs::write(bundle.join("w.bin"), &other).unwrap();
    let store = open(dir.path());
    let err = import(&store, &bundle).unwrap_err();
    assert!(
        matches!(err, StoreError::DigestMismatch { ref expected, .. } if *expected == sha256_hex(&data)),
        "{err}"
    );
    assert!(!store.blob_path(&sha256_hex(&other)).exists());
    assert!(!store.blob_path(&sha256_hex(&data)).exists());
    assert!(files_under(&store.root().join("tmp")).is_empty());
    assert_blobs_sound(store.root());
}

#[test]
fn paths_that_leave_the_bundle_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret.bin");
    let data = bytes(64, 5);
    std::fs::write(&secret, &data).unwrap();
    let store = open(dir.path());
    // `..` and absolute paths: refused by the manifest's path rules.
    for bad in ["../secret.bin", "/etc/passwd", "a/../../secret.bin"] {
        let bundle = dir.path().join("dots");
        std::fs::create_dir_all(&bundle).unwrap();
        std::fs::write(
            bundle.join("modelport.json"),
            manifest("tiny", &[(bad, &data)]),
        )
        .unwrap();
        let err = import(&store, &bundle).unwrap_err();
        match &err {
            StoreError::InvalidManifest { problems, .. } => {
                assert!(problems.has("/variants/0/file/path"), "{err}")
            }
            other => panic!("{bad}: {other}"),
        }
    }
    // A symlink inside the bundle that points out of it.
    let bundle = write_bundle(&dir.path().join("link"), "tiny", &[("w.bin", &data)]);
    std::fs::remove_file(bundle.join("w.bin")).unwrap();
    std::os::unix::fs::symlink(&secret, bundle.join("w.bin")).unwrap();
    let err = import(&store, &bundle).unwrap_err();
    assert!(
        matches!(err, StoreError::PathEscape { ref path, .. } if path == "w.bin"),
        "{err}"
    );
    // (A symlinked folder out of an MLC package: `a_symlinked_folder_out_of_an_mlc_package_is_refused`.)
    assert_untouched(&store);
}

#[test]
fn a_url_file_in_a_local_bundle_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let data = bytes(64, 6);
    let bundle = write_bundle(&dir.path().join("b"), "tiny", &[("w.bin", &data)]);
    let text = std::fs::read_to_string(bundle.join("modelport.json")).unwrap();
    let text = text.replace(
        "\"path\": \"w.bin\"",
        "\"url\": \"https://example.test/w.bin\"",
    );
    std::fs::write(bundle.join("modelport.json"), text).unwrap();
    let store = open(dir.path());
    let err = import(&store, &bundle).unwrap_err();
    assert!(
        matches!(err, StoreError::RemoteFileInLocalBundle { ref pointer, .. } if pointer == "/variants/0/file"),
        "{err}"
    );
    assert_untouched(&store);
}

#[test]
fn an_mlc_package_is_imported_with_every_file() {
    let dir = tempfile::tempdir().unwrap();
    let package = references::repo_root().join("examples/mlc/tiny-package");
    let store = open(dir.path());
    let record = import(&store, &package).unwrap();
    assert_eq!(record.id, "tiny-package");
    let model = store.resolve("tiny-package").unwrap();
    let mut names: Vec<&str> = model.files.keys().map(String::as_str).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "mlc-chat-config.json",
            "mlc-model-manifest.json",
            "params_shard_0.bin",
            "params_shard_1.bin",
            "program.json",
            "tensor-cache.json"
        ]
    );
    for (name, blob) in &model.files {
        assert_eq!(
            std::fs::read(blob).unwrap(),
            std::fs::read(package.join(name)).unwrap(),
            "{name}"
        );
    }
    // A package with a missing shard is refused by the package checks, before any copy.
    let broken = dir.path().join("broken");
    std::fs::create_dir_all(&broken).unwrap();
    for name in names.iter().filter(|n| **n != "params_shard_1.bin") {
        std::fs::copy(package.join(name), broken.join(name)).unwrap();
    }
    let other = Store::open(dir.path().join("other")).unwrap();
    let err = import(&other, &broken).unwrap_err();
    assert!(matches!(err, StoreError::InvalidManifest { .. }), "{err}");
    assert!(err.to_string().contains("params_shard_1.bin"), "{err}");
    assert_untouched(&other);
}

#[test]
fn a_symlinked_folder_out_of_an_mlc_package_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let package = references::repo_root().join("examples/mlc/tiny-package");
    let copy = dir.path().join("pkg");
    std::fs::create_dir_all(&copy).unwrap();
    for e in std::fs::read_dir(&package).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, copy.join(p.file_name().unwrap())).unwrap();
    }
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("x"), b"x").unwrap();
    std::os::unix::fs::symlink(&outside, copy.join("linked")).unwrap();
    let store = open(dir.path());
    let err = import(&store, &copy).unwrap_err();
    assert!(matches!(err, StoreError::PathEscape { .. }), "{err}");
    assert_untouched(&store);
}

/// A small valid GGUF model file: metadata as a converter writes it and one tensor.
fn tiny_gguf(name: Option<&str>, context: u32) -> Vec<u8> {
    use gpuport_gguf::{GgufWriter, Value};
    let mut w = GgufWriter::new();
    w.meta("general.architecture", Value::String("llama".into()));
    if let Some(name) = name {
        w.meta("general.name", Value::String(name.into()));
    }
    w.meta("llama.context_length", Value::U32(context)).tensor(
        "token_embd.weight",
        &[32, 150],
        8,
        bytes(150 * 34, 9),
    );
    w.to_bytes()
}

#[test]
fn a_bare_gguf_gets_the_manifest_modelport_import_gguf_writes() {
    let dir = tempfile::tempdir().unwrap();
    // One file named in its metadata, with a trained context shorter than the default; one
    // without a name.
    for (name, context) in [(Some("Tiny Model GGUF"), 2048), (None, 8192)] {
        let gguf = dir.path().join("tiny-model-Q8_0.gguf");
        let data = tiny_gguf(name, context);
        std::fs::write(&gguf, &data).unwrap();
        let store = open(&dir.path().join(format!("store-{context}")));
        let options = ImportOptions {
            gguf: gpuport_store::GgufOptions {
                license: "MIT".into(),
                ..Default::default()
            },
            ..Default::default()
        };
        let record = store.import(&gguf, &options, &NoProgress).unwrap();
        let expected_id = if name.is_some() {
            "tiny-model"
        } else {
            "tiny-model-q8_0"
        };
        assert_eq!(record.id, expected_id);
        let model = store.resolve(&record.id).unwrap();
        assert_eq!(
            std::fs::read(&model.files["gguf-q8_0/model.gguf"]).unwrap(),
            data
        );
        let ours: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&model.manifest).unwrap()).unwrap();
        assert_eq!(ours["llm"]["context_length"], context.min(4096));

        if !references::modelport_available() {
            continue;
        }
        let out = dir.path().join(format!("ref-{context}"));
        let status = std::process::Command::new("modelport")
            .args(["import-gguf", "--license", "MIT", "-o"])
            .arg(&out)
            .arg(&gguf)
            .output()
            .unwrap();
        assert!(
            status.status.success(),
            "{}",
            String::from_utf8_lossy(&status.stderr)
        );
        let bundle = std::fs::read_dir(&out)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let mut theirs: serde_json::Value =
            serde_json::from_slice(&std::fs::read(bundle.join("modelport.json")).unwrap()).unwrap();
        let mut ours = ours;
        if name.is_none() {
            // Without `general.name` modelport names the model `unknown`; gpuport takes the
            // file stem (documented in store/src/gguf.rs). Every other field is identical.
            assert_eq!(theirs["id"], "unknown");
            for doc in [&mut ours, &mut theirs] {
                let obj = doc.as_object_mut().unwrap();
                obj.remove("id");
                obj.remove("name");
            }
        }
        assert_eq!(ours, theirs);
        assert_eq!(
            std::fs::read(bundle.join("gguf-q8_0/model.gguf")).unwrap(),
            data
        );
    }
}

#[test]
fn a_gguf_that_is_not_a_model_is_refused_before_anything_is_stored() {
    use gpuport_gguf::{GgufWriter, Value};
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let mut no_arch = GgufWriter::new();
    no_arch.tensor("t", &[32], 8, vec![0; 34]);
    let mut no_tensors = GgufWriter::new();
    no_tensors.meta("general.architecture", Value::String("llama".into()));
    // Issue 18's fuzz find: a v2 file with a zero-size tensor whose data section would start
    // past its end.
    let mut past_end = GgufWriter::new();
    past_end
        .meta("general.architecture", Value::String("llama".into()))
        .tensor("empty", &[0], 0, Vec::new());
    let mut past_end = past_end.to_bytes();
    past_end.truncate(past_end.len() - 1);
    let mut truncated = tiny_gguf(Some("t"), 2048);
    truncated.truncate(truncated.len() - 10);
    for (file, bytes) in [
        ("no-arch.gguf", no_arch.to_bytes()),
        ("no-tensors.gguf", no_tensors.to_bytes()),
        ("past-end.gguf", past_end),
        ("truncated.gguf", truncated),
    ] {
        let path = dir.path().join(file);
        std::fs::write(&path, bytes).unwrap();
        let err = import(&store, &path).unwrap_err();
        assert!(
            matches!(err, StoreError::InvalidGguf { .. }),
            "{file}: {err}"
        );
        assert!(err.is_invalid_content());
        assert!(err.to_string().contains(file), "{err}");
        assert_untouched(&store);
    }
}

#[test]
fn a_file_without_the_gguf_magic_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("x.gguf");
    std::fs::write(&fake, b"not a model").unwrap();
    let store = open(dir.path());
    assert!(matches!(import(&store, &fake), Err(StoreError::NotGguf(_))));
    assert!(matches!(
        import(&store, dir.path()),
        Err(StoreError::UnknownSource(_))
    ));
    let options = ImportOptions {
        id: Some("Bad Id".into()),
        ..Default::default()
    };
    let bundle = write_bundle(&dir.path().join("b"), "tiny", &[("w.bin", b"w")]);
    assert!(matches!(
        store.import(&bundle, &options, &NoProgress),
        Err(StoreError::InvalidId(_))
    ));
    assert_untouched(&store);
}

#[test]
fn the_real_smollm2_gguf_imports_with_its_known_digest() {
    let Some(path) = references::model("SmolLM2-135M-Instruct.Q4_1.gguf") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let record = import(&store, &path).unwrap();
    let file = &record.files["gguf-q4_1/model.gguf"];
    // xtask/src/models.rs records the same size and digest.
    assert_eq!(file.size, 98_362_432);
    assert_eq!(
        file.sha256,
        "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
    );
    assert_eq!(
        sha256_file(&store.blob_path(&file.sha256)).unwrap().0,
        file.sha256
    );
}

#[test]
fn evict_rm_and_gc_free_exactly_the_unshared_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let shared = bytes(50_000, 10);
    let only_a = bytes(20_000, 11);
    let only_b = bytes(30_000, 12);
    let a = write_bundle(
        &dir.path().join("a"),
        "model-a",
        &[("s.bin", &shared), ("a.bin", &only_a)],
    );
    let b = write_bundle(
        &dir.path().join("b"),
        "model-b",
        &[("s.bin", &shared), ("b.bin", &only_b)],
    );
    let store = open(dir.path());
    import(&store, &a).unwrap();
    import(&store, &b).unwrap();
    assert_eq!(blob_count(store.root()), 5);

    let manifest_a = std::fs::metadata(a.join("modelport.json")).unwrap().len();
    assert_eq!(store.evict("model-a").unwrap(), 20_000 + manifest_a);
    let status: Vec<(String, Presence)> = store
        .list()
        .unwrap()
        .into_iter()
        .map(|s| (s.id, s.state))
        .collect();
    assert_eq!(
        status,
        [
            ("model-a".into(), Presence::Partial),
            ("model-b".into(), Presence::Cached)
        ]
    );
    assert_eq!(store.record("model-a").unwrap().state, RecordState::Evicted);
    assert!(matches!(
        store.resolve("model-a"),
        Err(StoreError::Incomplete { missing: 2, .. })
    ));

    // Removing b frees its own file, its manifest and now the shared file (a is evicted).
    let manifest_b = std::fs::metadata(b.join("modelport.json")).unwrap().len();
    assert_eq!(
        store.remove("model-b").unwrap(),
        50_000 + 30_000 + manifest_b
    );
    assert_eq!(blob_count(store.root()), 0);
    assert!(matches!(
        store.record("model-b"),
        Err(StoreError::UnknownModel(_))
    ));

    // Re-importing brings a back; gc removes an orphan blob, temp files and stale partials.
    import(&store, &a).unwrap();
    assert_eq!(store.list().unwrap()[0].state, Presence::Cached);
    let orphan = sha256_hex(b"orphan");
    std::fs::create_dir_all(store.blob_path(&orphan).parent().unwrap()).unwrap();
    std::fs::write(store.blob_path(&orphan), b"orphan").unwrap();
    std::fs::write(store.root().join("tmp/.tmpXYZ"), b"half a file").unwrap();
    std::fs::write(store.root().join(format!("partial/{orphan}.part")), b"orp").unwrap();
    let report = store.gc().unwrap();
    assert_eq!(
        (report.orphan_blobs, report.temp_files, report.partial_files),
        (1, 1, 1)
    );
    assert_eq!(report.bytes_freed, 6 + 11 + 3);
    assert_eq!(blob_count(store.root()), 3);
    assert!(store.resolve("model-a").is_ok());
}

#[test]
fn a_failed_re_import_leaves_the_previous_model_resolvable_and_gc_keeps_its_blobs() {
    let dir = tempfile::tempdir().unwrap();
    let old = bytes(200_000, 21);
    let bundle = write_bundle(&dir.path().join("v1"), "tiny", &[("w.bin", &old)]);
    let store = open(dir.path());
    import(&store, &bundle).unwrap();
    let before = store.record("tiny").unwrap();

    // Version 2 declares new bytes but the file on disk differs: a digest mismatch.
    let declared = bytes(200_000, 22);
    let v2 = write_bundle(&dir.path().join("v2"), "tiny", &[("w.bin", &declared)]);
    std::fs::write(v2.join("w.bin"), bytes(200_000, 23)).unwrap();
    let err = import(&store, &v2).unwrap_err();
    assert!(matches!(err, StoreError::DigestMismatch { .. }), "{err}");

    assert_eq!(store.record("tiny").unwrap(), before);
    store.gc().unwrap();
    let model = store.resolve("tiny").unwrap();
    assert_eq!(std::fs::read(&model.files["w.bin"]).unwrap(), old);
    assert!(files_under(&store.root().join("pending")).is_empty());
    assert_blobs_sound(store.root());

    // A failed import of a fresh id leaves no phantom model.
    let fresh = write_bundle(&dir.path().join("v3"), "other", &[("w.bin", &declared)]);
    std::fs::write(fresh.join("w.bin"), bytes(200_000, 23)).unwrap();
    assert!(import(&store, &fresh).is_err());
    let ids: Vec<String> = store.list().unwrap().into_iter().map(|m| m.id).collect();
    assert_eq!(ids, ["tiny"]);
    assert!(matches!(
        store.record("other"),
        Err(StoreError::UnknownModel(_))
    ));
}

#[test]
fn an_interrupted_re_import_keeps_the_old_model_and_pins_both_versions() {
    // What a kill -9 between "pending record written" and "complete record written" leaves.
    let dir = tempfile::tempdir().unwrap();
    let old = bytes(100_000, 24);
    let store = open(dir.path());
    import(
        &store,
        &write_bundle(&dir.path().join("v1"), "tiny", &[("w.bin", &old)]),
    )
    .unwrap();
    let new = bytes(100_000, 25);
    let v2 = write_bundle(&dir.path().join("v2"), "tiny", &[("w.bin", &new)]);
    let other = store.root().join("other-store");
    let scratch = Store::open(&other).unwrap();
    let mut pending = import(&scratch, &v2).unwrap();
    pending.state = RecordState::Partial;
    std::fs::write(store.root().join("pending/tiny.json"), pending.to_json()).unwrap();
    // The new weights' blob made it in before the kill.
    let new_blob = scratch.blob_path(&pending.files["w.bin"].sha256);
    let target = store.blob_path(&pending.files["w.bin"].sha256);
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    std::fs::copy(&new_blob, &target).unwrap();
    std::fs::remove_dir_all(&other).unwrap();

    store.gc().unwrap();
    assert_eq!(resolved_bytes(&store, "tiny", "w.bin"), old);
    assert!(target.exists(), "gc deleted a blob the pending record uses");
    assert_eq!(store.list().unwrap().len(), 1);

    // An unreadable pending record stops gc, evict and rm alike.
    std::fs::write(store.root().join("pending/tiny.json"), "{").unwrap();
    for err in [
        store.gc().map(|_| ()).unwrap_err(),
        store.evict("tiny").map(|_| ()).unwrap_err(),
        store.remove("tiny").map(|_| ()).unwrap_err(),
    ] {
        assert!(matches!(err, StoreError::BadDocument { .. }), "{err}");
    }
    std::fs::write(store.root().join("pending/tiny.json"), pending.to_json()).unwrap();

    // The re-run completes the new version and drops the pending record.
    import(&store, &v2).unwrap();
    assert!(files_under(&store.root().join("pending")).is_empty());
    assert_eq!(resolved_bytes(&store, "tiny", "w.bin"), new);
    store.gc().unwrap();
    assert_eq!(blob_count(store.root()), 2); // manifest + new weights
}

#[test]
fn evict_and_rm_refuse_when_a_record_is_unreadable() {
    let dir = tempfile::tempdir().unwrap();
    let data = bytes(10_000, 26);
    let store = open(dir.path());
    import(
        &store,
        &write_bundle(&dir.path().join("a"), "a", &[("w.bin", &data)]),
    )
    .unwrap();
    // An unreadable record that (for all the store can tell) uses the same blob.
    std::fs::write(store.root().join("models/b.json"), "not json").unwrap();
    let blobs = blob_count(store.root());
    for err in [
        store.evict("a").map(|_| ()).unwrap_err(),
        store.remove("a").map(|_| ()).unwrap_err(),
    ] {
        assert!(
            matches!(&err, StoreError::BadDocument { reason, .. } if reason.contains("unreadable")),
            "{err}"
        );
    }
    assert_eq!(blob_count(store.root()), blobs);
    assert_eq!(store.record("a").unwrap().state, RecordState::Complete);
}

#[test]
fn verify_finds_a_complete_model_with_a_missing_blob_inconsistent() {
    let dir = tempfile::tempdir().unwrap();
    let data = bytes(10_000, 27);
    let store = open(dir.path());
    let record = import(
        &store,
        &write_bundle(&dir.path().join("a"), "a", &[("w.bin", &data)]),
    )
    .unwrap();
    assert!(store.verify(None, false, &NoProgress).unwrap().consistent());
    std::fs::remove_file(store.blob_path(&record.files["w.bin"].sha256)).unwrap();
    let report = store.verify(None, false, &NoProgress).unwrap();
    assert!(!report.consistent());
    assert_eq!(report.lost, ["a: w.bin"]);
    // An evicted model is missing its bytes on purpose.
    store.evict("a").unwrap();
    assert!(store.verify(None, false, &NoProgress).unwrap().consistent());
}

/// Every blob file under the store, with its size.
fn blob_listing(root: &std::path::Path) -> Vec<(std::path::PathBuf, u64)> {
    let mut out: Vec<_> = files_under(&root.join("blobs"))
        .into_iter()
        .map(|p| {
            let len = std::fs::metadata(&p).unwrap().len();
            (p, len)
        })
        .collect();
    out.sort();
    out
}

/// Issue 18: an import refused part-way leaves `blobs/` exactly as it was, whatever the
/// refusal, in a store that already holds a model sharing one of the files.
#[test]
fn every_refused_import_leaves_blobs_exactly_as_they_were() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let shared = bytes(50_000, 31);
    let existing = write_bundle(&dir.path().join("existing"), "kept", &[("s.bin", &shared)]);
    import(&store, &existing).unwrap();
    let before = blob_listing(store.root());
    let first = bytes(1_300, 32);
    let second = bytes(70_000, 33);
    // Each case: a bundle whose first file (sorted) is new and stored before the refusal.
    type Spoil = fn(&std::path::Path, &[u8]);
    let cases: [(&str, Spoil); 4] = [
        ("digest", |b, second| {
            let mut other = second.to_vec();
            other[7] ^= 1;
            std::fs::write(b.join("z.bin"), other).unwrap();
        }),
        ("size", |b, second| {
            std::fs::write(b.join("z.bin"), &second[..100]).unwrap();
        }),
        ("missing", |b, _| {
            std::fs::remove_file(b.join("z.bin")).unwrap()
        }),
        ("directory", |b, _| {
            std::fs::remove_file(b.join("z.bin")).unwrap();
            std::fs::create_dir(b.join("z.bin")).unwrap();
        }),
    ];
    for (kind, spoil) in cases {
        let bundle = write_bundle(
            &dir.path().join(kind),
            "refused",
            &[("a.bin", &first), ("s.bin", &shared), ("z.bin", &second)],
        );
        spoil(&bundle, &second);
        let err = import(&store, &bundle).unwrap_err();
        assert!(
            err.is_invalid_content() || matches!(err, StoreError::Io { .. }),
            "{kind}: {err}"
        );
        assert_eq!(blob_listing(store.root()), before, "{kind}: {err}");
        assert!(store.record("refused").is_err(), "{kind}");
        assert!(files_under(&store.root().join("tmp")).is_empty(), "{kind}");
    }
    // The kept model still resolves, and a good import afterwards works.
    store.resolve("kept").unwrap();
    let good = write_bundle(&dir.path().join("good"), "refused", &[("a.bin", &first)]);
    import(&store, &good).unwrap();
    store.resolve("refused").unwrap();
}
