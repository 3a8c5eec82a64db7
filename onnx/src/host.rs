//! Tensors on the host: a shape and typed values. What the CPU reference computes on, what
//! `.npy` files hold, and how graph inputs and outputs cross the API.

use crate::dtype::DataType;
use crate::tensor::Values;

/// Typed values, row-major.
#[derive(Debug, Clone, PartialEq)]
pub enum Data {
    /// `FLOAT`.
    F32(Vec<f32>),
    /// `DOUBLE`.
    F64(Vec<f64>),
    /// `INT8`.
    I8(Vec<i8>),
    /// `INT16`.
    I16(Vec<i16>),
    /// `INT32`.
    I32(Vec<i32>),
    /// `INT64`.
    I64(Vec<i64>),
    /// `UINT8`.
    U8(Vec<u8>),
    /// `UINT16`.
    U16(Vec<u16>),
    /// `UINT32`.
    U32(Vec<u32>),
    /// `UINT64`.
    U64(Vec<u64>),
    /// `BOOL`.
    Bool(Vec<bool>),
}

/// Applies `$body` to the vector inside any [`Data`] variant, bound as `$v`, rebuilding the
/// same variant when `$body` returns a vector (`each!(map d, v => ...)`) or returning its value.
macro_rules! each {
    (map $d:expr, $v:ident => $body:expr) => {
        match $d {
            Data::F32($v) => Data::F32($body),
            Data::F64($v) => Data::F64($body),
            Data::I8($v) => Data::I8($body),
            Data::I16($v) => Data::I16($body),
            Data::I32($v) => Data::I32($body),
            Data::I64($v) => Data::I64($body),
            Data::U8($v) => Data::U8($body),
            Data::U16($v) => Data::U16($body),
            Data::U32($v) => Data::U32($body),
            Data::U64($v) => Data::U64($body),
            Data::Bool($v) => Data::Bool($body),
        }
    };
    ($d:expr, $v:ident => $body:expr) => {
        match $d {
            Data::F32($v) => $body,
            Data::F64($v) => $body,
            Data::I8($v) => $body,
            Data::I16($v) => $body,
            Data::I32($v) => $body,
            Data::I64($v) => $body,
            Data::U8($v) => $body,
            Data::U16($v) => $body,
            Data::U32($v) => $body,
            Data::U64($v) => $body,
            Data::Bool($v) => $body,
        }
    };
}

impl Data {
    /// Elements held.
    pub fn len(&self) -> usize {
        each!(self, v => v.len())
    }

    /// Whether it holds no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The ONNX element type.
    pub fn dtype(&self) -> DataType {
        match self {
            Data::F32(_) => DataType::Float,
            Data::F64(_) => DataType::Double,
            Data::I8(_) => DataType::Int8,
            Data::I16(_) => DataType::Int16,
            Data::I32(_) => DataType::Int32,
            Data::I64(_) => DataType::Int64,
            Data::U8(_) => DataType::Uint8,
            Data::U16(_) => DataType::Uint16,
            Data::U32(_) => DataType::Uint32,
            Data::U64(_) => DataType::Uint64,
            Data::Bool(_) => DataType::Bool,
        }
    }

    /// The elements picked by `index` (each an index into `self`), of the same type.
    pub fn gather(&self, index: &[usize]) -> Data {
        each!(map self, v => index.iter().map(|i| v[*i]).collect())
    }

    /// The values in the raw layout (little-endian, bools one byte each).
    pub fn to_le_bytes(&self) -> Vec<u8> {
        match self {
            Data::Bool(v) => v.iter().map(|b| u8::from(*b)).collect(),
            Data::F32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Data::F64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Data::I8(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Data::I16(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Data::I32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Data::I64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Data::U8(v) => v.clone(),
            Data::U16(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Data::U32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Data::U64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        }
    }

    /// Values of type `dtype` from the raw layout; `None` for a type with no host form here
    /// (strings, 16-bit and 8-bit floats, sub-byte types, complex) or bytes that are not whole
    /// elements.
    pub fn from_le_bytes(dtype: DataType, b: &[u8]) -> Option<Data> {
        fn chunks<const N: usize, T>(b: &[u8], f: fn([u8; N]) -> T) -> Option<Vec<T>> {
            if !b.len().is_multiple_of(N) {
                return None;
            }
            Some(
                b.chunks_exact(N)
                    .map(|c| {
                        let mut a = [0u8; N];
                        a.copy_from_slice(c);
                        f(a)
                    })
                    .collect(),
            )
        }
        Some(match dtype {
            DataType::Float => Data::F32(chunks(b, f32::from_le_bytes)?),
            DataType::Double => Data::F64(chunks(b, f64::from_le_bytes)?),
            DataType::Int8 => Data::I8(chunks(b, i8::from_le_bytes)?),
            DataType::Int16 => Data::I16(chunks(b, i16::from_le_bytes)?),
            DataType::Int32 => Data::I32(chunks(b, i32::from_le_bytes)?),
            DataType::Int64 => Data::I64(chunks(b, i64::from_le_bytes)?),
            DataType::Uint8 => Data::U8(b.to_vec()),
            DataType::Uint16 => Data::U16(chunks(b, u16::from_le_bytes)?),
            DataType::Uint32 => Data::U32(chunks(b, u32::from_le_bytes)?),
            DataType::Uint64 => Data::U64(chunks(b, u64::from_le_bytes)?),
            DataType::Bool => Data::Bool(b.iter().map(|x| *x != 0).collect()),
            _ => return None,
        })
    }

    /// The values as `f64`s (exact for every type but 64-bit integers beyond 2^53).
    pub fn to_f64(&self) -> Vec<f64> {
        match self {
            Data::Bool(v) => v.iter().map(|b| f64::from(u8::from(*b))).collect(),
            Data::F32(v) => v.iter().map(|x| f64::from(*x)).collect(),
            Data::F64(v) => v.clone(),
            Data::I8(v) => v.iter().map(|x| f64::from(*x)).collect(),
            Data::I16(v) => v.iter().map(|x| f64::from(*x)).collect(),
            Data::I32(v) => v.iter().map(|x| f64::from(*x)).collect(),
            Data::I64(v) => v.iter().map(|x| *x as f64).collect(),
            Data::U8(v) => v.iter().map(|x| f64::from(*x)).collect(),
            Data::U16(v) => v.iter().map(|x| f64::from(*x)).collect(),
            Data::U32(v) => v.iter().map(|x| f64::from(*x)).collect(),
            Data::U64(v) => v.iter().map(|x| *x as f64).collect(),
        }
    }

    /// The values as `i64`s, when the type is an integer or bool one.
    pub fn to_i64(&self) -> Option<Vec<i64>> {
        Some(match self {
            Data::Bool(v) => v.iter().map(|b| i64::from(*b)).collect(),
            Data::I8(v) => v.iter().map(|x| i64::from(*x)).collect(),
            Data::I16(v) => v.iter().map(|x| i64::from(*x)).collect(),
            Data::I32(v) => v.iter().map(|x| i64::from(*x)).collect(),
            Data::I64(v) => v.clone(),
            Data::U8(v) => v.iter().map(|x| i64::from(*x)).collect(),
            Data::U16(v) => v.iter().map(|x| i64::from(*x)).collect(),
            Data::U32(v) => v.iter().map(|x| i64::from(*x)).collect(),
            Data::U64(v) => v.iter().map(|x| *x as i64).collect(),
            Data::F32(_) | Data::F64(_) => return None,
        })
    }
}

/// A host tensor: row-major values and their shape.
#[derive(Debug, Clone, PartialEq)]
pub struct HostTensor {
    /// The shape, outermost first (`[]` for a scalar).
    pub shape: Vec<usize>,
    /// The values; as many as the shape's product.
    pub data: Data,
}

impl HostTensor {
    /// A tensor of `shape` holding `data`; `None` when the counts differ.
    pub fn new(shape: Vec<usize>, data: Data) -> Option<HostTensor> {
        (shape.iter().product::<usize>() == data.len()).then_some(HostTensor { shape, data })
    }

    /// An `f32` tensor.
    pub fn f32(shape: Vec<usize>, v: Vec<f32>) -> Option<HostTensor> {
        HostTensor::new(shape, Data::F32(v))
    }

    /// The tensor decoded from a model's values, when its type has a host form.
    pub fn from_values(
        dtype: DataType,
        shape: Vec<usize>,
        values: &Values<'_>,
    ) -> Option<HostTensor> {
        match values {
            Values::Bytes(b) => HostTensor::new(shape, Data::from_le_bytes(dtype, b)?),
            Values::Strings(_) => None,
        }
    }

    /// Joins tensors of one type and one shape `[1, …]` along dim 0 into `[n, …]` (a batch);
    /// `None` when they differ or there are none.
    pub fn stack(parts: &[HostTensor]) -> Option<HostTensor> {
        let first = parts.first()?;
        if first.shape.first() != Some(&1)
            || parts
                .iter()
                .any(|p| p.shape != first.shape || p.data.dtype() != first.data.dtype())
        {
            return None;
        }
        let bytes: Vec<u8> = parts.iter().flat_map(|p| p.data.to_le_bytes()).collect();
        let mut shape = first.shape.clone();
        shape[0] = parts.len();
        HostTensor::new(shape, Data::from_le_bytes(first.data.dtype(), &bytes)?)
    }

    /// Item `k` of dim 0, as a `[1, …]` tensor; `None` past the end or for a scalar.
    pub fn item(&self, k: usize) -> Option<HostTensor> {
        let (&n, rest) = self.shape.split_first()?;
        if k >= n {
            return None;
        }
        let per: usize = rest.iter().product();
        let index: Vec<usize> = (k * per..(k + 1) * per).collect();
        let mut shape = self.shape.clone();
        shape[0] = 1;
        HostTensor::new(shape, self.data.gather(&index))
    }

    /// Elements.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// Whether it has no element.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
}
