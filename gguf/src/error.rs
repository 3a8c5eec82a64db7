//! Typed errors of the GGUF reader: each names the key, tensor or byte offset at fault.

use std::path::PathBuf;

/// Why a GGUF file could not be read, or a metadata lookup failed.
#[derive(Debug, thiserror::Error)]
pub enum GgufError {
    /// The file could not be opened or mapped.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file ends inside a structure.
    #[error("truncated: {what} at byte {offset} needs {need} bytes, {have} left")]
    Truncated {
        /// What was being read.
        what: String,
        /// Its byte offset.
        offset: u64,
        /// Bytes it needs.
        need: u64,
        /// Bytes left in the file.
        have: u64,
    },
    /// The first four bytes are not `GGUF`.
    #[error("not a GGUF file: magic {0:02x?}")]
    BadMagic([u8; 4]),
    /// A version this reader does not read (1, > 3, or a big-endian file).
    #[error("GGUF version {0} is not supported (little-endian versions 2 and 3 are)")]
    Version(u32),
    /// A metadata value type id outside the spec.
    #[error("metadata `{key}`: unknown value type {type_id}")]
    ValueType {
        /// The key.
        key: String,
        /// The type id read.
        type_id: u32,
    },
    /// Arrays nested deeper than the reader allows.
    #[error("metadata `{0}`: arrays nested too deeply")]
    Nesting(String),
    /// A string that is not UTF-8.
    #[error("{what} at byte {offset} is not UTF-8")]
    Utf8 {
        /// What the string is.
        what: String,
        /// Its byte offset.
        offset: u64,
    },
    /// A key that appears twice.
    #[error("metadata key `{0}` appears twice")]
    DuplicateKey(String),
    /// A tensor name that appears twice.
    #[error("tensor `{0}` appears twice")]
    DuplicateTensor(String),
    /// `general.alignment` is zero, not a power of two, or not a u32.
    #[error("general.alignment {0} is not a power of two")]
    Alignment(u64),
    /// A tensor with no, too many, or overflowing dimensions.
    #[error("tensor `{name}`: bad dimensions {dims:?}")]
    Dims {
        /// The tensor.
        name: String,
        /// Its dimensions as stored (innermost first).
        dims: Vec<u64>,
    },
    /// A tensor type this reader cannot size.
    #[error("tensor `{name}`: unknown ggml type {type_id}")]
    TensorType {
        /// The tensor.
        name: String,
        /// The type id.
        type_id: u32,
    },
    /// A tensor whose innermost dimension is not whole blocks of its type.
    #[error("tensor `{name}`: {cols} columns are not whole blocks of {block} for {ty}")]
    Blocks {
        /// The tensor.
        name: String,
        /// Innermost dimension.
        cols: u64,
        /// Elements per block.
        block: u64,
        /// Type name.
        ty: &'static str,
    },
    /// A tensor offset that is not a multiple of the alignment.
    #[error("tensor `{name}`: offset {offset} is not a multiple of the alignment {alignment}")]
    Misaligned {
        /// The tensor.
        name: String,
        /// Its offset within the data section.
        offset: u64,
        /// The file's alignment.
        alignment: u64,
    },
    /// A tensor's bytes past the end of the file.
    #[error("tensor `{name}`: bytes {start}..{end} of the data section, which has {len}")]
    OutOfBounds {
        /// The tensor.
        name: String,
        /// First byte (relative to the data section).
        start: u64,
        /// One past the last byte.
        end: u64,
        /// Bytes in the data section.
        len: u64,
    },
    /// The file has tensors but ends before its (aligned) data section starts.
    #[error(
        "tensor `{name}`: the data section would start at byte {data_offset}, past the end of the {file_len}-byte file"
    )]
    DataPastEnd {
        /// A tensor of the file.
        name: String,
        /// Where the data section would start.
        data_offset: u64,
        /// The file's length.
        file_len: u64,
    },
    /// Two tensors share bytes.
    #[error("tensors `{0}` and `{1}` overlap")]
    Overlap(String, String),
    /// A required metadata key is absent.
    #[error("metadata `{0}` is missing")]
    MissingKey(String),
    /// A metadata key holds a different type (or a value that does not fit).
    #[error("metadata `{key}`: expected {expected}, found {found}")]
    KeyType {
        /// The key.
        key: String,
        /// What the caller needed.
        expected: &'static str,
        /// What the file holds.
        found: String,
    },
    /// A required tensor is absent.
    #[error("tensor `{0}` is missing")]
    MissingTensor(String),
    /// A tensor with a shape or type the model cannot use.
    #[error("tensor `{name}`: {problem}")]
    TensorShape {
        /// The tensor.
        name: String,
        /// What is wrong.
        problem: String,
    },
}

impl GgufError {
    /// A stable code for callers and JSON output.
    pub fn code(&self) -> &'static str {
        match self {
            GgufError::Io { .. } => "NO_MODEL",
            _ => "INVALID_MODEL",
        }
    }
}
