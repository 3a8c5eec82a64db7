//! N `gpuport` processes pull, import and gc one store at once: every command succeeds, the
//! store is consistent afterwards, and a file the pulls share is downloaded once.
#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

mod store_common;

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use gpuport_manifest_core::digest::sha256_hex;
use store_common::https_server::HttpsServer;
use store_common::*;

const BIG: usize = 6 << 20;

/// Starts every command at once and waits for all; each must succeed.
fn run_all(store: &Path, ca: &Path, commands: &[(&str, Vec<String>)], round: u64) {
    let children: Vec<_> = commands
        .iter()
        .map(|(name, args)| {
            let child = gpuport(store, ca)
                .args(args)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            (*name, child)
        })
        .collect();
    for (name, child) in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "round {round}: {name} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// (blob path, inode) for every blob.
fn inodes(store: &Path) -> Vec<(PathBuf, u64)> {
    let mut all: Vec<(PathBuf, u64)> = files_under(&store.join("blobs"))
        .into_iter()
        .map(|p| {
            let ino = std::fs::metadata(&p).unwrap().ino();
            (p, ino)
        })
        .collect();
    all.sort();
    all
}

#[test]
fn concurrent_pulls_imports_and_gcs_keep_the_store_consistent() {
    for round in 0..3u64 {
        let dir = tempfile::tempdir().unwrap();
        let server = HttpsServer::start();
        let remote_only = bytes(BIG, 10 + round);
        let shared = bytes(BIG / 2, 20 + round);
        let local_only = bytes(BIG / 3, 30 + round);
        serve_bundle(
            &server,
            "r",
            "remote-model",
            &[("w.gguf", &remote_only), ("shared.bin", &shared)],
        );
        let bundle = write_bundle(
            &dir.path().join("bundle"),
            "local-model",
            &[("l.gguf", &local_only), ("shared.bin", &shared)],
        );
        let ca = write_ca(&server, dir.path());
        let store = dir.path().join("store");
        let url = server.url("/r/");

        let mut commands: Vec<(&str, Vec<String>)> = Vec::new();
        for _ in 0..3 {
            commands.push(("pull", vec!["pull".into(), url.clone()]));
        }
        for _ in 0..2 {
            commands.push((
                "import",
                vec!["import".into(), bundle.display().to_string()],
            ));
        }
        commands.push(("gc", vec!["gc".into()]));
        commands.push(("ls", vec!["ls".into()]));
        run_all(&store, &ca, &commands, round);

        // Each remote file crossed the wire once, whoever fetched it; the import's copy of the
        // shared file, if it came first, saved the download entirely.
        assert_eq!(
            server.bytes_served("/r/w.gguf"),
            BIG as u64,
            "round {round}"
        );
        assert!(server.bytes_served("/r/shared.bin") <= (BIG / 2) as u64);
        // Each file was written once: one complete download of each remote file at most (none
        // of the shared file if the import stored it first), and no second, partial one.
        for (path, len, at_least) in [("/r/w.gguf", BIG, 1), ("/r/shared.bin", BIG / 2, 0)] {
            let requests = server.requests_for(path);
            let complete = requests
                .iter()
                .filter(|l| l.status == 200 && l.body_bytes == len as u64)
                .count();
            assert!(
                (at_least..=1).contains(&complete) && requests.len() == complete,
                "round {round}: {path} was fetched {complete} time(s) in full: {requests:?}"
            );
        }
        let (code, out, err) = run(gpuport(&store, &ca).arg("verify"));
        assert_eq!(code, 0, "{out}{err}");
        assert_blobs_sound(&store);
        assert_eq!(
            states(&store, &ca),
            [
                ("local-model".to_owned(), "cached".to_owned()),
                ("remote-model".to_owned(), "cached".to_owned())
            ]
        );
        // manifests ×2, remote_only, shared, local_only.
        assert_eq!(files_under(&store.join("blobs")).len(), 5);
        for data in [&remote_only, &shared, &local_only] {
            let digest = sha256_hex(data);
            assert!(
                store
                    .join("blobs/sha256")
                    .join(&digest[..2])
                    .join(&digest[2..])
                    .is_file()
            );
        }

        // The same commands again: every blob is present, so none is written a second time
        // (a rewrite would rename a new inode into place) and nothing is downloaded again.
        let before = inodes(&store);
        run_all(&store, &ca, &commands, round);
        assert_eq!(
            inodes(&store),
            before,
            "round {round}: a blob was rewritten"
        );
        assert_eq!(server.bytes_served("/r/w.gguf"), BIG as u64);
    }
}
