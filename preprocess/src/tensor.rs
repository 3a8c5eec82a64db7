//! A dense tensor in one of the element types the specs use, and its raw little-endian bytes
//! (the golden-file format).

use gpuport_manifest_core::modelport::DType;
use half::f16;

/// The elements of a tensor.
#[derive(Debug, Clone, PartialEq)]
pub enum TensorData {
    /// `float32`.
    F32(Vec<f32>),
    /// `float16`.
    F16(Vec<f16>),
    /// `int64`.
    I64(Vec<i64>),
    /// `int32`.
    I32(Vec<i32>),
    /// `int8`.
    I8(Vec<i8>),
    /// `uint8`.
    U8(Vec<u8>),
    /// `uint32` (MLC `image_decode` widened for WebGPU adapters).
    U32(Vec<u32>),
    /// `bool`, one byte each.
    Bool(Vec<bool>),
}

/// A dense row-major tensor.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    /// Dimensions.
    pub shape: Vec<usize>,
    /// Elements, `shape.iter().product()` of them.
    pub data: TensorData,
}

/// Smallest, largest and mean element.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TensorStats {
    /// Smallest element.
    pub min: f64,
    /// Largest element.
    pub max: f64,
    /// Mean of the elements.
    pub mean: f64,
}

/// Converts one `f64` value to `dtype` by the rules of `docs/spec/preprocess.md`: floats round to
/// nearest-even (`float16` directly from `f64`, no double rounding), integers round half to even
/// and saturate to their range, `bool` is `value != 0`.
pub(crate) fn cast_values(dtype: DType, values: impl ExactSizeIterator<Item = f64>) -> TensorData {
    fn ints<T>(values: impl Iterator<Item = f64>, lo: f64, hi: f64, to: impl Fn(f64) -> T) -> Vec<T> {
        values.map(|v| to(v.round_ties_even().clamp(lo, hi))).collect()
    }
    match dtype {
        DType::Float32 => TensorData::F32(values.map(|v| v as f32).collect()),
        DType::Float16 => TensorData::F16(values.map(f16::from_f64).collect()),
        DType::Int64 => TensorData::I64(ints(values, i64::MIN as f64, i64::MAX as f64, |v| v as i64)),
        DType::Int32 => TensorData::I32(ints(values, f64::from(i32::MIN), f64::from(i32::MAX), |v| v as i32)),
        DType::Int8 => TensorData::I8(ints(values, -128.0, 127.0, |v| v as i8)),
        DType::Uint8 => TensorData::U8(ints(values, 0.0, 255.0, |v| v as u8)),
        DType::Bool => TensorData::Bool(values.map(|v| v != 0.0).collect()),
    }
}

impl TensorData {
    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            TensorData::F32(v) => v.len(),
            TensorData::F16(v) => v.len(),
            TensorData::I64(v) => v.len(),
            TensorData::I32(v) => v.len(),
            TensorData::I8(v) => v.len(),
            TensorData::U8(v) => v.len(),
            TensorData::U32(v) => v.len(),
            TensorData::Bool(v) => v.len(),
        }
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The element type's name as the specs write it (`float32`, `uint8`, …).
    pub fn type_name(&self) -> &'static str {
        match self {
            TensorData::F32(_) => "float32",
            TensorData::F16(_) => "float16",
            TensorData::I64(_) => "int64",
            TensorData::I32(_) => "int32",
            TensorData::I8(_) => "int8",
            TensorData::U8(_) => "uint8",
            TensorData::U32(_) => "uint32",
            TensorData::Bool(_) => "bool",
        }
    }

    /// Every element as `f64` (exact for every type but the largest `int64`s).
    pub fn to_f64(&self) -> Vec<f64> {
        match self {
            TensorData::F32(v) => v.iter().map(|&x| f64::from(x)).collect(),
            TensorData::F16(v) => v.iter().map(|&x| x.to_f64()).collect(),
            TensorData::I64(v) => v.iter().map(|&x| x as f64).collect(),
            TensorData::I32(v) => v.iter().map(|&x| f64::from(x)).collect(),
            TensorData::I8(v) => v.iter().map(|&x| f64::from(x)).collect(),
            TensorData::U8(v) => v.iter().map(|&x| f64::from(x)).collect(),
            TensorData::U32(v) => v.iter().map(|&x| f64::from(x)).collect(),
            TensorData::Bool(v) => v.iter().map(|&x| f64::from(u8::from(x))).collect(),
        }
    }

    /// Raw little-endian bytes.
    pub fn to_le_bytes(&self) -> Vec<u8> {
        match self {
            TensorData::F32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            TensorData::F16(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            TensorData::I64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            TensorData::I32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            TensorData::I8(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            TensorData::U8(v) => v.clone(),
            TensorData::U32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            TensorData::Bool(v) => v.iter().map(|&x| u8::from(x)).collect(),
        }
    }
}

impl Tensor {
    /// Smallest, largest and mean element; `None` for an empty tensor.
    pub fn stats(&self) -> Option<TensorStats> {
        let values = self.data.to_f64();
        if values.is_empty() {
            return None;
        }
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        Some(TensorStats { min, max, mean })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_casts_round_half_to_even_and_saturate() {
        let values = [-300.0, -0.5, 0.5, 1.5, 2.5, 254.5, 300.0];
        let TensorData::U8(u) = cast_values(DType::Uint8, values.into_iter()) else { panic!() };
        assert_eq!(u, [0, 0, 0, 2, 2, 254, 255]);
        let TensorData::I8(i) = cast_values(DType::Int8, values.into_iter()) else { panic!() };
        assert_eq!(i, [-128, 0, 0, 2, 2, 127, 127]);
        let TensorData::Bool(b) = cast_values(DType::Bool, [0.0, -0.0, 0.1].into_iter()) else { panic!() };
        assert_eq!(b, [false, false, true]);
    }
}
