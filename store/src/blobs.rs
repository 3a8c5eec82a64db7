//! Getting bytes into `blobs/`: every path in goes through a temp file that is hashed while it
//! is written, compared with the expected size and digest, fsynced and only then renamed to
//! its digest's name. A blob that exists is therefore always complete and correct (until the
//! disk itself corrupts it, which `verify` finds).

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::Path;

use gpuport_manifest_core::digest::{sha256_hex, to_hex};
use sha2::{Digest, Sha256};

use crate::error::{IoContext, Result, StoreError};
use crate::layout::{Layout, persist};
use crate::lock;
use crate::progress::Progress;

/// Bytes per read: large enough that the per-chunk thread hand-off costs nothing.
const CHUNK: usize = 4 << 20;

/// Reads until `buf` is full or the reader ends; returns how much was read.
fn read_full(reader: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// Copies `reader` to `writer` and hashes it in one pass, returning the hex SHA-256 and the
/// byte count.
///
/// Hand-written pipeline (rather than `io::copy` into a hashing writer) because that is what
/// reaches `sha256sum` speed: chunk *i* is hashed on a second thread while the calling thread
/// writes chunk *i* and reads chunk *i + 1*, so the cost is max(hash, read + write) instead of
/// their sum. Errors name `from` (reads) or `to` (writes).
pub fn copy_hashing(
    reader: &mut impl Read,
    writer: &mut impl Write,
    from: &Path,
    to: &Path,
    progress: &dyn Progress,
) -> Result<(String, u64)> {
    let mut hasher = Sha256::new();
    let mut current = vec![0u8; CHUNK];
    let mut next = vec![0u8; CHUNK];
    let mut len = read_full(reader, &mut current).at(from)?;
    let mut total = 0u64;
    while len > 0 {
        let chunk = &current[..len];
        let (written, read_next) = std::thread::scope(|s| {
            let hashing = s.spawn(|| hasher.update(chunk));
            let written = writer.write_all(chunk);
            let read_next = match written {
                Ok(()) => read_full(reader, &mut next),
                Err(_) => Ok(0),
            };
            // A panic while hashing would be a bug in sha2; surface it rather than hide it.
            if let Err(panic) = hashing.join() {
                std::panic::resume_unwind(panic);
            }
            (written, read_next)
        });
        written.at(to)?;
        let read_next = read_next.at(from)?;
        total += len as u64;
        progress.advance(len as u64);
        std::mem::swap(&mut current, &mut next);
        len = read_next;
    }
    Ok((to_hex(&hasher.finalize()), total))
}

/// Whether the blob `sha256` is present with `size` bytes (content is not rehashed).
pub fn present(layout: &Layout, sha256: &str, size: u64) -> bool {
    std::fs::metadata(layout.blob_path(sha256)).is_ok_and(|m| m.is_file() && m.len() == size)
}

/// What a file is expected to be.
#[derive(Debug, Clone, Copy)]
pub struct Expected<'a> {
    /// Exact size in bytes.
    pub size: u64,
    /// Digest, when the manifest declares one.
    pub sha256: Option<&'a str>,
}

/// Blobs an operation created (rather than found already stored), so a refused import can
/// take back exactly what it added.
pub type Added = Vec<String>;

/// Copies the local file `src` into the store; returns its digest, pushed onto `added` when
/// this call created the blob.
///
/// With a declared digest the blob lock is taken first and an existing blob is reused without
/// reading `src`. Without one the file is copied and hashed, then renamed in unless a blob of
/// that digest already exists. A size or digest that differs from `expected` is refused and
/// leaves nothing behind.
pub fn store_file(
    layout: &Layout,
    src: &Path,
    label: &str,
    expected: Expected<'_>,
    progress: &dyn Progress,
    added: &mut Added,
) -> Result<String> {
    let _held = match expected.sha256 {
        Some(digest) => {
            let held = lock::blob(layout, digest)?;
            if present(layout, digest, expected.size) {
                progress.note(&format!("{label}: already in the store"));
                return Ok(digest.to_owned());
            }
            Some(held)
        }
        None => None,
    };
    let mut input = File::open(src).at(src)?;
    let mut temp = layout.temp_file()?;
    progress.start(label, expected.size);
    let temp_path = temp.path().to_path_buf();
    let copied = copy_hashing(&mut input, temp.as_file_mut(), src, &temp_path, progress);
    progress.finish();
    let (digest, size) = copied?;
    if size != expected.size {
        return Err(StoreError::SizeMismatch {
            what: src.display().to_string(),
            expected: expected.size,
            actual: size,
        });
    }
    if let Some(want) = expected.sha256
        && want != digest
    {
        return Err(StoreError::DigestMismatch {
            what: src.display().to_string(),
            expected: want.to_owned(),
            actual: digest,
        });
    }
    let _held = match _held {
        Some(held) => held,
        None => {
            let held = lock::blob(layout, &digest)?;
            if present(layout, &digest, size) {
                return Ok(digest);
            }
            held
        }
    };
    persist(temp, &layout.blob_path(&digest))?;
    added.push(digest.clone());
    Ok(digest)
}

/// Stores `bytes` (a manifest) as a blob; returns its digest, pushed onto `added` when this
/// call created the blob.
pub fn store_bytes(layout: &Layout, bytes: &[u8], added: &mut Added) -> Result<String> {
    let digest = sha256_hex(bytes);
    let _held = lock::blob(layout, &digest)?;
    if !present(layout, &digest, bytes.len() as u64) {
        crate::layout::write_atomic(layout, &layout.blob_path(&digest), bytes)?;
        added.push(digest.clone());
    }
    Ok(digest)
}

/// Rehashes the blob `sha256`: `Ok(true)` when its content matches its name.
pub fn rehash(layout: &Layout, sha256: &str, progress: &dyn Progress) -> Result<bool> {
    let path = layout.blob_path(sha256);
    let mut file = File::open(&path).at(&path)?;
    let size = file.metadata().at(&path)?.len();
    progress.start(&sha256[..12.min(sha256.len())], size);
    let (digest, _) = copy_hashing(&mut file, &mut io::sink(), &path, &path, progress)?;
    progress.finish();
    Ok(digest == sha256)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::progress::NoProgress;

    #[test]
    fn copy_hashing_matches_a_plain_hash_across_chunk_boundaries() {
        for len in [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK + 17] {
            let data: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
            let mut out = Vec::new();
            let p = Path::new("x");
            let (digest, n) = copy_hashing(&mut &data[..], &mut out, p, p, &NoProgress).unwrap();
            assert_eq!(n, len as u64);
            assert_eq!(digest, sha256_hex(&data));
            assert_eq!(out, data);
        }
    }
}
