#![doc = include_str!("../README.md")]

pub mod bundle;
pub mod dtype;
mod error;
pub mod eval;
pub mod gpu;
pub mod host;
pub mod model;
pub mod npy;
pub mod reference;
pub mod tensor;
pub mod wire;

use std::path::{Path, PathBuf};

pub use dtype::{DataType, TypedField};
pub use error::OnnxError;
pub use eval::{EvalError, evaluate};
pub use host::{Data, HostTensor};
pub use model::{
    Attribute, AttributeValue, Dim, Function, Graph, Model, Node, OpsetId, SparseTensor, Type,
    ValueInfo,
};
pub use tensor::{ExternalData, Storage, Tensor, Values};
pub use wire::{Encoder, Span};

/// Where a file's bytes live.
enum Bytes {
    Mapped(memmap2::Mmap),
    Owned(Vec<u8>),
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Mapped(m) => m,
            Bytes::Owned(v) => v,
        }
    }
}

fn map(path: &Path) -> Result<Bytes, OnnxError> {
    let io = |source| OnnxError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    // Small files (test graphs, tensors) are read: a map costs more than it saves there.
    let len = file.metadata().map_err(io)?.len();
    if len < MAP_THRESHOLD {
        return std::fs::read(path).map(Bytes::Owned).map_err(io);
    }
    map_large(&file).map_err(io)
}

/// Files smaller than this are read into memory rather than mapped.
const MAP_THRESHOLD: u64 = 1 << 20;

#[allow(unsafe_code)]
fn map_large(file: &std::fs::File) -> std::io::Result<Bytes> {
    // SAFETY: the map is read-only and private to this process. The one hazard of mapping is a
    // file truncated or rewritten by another process while mapped; model files are immutable
    // once written (the store writes blobs by rename and never in place), and every span taken
    // from the map was bounds-checked against its message at parse time.
    unsafe { memmap2::Mmap::map(file) }.map(Bytes::Mapped)
}

/// An ONNX model file: its bytes (memory-mapped when large) and the decoded `ModelProto`.
/// Initializer values stay in the file until [`OnnxModel::values`] asks for them.
pub struct OnnxModel {
    bytes: Bytes,
    dir: Option<PathBuf>,
    model: Model,
}

impl std::fmt::Debug for OnnxModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OnnxModel")
            .field("bytes", &self.bytes.len())
            .field("dir", &self.dir)
            .field("nodes", &self.model.graph.nodes.len())
            .finish()
    }
}

impl OnnxModel {
    /// Reads the model at `path`; external data is looked up beside it.
    pub fn open(path: &Path) -> Result<OnnxModel, OnnxError> {
        let bytes = map(path)?;
        let model = model::parse_model(&bytes, whole(&bytes))?;
        Ok(OnnxModel {
            dir: Some(path.parent().unwrap_or(Path::new(".")).to_path_buf()),
            bytes,
            model,
        })
    }

    /// Decodes a model held in memory; `dir` is where its external data lives, if any.
    pub fn parse(bytes: Vec<u8>, dir: Option<&Path>) -> Result<OnnxModel, OnnxError> {
        let bytes = Bytes::Owned(bytes);
        let model = model::parse_model(&bytes, whole(&bytes))?;
        Ok(OnnxModel {
            bytes,
            dir: dir.map(Path::to_path_buf),
            model,
        })
    }

    /// The decoded `ModelProto`.
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// The file's bytes (what every [`Span`] of the model points into).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The values of `tensor` (an initializer or attribute tensor of this model) in the raw
    /// layout; `raw_data` is borrowed from the file, external data read from beside it.
    pub fn values<'a>(&'a self, tensor: &'a Tensor) -> Result<Values<'a>, OnnxError> {
        tensor.values(&self.bytes, self.dir.as_deref())
    }
}

fn whole(bytes: &[u8]) -> Span {
    Span {
        offset: 0,
        len: bytes.len(),
    }
}

/// A serialized `TensorProto` on its own (the `.pb` files of ONNX test data sets).
pub struct TensorFile {
    bytes: Vec<u8>,
    tensor: Tensor,
}

impl std::fmt::Debug for TensorFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.tensor.fmt(f)
    }
}

impl TensorFile {
    /// Reads the `TensorProto` file at `path`.
    pub fn open(path: &Path) -> Result<TensorFile, OnnxError> {
        let bytes = std::fs::read(path).map_err(|source| OnnxError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        TensorFile::parse(bytes)
    }

    /// Decodes a `TensorProto` held in memory.
    pub fn parse(bytes: Vec<u8>) -> Result<TensorFile, OnnxError> {
        let tensor = Tensor::parse(&bytes, whole(&bytes), &error::At::root("tensor"))?;
        Ok(TensorFile { bytes, tensor })
    }

    /// The tensor's description.
    pub fn tensor(&self) -> &Tensor {
        &self.tensor
    }

    /// Its values in the raw layout (external data is an error: a lone tensor has no model
    /// directory).
    pub fn values(&self) -> Result<Values<'_>, OnnxError> {
        self.tensor.values(&self.bytes, None)
    }
}

#[cfg(test)]
mod tests;
