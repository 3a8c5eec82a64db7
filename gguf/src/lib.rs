//! # gpuport-gguf
//!
//! GGUF files (versions 2 and 3, little-endian): header, metadata of every value type, tensor
//! infos, alignment, and the tensor data — memory-mapped, never copied until upload — plus a
//! small writer and [the one table of ggml types](types). No GPU dependency: the store, the
//! kernels, the LLM executor and the tools all read GGUF through this crate.
//!
//! ```
//! use gpuport_gguf::{Gguf, GgufWriter, Metadata, Value};
//!
//! let mut w = GgufWriter::new();
//! w.meta("general.architecture", Value::String("llama".into()))
//!     .tensor("token_embd.weight", &[32, 2], 8, vec![0; 2 * 34]);
//! let file = Gguf::parse(w.to_bytes())?;
//! assert_eq!(file.str("general.architecture")?, "llama");
//! let t = file.require_tensor("token_embd.weight")?;
//! assert_eq!((t.type_name(), t.shape()), ("q8_0".to_string(), vec![2, 32]));
//! assert_eq!(file.data(t).len(), 68);
//! # Ok::<(), gpuport_gguf::GgufError>(())
//! ```
//!
//! Every count, length and offset is checked against the bytes that remain before anything is
//! allocated, so a hostile file gets a typed [`GgufError`] naming the key, tensor or offset,
//! never a panic or a huge allocation.
//!
//! Layout (the GGUF spec): magic `GGUF`, u32 version, u64 tensor count, u64 metadata count,
//! metadata `(string key, u32 type, value)*`, tensor infos `(string name, u32 n_dims,
//! u64 dims[n_dims] innermost first, u32 ggml type, u64 offset)*`, padding to
//! `general.alignment` (default 32), then the data section; tensor offsets are relative to it.

mod error;
pub mod types;
mod value;
pub mod write;

use std::collections::HashMap;
use std::path::Path;

pub use error::GgufError;
pub use types::{GgmlType, TYPES, TypeInfo, type_info};
pub use value::{Metadata, Value, type_id_name};
pub use write::GgufWriter;

/// The four bytes every GGUF file starts with.
pub const MAGIC: [u8; 4] = *b"GGUF";

/// Whether the file at `path` starts with [`MAGIC`], whatever its extension (a file shorter than
/// four bytes does not). The one magic check of the workspace.
pub fn has_magic(path: &Path) -> std::io::Result<bool> {
    use std::io::Read;
    let mut magic = [0u8; 4];
    match std::fs::File::open(path)?.read_exact(&mut magic) {
        Ok(()) => Ok(magic == MAGIC),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(e),
    }
}

/// Alignment when `general.alignment` is absent.
pub const DEFAULT_ALIGNMENT: u64 = 32;
/// Deepest array nesting accepted (the spec allows arrays of arrays; real files use one level).
const MAX_NESTING: usize = 3;
/// Most dimensions a tensor may have (ggml's GGML_MAX_DIMS).
const MAX_DIMS: u32 = 4;

/// One tensor's description.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorInfo {
    /// Its name (`blk.0.attn_q.weight`).
    pub name: String,
    /// Dimensions as stored: innermost (contiguous) first.
    pub dims: Vec<u64>,
    /// The ggml type id as stored.
    pub type_id: u32,
    /// The type, when gpuport's kernels handle it.
    pub ggml: Option<GgmlType>,
    /// Byte offset within the data section.
    pub offset: u64,
    /// Bytes of data.
    pub bytes: u64,
}

impl TensorInfo {
    /// Total elements.
    pub fn elems(&self) -> u64 {
        self.dims.iter().product()
    }

    /// The shape outermost first, as the runtime's tensors take it (`[rows, cols]`).
    pub fn shape(&self) -> Vec<usize> {
        self.dims.iter().rev().map(|d| *d as usize).collect()
    }

    /// The type's name (gguf-py's spelling), known or not.
    pub fn type_name(&self) -> String {
        type_info(self.type_id)
            .map(|t| t.name.to_string())
            .unwrap_or_else(|| format!("type {}", self.type_id))
    }
}

/// Where the bytes live.
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

/// A parsed GGUF file.
pub struct Gguf {
    /// Format version (2 or 3).
    pub version: u32,
    /// Data alignment.
    pub alignment: u64,
    /// Metadata in file order.
    pub metadata: Vec<(String, Value)>,
    /// Tensor infos in file order.
    pub tensors: Vec<TensorInfo>,
    /// File offset of the data section.
    pub data_offset: u64,
    keys: HashMap<String, usize>,
    names: HashMap<String, usize>,
    bytes: Bytes,
}

impl std::fmt::Debug for Gguf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gguf")
            .field("version", &self.version)
            .field("metadata", &self.metadata.len())
            .field("tensors", &self.tensors.len())
            .field("bytes", &self.bytes.len())
            .finish()
    }
}

impl Metadata for Gguf {
    fn value(&self, key: &str) -> Option<&Value> {
        self.keys.get(key).map(|i| &self.metadata[*i].1)
    }
}

impl Gguf {
    /// Maps and parses the file at `path`.
    pub fn open(path: &Path) -> Result<Gguf, GgufError> {
        let io = |source| GgufError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = std::fs::File::open(path).map_err(io)?;
        let bytes = map(&file).map_err(io)?;
        Gguf::parse_bytes(bytes)
    }

    /// Parses a file held in memory (tests, fuzzing).
    pub fn parse(bytes: Vec<u8>) -> Result<Gguf, GgufError> {
        Gguf::parse_bytes(Bytes::Owned(bytes))
    }

    fn parse_bytes(bytes: Bytes) -> Result<Gguf, GgufError> {
        let mut r = Cursor { b: &bytes, pos: 0 };
        let magic = r.take(4, "magic")?;
        if magic != MAGIC {
            let mut m = [0u8; 4];
            m.copy_from_slice(magic);
            return Err(GgufError::BadMagic(m));
        }
        let version = r.u32("version")?;
        if !(2..=3).contains(&version) {
            return Err(GgufError::Version(version));
        }
        let n_tensors = r.u64("tensor count")?;
        let n_kv = r.u64("metadata count")?;
        // Each metadata entry takes at least 8 (key length) + 4 (type) + 1 bytes, each tensor
        // info at least 8 + 4 + 4 + 8: counts beyond that cannot be honest.
        r.plausible(n_kv, 13, "metadata count")?;
        let mut metadata = Vec::with_capacity(n_kv as usize);
        let mut keys = HashMap::new();
        for _ in 0..n_kv {
            let key = r.string("metadata key")?;
            let type_id = r.u32(&format!("type of `{key}`"))?;
            let value = r.value(&key, type_id, 0)?;
            if keys.insert(key.clone(), metadata.len()).is_some() {
                return Err(GgufError::DuplicateKey(key));
            }
            metadata.push((key, value));
        }
        let alignment = match keys.get("general.alignment").map(|i| &metadata[*i].1) {
            None => DEFAULT_ALIGNMENT,
            Some(Value::U32(a)) if *a > 0 && a.is_power_of_two() => u64::from(*a),
            Some(v) => return Err(GgufError::Alignment(v.as_i128().unwrap_or(0) as u64)),
        };
        r.plausible(n_tensors, 24, "tensor count")?;
        let mut tensors = Vec::with_capacity(n_tensors as usize);
        let mut names = HashMap::new();
        for _ in 0..n_tensors {
            let info = r.tensor_info(alignment)?;
            if names.insert(info.name.clone(), tensors.len()).is_some() {
                return Err(GgufError::DuplicateTensor(info.name));
            }
            tensors.push(info);
        }
        let data_offset = r.pos.div_ceil(alignment) * alignment;
        check_extents(&tensors, data_offset, bytes.len() as u64)?;
        Ok(Gguf {
            version,
            alignment,
            metadata,
            tensors,
            data_offset,
            keys,
            names,
            bytes,
        })
    }

    /// The tensor called `name`.
    pub fn tensor(&self, name: &str) -> Option<&TensorInfo> {
        self.names.get(name).map(|i| &self.tensors[*i])
    }

    /// The tensor called `name`, or [`GgufError::MissingTensor`].
    pub fn require_tensor(&self, name: &str) -> Result<&TensorInfo, GgufError> {
        self.tensor(name)
            .ok_or_else(|| GgufError::MissingTensor(name.to_string()))
    }

    /// The bytes of a tensor of this file. Every tensor's bytes were checked to lie inside the
    /// file when it was parsed; a [`TensorInfo`] from elsewhere that does not fit gets an empty
    /// slice rather than a panic.
    pub fn data(&self, t: &TensorInfo) -> &[u8] {
        let range = self
            .data_offset
            .checked_add(t.offset)
            .and_then(|start| Some(start..start.checked_add(t.bytes)?))
            .and_then(|r| Some(usize::try_from(r.start).ok()?..usize::try_from(r.end).ok()?));
        range.and_then(|r| self.bytes.get(r)).unwrap_or(&[])
    }

    /// Size of the whole file in bytes.
    pub fn file_bytes(&self) -> u64 {
        self.bytes.len() as u64
    }
}

/// Maps `file` read-only.
#[allow(unsafe_code)]
fn map(file: &std::fs::File) -> std::io::Result<Bytes> {
    // SAFETY: the map is read-only and private to this process. The one hazard of mapping is a
    // file truncated or rewritten by another process while mapped; model files are immutable
    // once written (the store writes blobs by rename and never in place), and every slice taken
    // from the map was bounds-checked against its length at parse time.
    let m = unsafe { memmap2::Mmap::map(file)? };
    Ok(Bytes::Mapped(m))
}

/// Every tensor — zero-sized ones too — starts and ends inside the file's data section, and no
/// two share bytes. A file whose data section would start past its end holds no tensor.
fn check_extents(tensors: &[TensorInfo], data_offset: u64, file_len: u64) -> Result<(), GgufError> {
    let len = file_len.saturating_sub(data_offset);
    let mut order: Vec<&TensorInfo> = tensors.iter().collect();
    order.sort_by_key(|t| t.offset);
    for (i, t) in order.iter().enumerate() {
        if data_offset > file_len {
            return Err(GgufError::DataPastEnd {
                name: t.name.clone(),
                data_offset,
                file_len,
            });
        }
        let end = t.offset.saturating_add(t.bytes);
        if end > len {
            return Err(GgufError::OutOfBounds {
                name: t.name.clone(),
                start: t.offset,
                end,
                len,
            });
        }
        if let Some(next) = order.get(i + 1)
            && next.offset < end
            && t.bytes > 0
            && next.bytes > 0
        {
            return Err(GgufError::Overlap(t.name.clone(), next.name.clone()));
        }
    }
    Ok(())
}

/// A bounds-checked little-endian reader.
struct Cursor<'a> {
    b: &'a [u8],
    pos: u64,
}

impl<'a> Cursor<'a> {
    fn left(&self) -> u64 {
        self.b.len() as u64 - self.pos
    }

    fn take(&mut self, n: u64, what: &str) -> Result<&'a [u8], GgufError> {
        if n > self.left() {
            return Err(GgufError::Truncated {
                what: what.to_string(),
                offset: self.pos,
                need: n,
                have: self.left(),
            });
        }
        let start = self.pos as usize;
        self.pos += n;
        Ok(&self.b[start..start + n as usize])
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], GgufError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N as u64, what)?);
        Ok(a)
    }

    fn u32(&mut self, what: &str) -> Result<u32, GgufError> {
        self.array(what).map(u32::from_le_bytes)
    }

    fn u64(&mut self, what: &str) -> Result<u64, GgufError> {
        self.array(what).map(u64::from_le_bytes)
    }

    /// Refuses a count of items of at least `min_bytes` each that cannot fit in what is left.
    fn plausible(&self, count: u64, min_bytes: u64, what: &str) -> Result<(), GgufError> {
        if count.saturating_mul(min_bytes) > self.left() {
            return Err(GgufError::Truncated {
                what: format!("{what} {count}"),
                offset: self.pos,
                need: count.saturating_mul(min_bytes),
                have: self.left(),
            });
        }
        Ok(())
    }

    fn string(&mut self, what: &str) -> Result<String, GgufError> {
        let len = self.u64(&format!("length of {what}"))?;
        let at = self.pos;
        let raw = self.take(len, what)?;
        String::from_utf8(raw.to_vec()).map_err(|_| GgufError::Utf8 {
            what: what.to_string(),
            offset: at,
        })
    }

    fn value(&mut self, key: &str, type_id: u32, depth: usize) -> Result<Value, GgufError> {
        let what = || format!("value of `{key}`");
        Ok(match type_id {
            0 => Value::U8(self.array::<1>(&what())?[0]),
            1 => Value::I8(i8::from_le_bytes(self.array(&what())?)),
            2 => Value::U16(u16::from_le_bytes(self.array(&what())?)),
            3 => Value::I16(i16::from_le_bytes(self.array(&what())?)),
            4 => Value::U32(self.u32(&what())?),
            5 => Value::I32(i32::from_le_bytes(self.array(&what())?)),
            6 => Value::F32(f32::from_le_bytes(self.array(&what())?)),
            7 => Value::Bool(self.array::<1>(&what())?[0] != 0),
            8 => Value::String(self.string(&what())?),
            9 => {
                if depth >= MAX_NESTING {
                    return Err(GgufError::Nesting(key.to_string()));
                }
                let elem = self.u32(&format!("element type of `{key}`"))?;
                let n = self.u64(&format!("length of `{key}`"))?;
                let min = match elem {
                    0 | 1 | 7 => 1,
                    2 | 3 => 2,
                    4..=6 => 4,
                    8 | 10 | 11 | 12 => 8,
                    9 => 12,
                    _ => {
                        return Err(GgufError::ValueType {
                            key: key.to_string(),
                            type_id: elem,
                        });
                    }
                };
                self.plausible(n, min, &format!("length of `{key}`"))?;
                let mut items = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    items.push(self.value(key, elem, depth + 1)?);
                }
                Value::Array(elem, items)
            }
            10 => Value::U64(self.u64(&what())?),
            11 => Value::I64(i64::from_le_bytes(self.array(&what())?)),
            12 => Value::F64(f64::from_le_bytes(self.array(&what())?)),
            _ => {
                return Err(GgufError::ValueType {
                    key: key.to_string(),
                    type_id,
                });
            }
        })
    }

    fn tensor_info(&mut self, alignment: u64) -> Result<TensorInfo, GgufError> {
        let name = self.string("tensor name")?;
        let n_dims = self.u32(&format!("dimension count of `{name}`"))?;
        if n_dims == 0 || n_dims > MAX_DIMS {
            return Err(GgufError::Dims {
                name,
                dims: Vec::new(),
            });
        }
        let mut dims = Vec::with_capacity(n_dims as usize);
        for _ in 0..n_dims {
            dims.push(self.u64(&format!("dimensions of `{name}`"))?);
        }
        let type_id = self.u32(&format!("type of `{name}`"))?;
        let offset = self.u64(&format!("offset of `{name}`"))?;
        let elems = dims
            .iter()
            .try_fold(1u64, |acc, d| acc.checked_mul(*d))
            .filter(|e| *e <= 1 << 48);
        let Some(elems) = elems else {
            return Err(GgufError::Dims { name, dims });
        };
        let Some(&TypeInfo {
            block_elems: block,
            block_bytes,
            name: ty,
            ..
        }) = type_info(type_id)
        else {
            return Err(GgufError::TensorType { name, type_id });
        };
        if !dims[0].is_multiple_of(block) {
            return Err(GgufError::Blocks {
                name,
                cols: dims[0],
                block,
                ty,
            });
        }
        if !offset.is_multiple_of(alignment) {
            return Err(GgufError::Misaligned {
                name,
                offset,
                alignment,
            });
        }
        Ok(TensorInfo {
            ggml: GgmlType::from_ggml_id(type_id),
            bytes: elems / block * block_bytes,
            name,
            dims,
            type_id,
            offset,
        })
    }
}

#[cfg(test)]
mod tests;
