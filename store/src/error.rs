//! The store's one error type: every refusal names the model, path, URL or digest it is about.

use std::io;
use std::path::PathBuf;

use gpuport_manifest_core::Problems;

/// Everything the store can refuse or fail at.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A file-system operation failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or folder involved.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// No store root could be found (no `--store`, no `GPUPORT_STORE`, no data directory).
    #[error("no store folder: pass --store DIR or set GPUPORT_STORE")]
    NoRoot,
    /// A model id breaks the id rules (`^[a-z0-9][a-z0-9._-]*$`, at most 128 bytes).
    #[error(
        "`{0}` is not a valid model id (lowercase letters, digits, `.`, `_`, `-`; starting with a letter or digit)"
    )]
    InvalidId(String),
    /// No record with this id.
    #[error("no model `{0}` in the store")]
    UnknownModel(String),
    /// A path that is not a ModelPort bundle, an MLC package folder or a `.gguf` file.
    #[error(
        "{0}: not a ModelPort bundle (modelport.json), an MLC package folder (mlc-model-manifest.json) or a .gguf file"
    )]
    UnknownSource(PathBuf),
    /// A manifest failed validation; every problem is listed with its JSON pointer.
    #[error("{what}: invalid manifest:\n{problems}")]
    InvalidManifest {
        /// Which document.
        what: String,
        /// Every problem found.
        problems: Problems,
    },
    /// A bundle-relative path leaves the bundle (`..`, absolute, or a symlink out of it).
    #[error("{path}: refused: {reason}")]
    PathEscape {
        /// The path as written in the manifest (or found in the folder).
        path: String,
        /// Why it was refused.
        reason: String,
    },
    /// A local file is missing.
    #[error("{path}: missing (listed by the manifest)")]
    MissingFile {
        /// The file.
        path: PathBuf,
    },
    /// A file's size differs from the size declared for it.
    #[error("{what}: size is {actual} bytes, the manifest says {expected}")]
    SizeMismatch {
        /// The file or URL.
        what: String,
        /// Declared size.
        expected: u64,
        /// Measured size.
        actual: u64,
    },
    /// A file's SHA-256 differs from the digest declared for it; nothing was stored.
    #[error("{what}: SHA-256 is {actual}, expected {expected}")]
    DigestMismatch {
        /// The file or URL.
        what: String,
        /// Declared digest.
        expected: String,
        /// Measured digest.
        actual: String,
    },
    /// A local bundle names a remote (`url`) file: a local import never uses the network.
    #[error(
        "{path}: `{pointer}` is a url FileRef; a local import never uses the network (use `gpuport pull`)"
    )]
    RemoteFileInLocalBundle {
        /// The bundle.
        path: PathBuf,
        /// JSON pointer of the FileRef.
        pointer: String,
    },
    /// A URL that is not `https://` (or a redirect to one), or otherwise unusable.
    #[error("{url}: refused: {reason}")]
    InsecureUrl {
        /// The URL.
        url: String,
        /// Why.
        reason: String,
    },
    /// A server sent more bytes than the declared size.
    #[error("{url}: the server sent more than the declared {declared} bytes")]
    Oversize {
        /// The URL.
        url: String,
        /// Declared size of the file.
        declared: u64,
    },
    /// A server answered with an unusable HTTP status or headers.
    #[error("{url}: {reason}")]
    BadResponse {
        /// The URL.
        url: String,
        /// What was wrong.
        reason: String,
    },
    /// A manifest or record declares file sizes whose sum does not fit in 64 bits.
    #[error("{what}: `{field}`: the declared file sizes add up to more than 2^64 - 1 bytes")]
    SizeOverflow {
        /// The manifest or record.
        what: String,
        /// The size field whose addition overflowed.
        field: String,
    },
    /// A server answered a file request with an HTTP error status (5xx and 429 are retried
    /// within the resume budget; the partial download is kept either way).
    #[error("{url}: HTTP status {status}")]
    HttpStatus {
        /// The URL.
        url: String,
        /// The status code.
        status: u16,
    },
    /// A transfer stalled past the read timeout or could not connect in time.
    #[error("{url}: timed out ({detail})")]
    Timeout {
        /// The URL.
        url: String,
        /// Which timeout.
        detail: String,
    },
    /// Any other network failure (after the allowed resumes).
    #[error("{url}: {detail}")]
    Network {
        /// The URL.
        url: String,
        /// The transport error.
        detail: String,
    },
    /// A model record or catalog file cannot be parsed.
    #[error("{path}: {reason}")]
    BadDocument {
        /// The file.
        path: PathBuf,
        /// What is wrong, naming the field.
        reason: String,
    },
    /// A catalog has no entry with this name.
    #[error("no catalog entry `{0}` (and it is not an https:// URL)")]
    UnknownCatalogEntry(String),
    /// A catalog URL template names an environment variable that is not set.
    #[error(
        "catalog entry `{name}`: its URL needs the environment variable {variable} (an https:// base URL serving the model files)"
    )]
    CatalogVariableUnset {
        /// The catalog entry.
        name: String,
        /// The variable.
        variable: String,
    },
    /// A file that is not a GGUF file was given as one.
    #[error("{0}: not a GGUF file (no `GGUF` magic)")]
    NotGguf(PathBuf),
    /// A GGUF file whose header or tensor table does not parse, or that holds no model (no
    /// `general.architecture`, no tensors).
    #[error("{path}: not a usable GGUF model: {reason}")]
    InvalidGguf {
        /// The file.
        path: PathBuf,
        /// What the reader found.
        reason: String,
    },
    /// A model's bytes are not all in the store (partial or evicted).
    #[error(
        "model `{id}` is not fully in the store ({missing} file(s) missing): run `gpuport {hint}`"
    )]
    Incomplete {
        /// The model.
        id: String,
        /// How many files are missing.
        missing: usize,
        /// The command that brings them back.
        hint: String,
    },
    /// A stored blob no longer hashes to its name (it has been quarantined).
    #[error("blob {digest} does not match its SHA-256 (run `gpuport verify --repair`)")]
    CorruptBlob {
        /// The blob's name.
        digest: String,
    },
}

impl StoreError {
    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: io::Error) -> Self {
        StoreError::Io {
            path: path.into(),
            source,
        }
    }

    /// Whether this error says stored or downloaded bytes are wrong or refused (exit code 1),
    /// rather than a usage or I/O problem (exit code 2).
    pub fn is_invalid_content(&self) -> bool {
        matches!(
            self,
            StoreError::InvalidManifest { .. }
                | StoreError::PathEscape { .. }
                | StoreError::MissingFile { .. }
                | StoreError::SizeMismatch { .. }
                | StoreError::DigestMismatch { .. }
                | StoreError::RemoteFileInLocalBundle { .. }
                | StoreError::InsecureUrl { .. }
                | StoreError::Oversize { .. }
                | StoreError::SizeOverflow { .. }
                | StoreError::NotGguf(_)
                | StoreError::InvalidGguf { .. }
                | StoreError::Incomplete { .. }
                | StoreError::CorruptBlob { .. }
                | StoreError::UnknownSource(_)
        )
    }
}

/// `Result` with a [`StoreError`].
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// Adds a path to an `io::Result`.
pub(crate) trait IoContext<T> {
    /// Wraps the error with `path`.
    fn at(self, path: impl Into<PathBuf>) -> Result<T>;
}

impl<T> IoContext<T> for io::Result<T> {
    fn at(self, path: impl Into<PathBuf>) -> Result<T> {
        self.map_err(|e| StoreError::io(path, e))
    }
}
