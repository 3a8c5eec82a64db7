//! Bundle file checks: every local file a manifest names exists inside the bundle folder, is a
//! regular file, and has the declared size and SHA-256. Paths that leave the folder, directly or
//! through a symlink, are refused. `url` files are not fetched here (form only).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::digest::sha256_file;
use crate::fileref::FileRef;
use crate::problem::{Pointer, ProblemKind, Problems};

/// Resolves `relative` under `root` and proves the result stays inside `root` after every
/// symlink is followed. `root` must already be canonical.
pub fn resolve_inside(root: &Path, relative: &str) -> Result<PathBuf, String> {
    crate::fileref::check_relative_path(relative)?;
    let joined = root.join(relative);
    let real = std::fs::canonicalize(&joined).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!("`{relative}` does not exist in the bundle"),
        _ => format!("`{relative}` cannot be resolved: {e}"),
    })?;
    if !real.starts_with(root) {
        return Err(format!(
            "`{relative}` leaves the bundle folder (it resolves to {})",
            real.display()
        ));
    }
    Ok(real)
}

/// Checks `files` against the bundle at `root`: existence, containment, size, then SHA-256
/// (sizes first, so a wrong-size file fails before anything large is hashed). Each file is
/// hashed once however often it is listed.
pub fn check_files(root: &Path, files: &[(Pointer, &FileRef)]) -> Problems {
    let mut problems = Problems::default();
    let root = match std::fs::canonicalize(root) {
        Ok(r) => r,
        Err(e) => {
            let msg = format!("bundle folder {} cannot be read: {e}", root.display());
            problems.push(&Pointer::root(), ProblemKind::File, msg);
            return problems;
        }
    };
    let mut to_hash = Vec::new();
    for (at, f) in files {
        let Some(rel) = f.path() else { continue };
        let real = match resolve_inside(&root, rel) {
            Ok(p) => p,
            Err(msg) => {
                problems.push(&at.key("path"), ProblemKind::File, msg);
                continue;
            }
        };
        match std::fs::metadata(&real) {
            Ok(m) if !m.is_file() => {
                let msg = format!("`{rel}` is not a regular file");
                problems.push(&at.key("path"), ProblemKind::File, msg);
            }
            Ok(m) if m.len() != f.size => {
                let msg = format!("`{rel}` is {} bytes, the manifest says {}", m.len(), f.size);
                problems.push(&at.key("size"), ProblemKind::File, msg);
            }
            Ok(_) => to_hash.push((at, rel, real, f)),
            Err(e) => {
                let msg = format!("`{rel}` cannot be read: {e}");
                problems.push(&at.key("path"), ProblemKind::File, msg);
            }
        }
    }
    let mut digests: HashMap<PathBuf, Result<String, String>> = HashMap::new();
    for (at, rel, real, f) in to_hash {
        let digest = digests.entry(real.clone()).or_insert_with(|| {
            sha256_file(&real)
                .map(|(h, _)| h)
                .map_err(|e| e.to_string())
        });
        match digest {
            Ok(h) if *h == f.sha256 => {}
            Ok(h) => {
                let msg = format!("`{rel}` has sha256 {h}, the manifest says {}", f.sha256);
                problems.push(&at.key("sha256"), ProblemKind::File, msg);
            }
            Err(e) => {
                let msg = format!("`{rel}` cannot be read: {e}");
                problems.push(&at.key("path"), ProblemKind::File, msg);
            }
        }
    }
    problems
}
