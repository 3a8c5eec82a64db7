//! Progress reporting: the library calls a [`Progress`]; the CLI draws bars on a terminal and
//! passes [`NoProgress`] otherwise.

/// Receives progress of the files an operation copies, downloads or hashes.
pub trait Progress {
    /// A file starts: `label` names it, `total` is its size in bytes.
    fn start(&self, label: &str, total: u64);
    /// `bytes` more bytes of the current file are done.
    fn advance(&self, bytes: u64);
    /// The current file is done (or abandoned).
    fn finish(&self);
    /// A human-readable note (a resume, a skipped file already present).
    fn note(&self, _message: &str) {}
}

/// Reports nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;

impl Progress for NoProgress {
    fn start(&self, _label: &str, _total: u64) {}
    fn advance(&self, _bytes: u64) {}
    fn finish(&self) {}
}
