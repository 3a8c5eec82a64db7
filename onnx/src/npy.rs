//! `.npy` files (NumPy's format, versions 1.0–3.0) read and written for [`HostTensor`]s:
//! the inputs and outputs of `gpuport onnx-run`.
//!
//! Layout: magic `\x93NUMPY`, major and minor version bytes, the header length (u16 in 1.0,
//! u32 in 2.0 and 3.0), then an ASCII (3.0: UTF-8) Python dict literal
//! `{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3), }` padded with spaces to a
//! multiple of 64 bytes and ending in `\n`, then the values, row-major unless `fortran_order`.

use std::path::Path;

use crate::dtype::DataType;
use crate::host::{Data, HostTensor};

/// Why a `.npy` file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum NpyError {
    /// The file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// Not a `.npy` file, or a header that does not parse.
    #[error("not a .npy file: {0}")]
    Format(String),
    /// A valid file this reader does not take (Fortran order, big-endian, an object dtype…).
    #[error("unsupported .npy: {0}")]
    Unsupported(String),
    /// A tensor of a type `.npy` writing has no code for here.
    #[error("cannot write {0} tensors to .npy")]
    Type(DataType),
}

const MAGIC: &[u8] = b"\x93NUMPY";

/// `(descr, type)`: the NumPy type strings read and written (`|` for one-byte types; `<` and
/// `=` are both little-endian on the machines gpuport runs on, and `=` is refused on others).
const DESCRS: &[(&str, DataType)] = &[
    ("<f4", DataType::Float),
    ("<f8", DataType::Double),
    ("|i1", DataType::Int8),
    ("<i2", DataType::Int16),
    ("<i4", DataType::Int32),
    ("<i8", DataType::Int64),
    ("|u1", DataType::Uint8),
    ("<u2", DataType::Uint16),
    ("<u4", DataType::Uint32),
    ("<u8", DataType::Uint64),
    ("|b1", DataType::Bool),
];

/// Reads the `.npy` file at `path`.
pub fn read(path: &Path) -> Result<HostTensor, NpyError> {
    let bytes = std::fs::read(path).map_err(|source| NpyError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse(&bytes)
}

/// Decodes `.npy` bytes.
pub fn parse(b: &[u8]) -> Result<HostTensor, NpyError> {
    let fmt = |m: &str| NpyError::Format(m.to_string());
    if b.len() < 10 || &b[..6] != MAGIC {
        return Err(fmt("no \\x93NUMPY magic"));
    }
    let (header_len, start) = match b[6] {
        1 => (usize::from(u16::from_le_bytes([b[8], b[9]])), 10usize),
        2 | 3 if b.len() >= 12 => (u32::from_le_bytes([b[8], b[9], b[10], b[11]]) as usize, 12),
        v => {
            return Err(NpyError::Unsupported(format!(
                "format version {v}.{}",
                b[7]
            )));
        }
    };
    let end = start
        .checked_add(header_len)
        .filter(|e| *e <= b.len())
        .ok_or_else(|| fmt("header runs past the end of the file"))?;
    let header = std::str::from_utf8(&b[start..end]).map_err(|_| fmt("header is not UTF-8"))?;
    let descr = dict_value(header, "descr").ok_or_else(|| fmt("header has no 'descr'"))?;
    let descr = descr.trim_matches(|c| c == '\'' || c == '"');
    let fortran =
        dict_value(header, "fortran_order").ok_or_else(|| fmt("header has no 'fortran_order'"))?;
    let shape = dict_value(header, "shape").ok_or_else(|| fmt("header has no 'shape'"))?;
    if fortran != "False" {
        return Err(NpyError::Unsupported("fortran_order arrays".into()));
    }
    let native = descr.replacen('=', "<", 1);
    let dtype = DESCRS
        .iter()
        .find(|(d, _)| *d == native || d.replacen('|', "<", 1) == native)
        .map(|(_, t)| *t)
        .ok_or_else(|| NpyError::Unsupported(format!("dtype {descr:?}")))?;
    let dims = shape
        .strip_prefix('(')
        .and_then(|s| s.strip_suffix(')'))
        .ok_or_else(|| fmt("'shape' is not a tuple"))?;
    let shape: Vec<usize> = dims
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<usize>()
                .map_err(|_| fmt("'shape' holds a non-integer"))
        })
        .collect::<Result<_, _>>()?;
    let elems = shape
        .iter()
        .try_fold(1usize, |a, d| a.checked_mul(*d))
        .ok_or_else(|| fmt("'shape' overflows"))?;
    let width = (dtype.bits() / 8) as usize;
    let body = &b[end..];
    if Some(body.len()) != elems.checked_mul(width) {
        return Err(fmt(&format!(
            "{} data bytes for shape {shape:?} of {descr}",
            body.len()
        )));
    }
    let data = Data::from_le_bytes(dtype, body).ok_or_else(|| fmt("data bytes"))?;
    HostTensor::new(shape, data).ok_or_else(|| fmt("data does not fill the shape"))
}

/// The text of `key`'s value in a Python dict literal (`'shape': (1, 3)` → `(1, 3)`).
fn dict_value<'h>(header: &'h str, key: &str) -> Option<&'h str> {
    let k = header
        .find(&format!("'{key}'"))
        .or_else(|| header.find(&format!("\"{key}\"")))?;
    let rest = header[k + key.len() + 2..]
        .trim_start()
        .strip_prefix(':')?
        .trim_start();
    let end = if rest.starts_with('(') {
        rest.find(')')? + 1
    } else {
        rest.find([',', '}']).unwrap_or(rest.len())
    };
    Some(rest[..end].trim())
}

/// `t` as `.npy` (version 1.0) bytes.
pub fn to_bytes(t: &HostTensor) -> Result<Vec<u8>, NpyError> {
    let dtype = t.data.dtype();
    let descr = DESCRS
        .iter()
        .find(|(_, d)| *d == dtype)
        .map(|(s, _)| *s)
        .ok_or(NpyError::Type(dtype))?;
    let shape = match t.shape.len() {
        1 => format!("({},)", t.shape[0]),
        _ => format!(
            "({})",
            t.shape
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    // Pad so that magic + version + length + header is a multiple of 64, ending in '\n'.
    let total = (10 + header.len() + 1).div_ceil(64) * 64;
    header.push_str(&" ".repeat(total - 10 - header.len() - 1));
    header.push('\n');
    let mut out = Vec::with_capacity(total + t.len() * 8);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(&t.data.to_le_bytes());
    Ok(out)
}

/// Writes `t` to `path` as `.npy`, through a temporary file renamed into place (never a
/// half-written file).
pub fn write(path: &Path, t: &HostTensor) -> Result<(), NpyError> {
    let bytes = to_bytes(t)?;
    let io = |source| NpyError::Io {
        path: path.to_path_buf(),
        source,
    };
    let tmp = path.with_extension("npy.partial");
    std::fs::write(&tmp, bytes).map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}
