//! Local sources: a ModelPort bundle, an MLC package folder, or a bare `.gguf`. The whole
//! source is validated — every path inside the folder, every file present with its declared
//! size — before one byte is copied, so a missing shard fails in milliseconds.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use gpuport_manifest_core::bundle::resolve_inside;
use gpuport_manifest_core::fileref::{FileLocation, check_relative_path};
use gpuport_manifest_core::mlc::{check_package_files, parse_package};
use gpuport_manifest_core::modelport::{MANIFEST_FILE_NAME, parse_manifest};

use crate::error::{IoContext, Result, StoreError};
use crate::record::Format;

/// The MLC package sidecar's file name.
pub const MLC_MANIFEST_FILE_NAME: &str = "mlc-model-manifest.json";

/// One file to copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedFile {
    /// Canonical path on disk (inside the source folder).
    pub source: PathBuf,
    /// Size measured during validation (and declared, where the manifest declares one).
    pub size: u64,
    /// Declared digest (ModelPort), checked while copying.
    pub sha256: Option<String>,
}

/// A validated local folder, ready to copy.
#[derive(Debug, Clone)]
pub struct LocalPlan {
    /// Manifest format.
    pub format: Format,
    /// The manifest's path inside the bundle.
    pub manifest_path: String,
    /// The manifest's bytes, exactly as on disk.
    pub manifest_bytes: Vec<u8>,
    /// The id the manifest (or folder name) suggests.
    pub default_id: String,
    /// Bundle-relative path → file, the manifest itself excluded.
    pub files: BTreeMap<String, PlannedFile>,
}

/// What kind of local source `path` is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LocalKind {
    /// A folder (or its `modelport.json`).
    Modelport(PathBuf),
    /// A folder (or its `mlc-model-manifest.json`).
    Mlc(PathBuf),
    /// A `.gguf` file.
    Gguf(PathBuf),
}

/// Classifies `path` by what it contains.
pub fn classify(path: &Path) -> Result<LocalKind> {
    let meta = fs::metadata(path).at(path)?;
    if meta.is_dir() {
        if path.join(MANIFEST_FILE_NAME).is_file() {
            return Ok(LocalKind::Modelport(path.to_path_buf()));
        }
        if path.join(MLC_MANIFEST_FILE_NAME).is_file() {
            return Ok(LocalKind::Mlc(path.to_path_buf()));
        }
        return Err(StoreError::UnknownSource(path.to_path_buf()));
    }
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let parent = || {
        path.parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf()
    };
    if name == MANIFEST_FILE_NAME {
        Ok(LocalKind::Modelport(parent()))
    } else if name == MLC_MANIFEST_FILE_NAME {
        Ok(LocalKind::Mlc(parent()))
    } else if name.to_ascii_lowercase().ends_with(".gguf") {
        Ok(LocalKind::Gguf(path.to_path_buf()))
    } else {
        Err(StoreError::UnknownSource(path.to_path_buf()))
    }
}

/// Resolves `relative` inside `root` (canonical) and checks the file is there with `size` bytes
/// (when given). Escapes are [`StoreError::PathEscape`]; absence is [`StoreError::MissingFile`].
fn locate(root: &Path, relative: &str, size: Option<u64>) -> Result<(PathBuf, u64)> {
    let escape = |reason: String| StoreError::PathEscape {
        path: relative.to_owned(),
        reason,
    };
    check_relative_path(relative).map_err(escape)?;
    let joined = root.join(relative);
    if fs::symlink_metadata(&joined).is_err() {
        return Err(StoreError::MissingFile { path: joined });
    }
    let real = resolve_inside(root, relative).map_err(escape)?;
    let meta = fs::metadata(&real).at(&real)?;
    if !meta.is_file() {
        return Err(StoreError::MissingFile { path: real });
    }
    if let Some(expected) = size
        && meta.len() != expected
    {
        return Err(StoreError::SizeMismatch {
            what: joined.display().to_string(),
            expected,
            actual: meta.len(),
        });
    }
    Ok((real, meta.len()))
}

fn canonical(dir: &Path) -> Result<PathBuf> {
    fs::canonicalize(dir).at(dir)
}

/// Validates a ModelPort bundle folder.
pub fn plan_modelport(dir: &Path) -> Result<LocalPlan> {
    let root = canonical(dir)?;
    let manifest_file = root.join(MANIFEST_FILE_NAME);
    let bytes = fs::read(&manifest_file).at(&manifest_file)?;
    let text = String::from_utf8_lossy(&bytes);
    let manifest = parse_manifest(&text)
        .map_err(|problems| StoreError::InvalidManifest {
            what: manifest_file.display().to_string(),
            problems,
        })?
        .document;
    let mut files = BTreeMap::new();
    for (pointer, file) in manifest.files() {
        let relative = match &file.location {
            FileLocation::Path(p) => p,
            FileLocation::Url(_) => {
                return Err(StoreError::RemoteFileInLocalBundle {
                    path: root.clone(),
                    pointer: pointer.to_string(),
                });
            }
        };
        let (source, size) = locate(&root, relative, Some(file.size))?;
        if let Some(PlannedFile {
            sha256: Some(other),
            ..
        }) = files.get(relative)
            && *other != file.sha256
        {
            return Err(StoreError::DigestMismatch {
                what: format!("{relative} (listed twice)"),
                expected: other.clone(),
                actual: file.sha256.clone(),
            });
        }
        files.insert(
            relative.clone(),
            PlannedFile {
                source,
                size,
                sha256: Some(file.sha256.clone()),
            },
        );
    }
    Ok(LocalPlan {
        format: Format::Modelport,
        manifest_path: MANIFEST_FILE_NAME.to_owned(),
        manifest_bytes: bytes,
        default_id: manifest.id,
        files,
    })
}

/// Every regular file under `root` (recursively; names starting with `.` skipped), as
/// bundle-relative POSIX paths. Symlinks are followed only when they stay inside `root`.
fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) -> Result<()> {
    for entry in fs::read_dir(dir).at(dir)? {
        let entry = entry.at(dir)?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            return Err(StoreError::PathEscape {
                path: entry.path().display().to_string(),
                reason: "file name is not UTF-8".into(),
            });
        };
        if name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        let relative = path
            .strip_prefix(root)
            .map_err(|_| StoreError::PathEscape {
                path: path.display().to_string(),
                reason: "outside the package folder".into(),
            })?
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        let real = resolve_inside(root, &relative).map_err(|reason| StoreError::PathEscape {
            path: relative.clone(),
            reason,
        })?;
        let meta = fs::metadata(&real).at(&real)?;
        if meta.is_dir() {
            if fs::symlink_metadata(&path).at(&path)?.is_symlink() {
                return Err(StoreError::PathEscape {
                    path: relative,
                    reason: "symlinked folders are not imported".into(),
                });
            }
            walk(root, &path, out)?;
        } else if meta.is_file() {
            out.push(relative);
        }
    }
    Ok(())
}

/// Validates an MLC package folder: the sidecar, its chat config and weights manifest, and
/// every shard at its recorded size (manifest-core's checks); then lists every file of the
/// folder (MLC files carry no digests, so they are hashed while copied).
pub fn plan_mlc(dir: &Path) -> Result<LocalPlan> {
    let root = canonical(dir)?;
    let manifest_file = root.join(MLC_MANIFEST_FILE_NAME);
    let bytes = fs::read(&manifest_file).at(&manifest_file)?;
    let text = String::from_utf8_lossy(&bytes);
    let invalid = |problems| StoreError::InvalidManifest {
        what: manifest_file.display().to_string(),
        problems,
    };
    let package = parse_package(&text).map_err(invalid)?.document;
    check_package_files(&root, &package, true).map_err(invalid)?;
    let mut paths = Vec::new();
    walk(&root, &root, &mut paths)?;
    let mut files = BTreeMap::new();
    for relative in paths {
        if relative == MLC_MANIFEST_FILE_NAME {
            continue;
        }
        let (source, size) = locate(&root, &relative, None)?;
        files.insert(
            relative,
            PlannedFile {
                source,
                size,
                sha256: None,
            },
        );
    }
    let folder = root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(LocalPlan {
        format: Format::Mlc,
        manifest_path: MLC_MANIFEST_FILE_NAME.to_owned(),
        manifest_bytes: bytes,
        default_id: id_from_name(&folder),
        files,
    })
}

/// ModelPort's `model_id` rule: the last `/` segment, lowercased, every run of characters
/// outside `[a-z0-9._-]` replaced by `-`, leading/trailing `-._` stripped.
pub fn id_from_name(name: &str) -> String {
    let last = name.trim_end_matches('/').rsplit('/').next().unwrap_or("");
    let mut out = String::new();
    let mut in_run = false;
    for c in last.to_lowercase().chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-') {
            out.push(c);
            in_run = false;
        } else if !in_run {
            out.push('-');
            in_run = true;
        }
    }
    out.trim_matches(|c| matches!(c, '-' | '.' | '_'))
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_follow_the_modelport_rule() {
        assert_eq!(id_from_name("google/ViT-B"), "vit-b");
        assert_eq!(
            id_from_name("SmolLM2 135M (Instruct)"),
            "smollm2-135m-instruct"
        );
        assert_eq!(id_from_name("__x__"), "x");
    }
}
