//! Where things live under the store root, and the file-system steps that keep them
//! consistent: write to a temp file in the same file system, fsync it, rename it into place,
//! fsync the folder.
//!
//! ```text
//! <root>/
//!   blobs/sha256/ab/cdef…      content, named by its SHA-256 (read-only once renamed in)
//!   models/<id>.json           one record per model
//!   pending/<id>.json          the new record of a re-import/re-pull over a complete model
//!   partial/<sha256>.part      a download in progress (resumable)
//!   tmp/                       temp files of imports and record writes
//!   quarantine/<sha256>        blobs that failed verification
//!   locks/                     lock files (see `lock.rs`)
//! ```

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use gpuport_manifest_core::fileref::is_sha256_hex;
use tempfile::NamedTempFile;

use crate::error::{IoContext, Result};

/// Paths inside one store root.
#[derive(Debug, Clone)]
pub struct Layout {
    root: PathBuf,
}

impl Layout {
    /// Creates every folder of the layout under `root` (idempotent).
    pub fn create(root: &Path) -> Result<Self> {
        let layout = Layout {
            root: root.to_path_buf(),
        };
        for dir in [
            layout.blobs_dir(),
            layout.models_dir(),
            layout.pending_dir(),
            layout.partial_dir(),
            layout.tmp_dir(),
            layout.quarantine_dir(),
            layout.locks_dir(),
        ] {
            create_dir_durably(&dir)?;
        }
        Ok(layout)
    }

    /// The store root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `blobs/sha256`.
    pub fn blobs_dir(&self) -> PathBuf {
        self.root.join("blobs").join("sha256")
    }

    /// `blobs/sha256/ab/cdef…` for digest `abcdef…`.
    pub fn blob_path(&self, sha256: &str) -> PathBuf {
        let (head, tail) = sha256.split_at(2.min(sha256.len()));
        self.blobs_dir().join(head).join(tail)
    }

    /// `models`.
    pub fn models_dir(&self) -> PathBuf {
        self.root.join("models")
    }

    /// `models/<id>.json`.
    pub fn record_path(&self, id: &str) -> PathBuf {
        self.models_dir().join(format!("{id}.json"))
    }

    /// `pending`.
    pub fn pending_dir(&self) -> PathBuf {
        self.root.join("pending")
    }

    /// `pending/<id>.json`.
    pub fn pending_path(&self, id: &str) -> PathBuf {
        self.pending_dir().join(format!("{id}.json"))
    }

    /// `partial`.
    pub fn partial_dir(&self) -> PathBuf {
        self.root.join("partial")
    }

    /// `partial/<sha256>.part`.
    pub fn partial_path(&self, sha256: &str) -> PathBuf {
        self.partial_dir().join(format!("{sha256}.part"))
    }

    /// `tmp`.
    pub fn tmp_dir(&self) -> PathBuf {
        self.root.join("tmp")
    }

    /// `quarantine`.
    pub fn quarantine_dir(&self) -> PathBuf {
        self.root.join("quarantine")
    }

    /// `locks`.
    pub fn locks_dir(&self) -> PathBuf {
        self.root.join("locks")
    }

    /// A new temp file under `tmp/` (removed on drop unless persisted).
    pub fn temp_file(&self) -> Result<NamedTempFile> {
        NamedTempFile::new_in(self.tmp_dir()).at(self.tmp_dir())
    }

    /// Every blob digest present (names that are not 64 hex digits are skipped).
    pub fn list_blobs(&self) -> Result<Vec<String>> {
        let mut out = Vec::new();
        let dir = self.blobs_dir();
        for head in fs::read_dir(&dir).at(&dir)? {
            let head = head.at(&dir)?.path();
            let Some(head_name) = head.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            if !head.is_dir() {
                continue;
            }
            for tail in fs::read_dir(&head).at(&head)? {
                let tail = tail.at(&head)?;
                if let Some(tail_name) = tail.file_name().to_str() {
                    let digest = format!("{head_name}{tail_name}");
                    if is_sha256_hex(&digest) {
                        out.push(digest);
                    }
                }
            }
        }
        out.sort();
        Ok(out)
    }
}

/// fsyncs a folder so a rename or unlink inside it is durable.
pub fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir).and_then(|d| d.sync_all()).at(dir)
}

/// Creates `dir` and any missing ancestors; each folder created is made durable by fsyncing
/// its parent (a new shard folder `blobs/sha256/ab` must survive a crash along with the blob
/// renamed into it). Returns the folders created, outermost first.
pub fn create_dir_durably(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut missing = Vec::new();
    let mut cur = Some(dir);
    while let Some(d) = cur {
        if d.as_os_str().is_empty() || d.is_dir() {
            break;
        }
        missing.push(d.to_path_buf());
        cur = d.parent();
    }
    missing.reverse();
    for d in &missing {
        match fs::create_dir(d) {
            Ok(()) => {}
            // Another process created it first; it fsyncs the parent itself, but doing it
            // again is harmless and keeps this call's promise.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(crate::StoreError::io(d, e)),
        }
        let parent = d
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        sync_dir(parent)?;
    }
    Ok(missing)
}

/// Makes `temp` (already fully written) durable and renames it to `target`, then fsyncs the
/// target's folder: after a crash, `target` is either absent/old or complete, never torn.
pub fn persist(temp: NamedTempFile, target: &Path) -> Result<()> {
    temp.as_file().sync_all().at(temp.path())?;
    let parent = target.parent().unwrap_or(Path::new("."));
    create_dir_durably(parent)?;
    temp.persist(target)
        .map_err(|e| crate::StoreError::io(target, e.error))?;
    sync_dir(parent)
}

/// Like [`persist`] for a plain file at `from` (a finished download): fsync, rename, fsync the
/// target's folder.
pub fn persist_file(file: &File, from: &Path, target: &Path) -> Result<()> {
    file.sync_all().at(from)?;
    let parent = target.parent().unwrap_or(Path::new("."));
    create_dir_durably(parent)?;
    fs::rename(from, target).at(target)?;
    sync_dir(parent)
}

/// Writes `bytes` to `target` atomically through a temp file in `layout`'s `tmp/`.
pub fn write_atomic(layout: &Layout, target: &Path, bytes: &[u8]) -> Result<()> {
    let mut temp = layout.temp_file()?;
    temp.write_all(bytes).at(temp.path())?;
    persist(temp, target)
}

/// Removes a file and fsyncs its folder; a file that is already gone is fine.
pub fn remove_durably(path: &Path) -> Result<bool> {
    match fs::remove_file(path) {
        Ok(()) => {
            if let Some(parent) = path.parent() {
                sync_dir(parent)?;
            }
            Ok(true)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(crate::StoreError::io(path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_shard_folder_is_created_with_its_missing_parents() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::create(dir.path()).unwrap();
        let shard = layout.blobs_dir().join("ab");
        assert_eq!(create_dir_durably(&shard).unwrap(), vec![shard.clone()]);
        assert!(shard.is_dir());
        // Present: nothing to create, nothing to sync.
        assert!(create_dir_durably(&shard).unwrap().is_empty());
        let deep = dir.path().join("x/y/z");
        assert_eq!(
            create_dir_durably(&deep).unwrap(),
            vec![dir.path().join("x"), dir.path().join("x/y"), deep]
        );
    }
}
