//! Cross-process locks: advisory file locks (`flock` on Unix, `LockFileEx` on Windows) through
//! `std::fs::File::lock`, so the kernel releases them when a process dies, even by `kill -9`.
//!
//! Three kinds, always taken in this order (so no two processes wait on each other in a cycle):
//!
//! 1. `locks/store.lock` — *shared* by everything that adds bytes (import, pull); *exclusive*
//!    by everything that deletes or moves bytes (gc, evict, rm, verify). A gc therefore never
//!    sees a blob that an import has renamed in but not yet recorded.
//! 2. `locks/model-<id>.lock` — exclusive while a model's record and files are being written:
//!    two pulls of one model run one after the other, and the second finds every blob present.
//! 3. `locks/blob-<sha256>.lock` — exclusive while one blob is downloaded or copied, so a blob
//!    two models share is fetched once; the waiter then finds it in place.

use std::fs::{File, OpenOptions};
use std::path::Path;

use crate::error::{IoContext, Result};
use crate::layout::Layout;

/// A held lock; released on drop (or when the process exits).
#[derive(Debug)]
pub struct LockGuard {
    file: File,
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        // Closing the file releases the lock too; unlocking first just makes it prompt.
        let _ = self.file.unlock();
    }
}

fn open_lock_file(path: &Path) -> Result<File> {
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(path)
        .at(path)
}

/// Shared or exclusive access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Many holders at once.
    Shared,
    /// One holder.
    Exclusive,
}

fn lock(path: &Path, access: Access) -> Result<LockGuard> {
    let file = open_lock_file(path)?;
    match access {
        Access::Shared => file.lock_shared(),
        Access::Exclusive => file.lock(),
    }
    .at(path)?;
    Ok(LockGuard { file })
}

/// Takes the store-wide lock.
pub fn store(layout: &Layout, access: Access) -> Result<LockGuard> {
    lock(&layout.locks_dir().join("store.lock"), access)
}

/// Takes a model's lock (exclusive).
pub fn model(layout: &Layout, id: &str) -> Result<LockGuard> {
    lock(
        &layout.locks_dir().join(format!("model-{id}.lock")),
        Access::Exclusive,
    )
}

/// Takes a blob's lock (exclusive).
pub fn blob(layout: &Layout, sha256: &str) -> Result<LockGuard> {
    lock(
        &layout.locks_dir().join(format!("blob-{sha256}.lock")),
        Access::Exclusive,
    )
}
