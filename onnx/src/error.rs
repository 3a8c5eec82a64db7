//! Typed errors: each names where in the model it happened, as a path of protobuf fields
//! (`graph.node[3](conv_1).attribute[0](pads)`), and the byte offset where one applies.

use std::path::PathBuf;

/// Why an ONNX file, or a tensor in it, could not be read.
#[derive(Debug, thiserror::Error)]
pub enum OnnxError {
    /// The file could not be opened, mapped or read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A length or fixed-size value runs past the end of its message.
    #[error("{at}: truncated: {need} bytes needed at byte {offset}, {have} left")]
    Truncated {
        /// Where in the model.
        at: String,
        /// The byte offset in the file.
        offset: usize,
        /// Bytes needed.
        need: u64,
        /// Bytes left in the enclosing message.
        have: u64,
    },
    /// Bytes that are not protobuf: a bad tag, varint or packed run.
    #[error("{at}: malformed protobuf: {what}")]
    Malformed {
        /// Where in the model.
        at: String,
        /// What is wrong.
        what: String,
    },
    /// A known field with the wrong wire type for its declared type.
    #[error("{at}: field `{field}` must be {want}, found {got}")]
    WireType {
        /// Where in the model.
        at: String,
        /// The field.
        field: String,
        /// The wire type its schema type needs.
        want: &'static str,
        /// The wire type found.
        got: &'static str,
    },
    /// Well-formed protobuf whose content breaks ONNX's rules (an unknown data type, a
    /// negative dimension, data that does not match the shape, a string that is not UTF-8).
    #[error("{at}: {what}")]
    Invalid {
        /// Where in the model.
        at: String,
        /// What is wrong.
        what: String,
    },
    /// Messages nested deeper than the reader allows (subgraphs of subgraphs…).
    #[error("{at}: nested more than {limit} messages deep")]
    TooDeep {
        /// Where in the model.
        at: String,
        /// The limit.
        limit: usize,
    },
    /// Something valid that this crate does not decode (a tensor's values of a type it has no
    /// host representation for, a segmented tensor).
    #[error("{at}: unsupported: {what}")]
    Unsupported {
        /// Where in the model.
        at: String,
        /// What is not supported.
        what: String,
    },
    /// A tensor's external data: a path outside the rules, a missing file, a range outside it.
    #[error("{at}: external data `{location}`: {what}")]
    External {
        /// Where in the model.
        at: String,
        /// The `location` entry.
        location: String,
        /// What is wrong.
        what: String,
    },
}

/// Where the reader is: a path of fields from the root message, for error messages.
#[derive(Debug, Clone)]
pub struct At(pub(crate) String);

impl At {
    /// The root message, named `root` (`model`, `tensor`).
    pub(crate) fn root(root: &str) -> At {
        At(root.to_string())
    }

    /// A field of the current message.
    pub(crate) fn field(&self, name: &str) -> At {
        At(format!("{}.{name}", self.0))
    }

    /// Element `i` of a repeated message field, with its name when it has one.
    pub(crate) fn item(&self, field: &str, i: usize, name: &str) -> At {
        if name.is_empty() {
            At(format!("{}.{field}[{i}]", self.0))
        } else {
            At(format!("{}.{field}[{i}]({name})", self.0))
        }
    }

    pub(crate) fn truncated(&self, offset: usize, need: u64, have: u64) -> OnnxError {
        OnnxError::Truncated {
            at: self.0.clone(),
            offset,
            need,
            have,
        }
    }

    pub(crate) fn malformed(&self, what: String) -> OnnxError {
        OnnxError::Malformed {
            at: self.0.clone(),
            what,
        }
    }

    pub(crate) fn wire(&self, field: &str, want: &'static str, got: &'static str) -> OnnxError {
        OnnxError::WireType {
            at: self.0.clone(),
            field: field.to_string(),
            want,
            got,
        }
    }

    pub(crate) fn invalid(&self, what: String) -> OnnxError {
        OnnxError::Invalid {
            at: self.0.clone(),
            what,
        }
    }

    pub(crate) fn unsupported(&self, what: String) -> OnnxError {
        OnnxError::Unsupported {
            at: self.0.clone(),
            what,
        }
    }

    pub(crate) fn external(&self, location: &str, what: String) -> OnnxError {
        OnnxError::External {
            at: self.0.clone(),
            location: location.to_string(),
            what,
        }
    }
}

impl std::fmt::Display for At {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
