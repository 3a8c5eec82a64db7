//! A dense tensor in one of the element types the specs use, and its raw little-endian bytes
//! (the golden-file format).

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

/// An element type a tensor can hold, with the conversion from an `f64` value by the rules of
/// `docs/spec/preprocess.md`: floats round to nearest-even (`float16` directly from `f64`, no
/// double rounding), integers round half to even and saturate to their range, `bool` is
/// `value != 0`.
pub(crate) trait Element: Copy + Send + Sync {
    fn from_f64(v: f64) -> Self;
    fn into_data(values: Vec<Self>) -> TensorData;
}

macro_rules! int_element {
    ($t:ty, $variant:ident) => {
        impl Element for $t {
            fn from_f64(v: f64) -> Self {
                // `as` saturates at the type's range (and maps NaN to 0).
                v.round_ties_even() as $t
            }
            fn into_data(values: Vec<Self>) -> TensorData {
                TensorData::$variant(values)
            }
        }
    };
}
int_element!(i64, I64);
int_element!(i32, I32);
int_element!(i8, I8);
int_element!(u8, U8);

impl Element for f32 {
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    fn into_data(values: Vec<Self>) -> TensorData {
        TensorData::F32(values)
    }
}

impl Element for f16 {
    fn from_f64(v: f64) -> Self {
        f16_from_f64(v)
    }
    fn into_data(values: Vec<Self>) -> TensorData {
        TensorData::F16(values)
    }
}

/// `f64` → `f16` rounded once, to nearest even (what numpy's `astype(np.float16)` does).
///
/// Hand-written because `half::f16::from_f64` rounds twice on x86 with F16C (through `f32`) and
/// drops the low 32 mantissa bits in its software path, both of which turn some values just
/// above a tie into the even neighbour below. Here the value is rounded to a multiple of the
/// `f16` quantum at its exponent in `f64` (exact: scaling by a power of two), and the result —
/// representable in `f16` — is converted exactly.
pub fn f16_from_f64(v: f64) -> f16 {
    let magnitude = v.abs();
    if v.is_nan() {
        return f16::NAN;
    }
    // 65520 is halfway between f16::MAX (65504) and 2^16; it and everything above round to ∞.
    if magnitude >= 65520.0 {
        return if v < 0.0 {
            f16::NEG_INFINITY
        } else {
            f16::INFINITY
        };
    }
    let smallest_normal = 2f64.powi(-14);
    let quantum = if magnitude < smallest_normal {
        2f64.powi(-24)
    } else {
        let exponent = ((magnitude.to_bits() >> 52) & 0x7ff) as i32 - 1023;
        2f64.powi(exponent - 10)
    };
    let rounded = (magnitude / quantum).round_ties_even() * quantum;
    let value = f16::from_f32(rounded as f32);
    if v.is_sign_negative() { -value } else { value }
}

impl Element for bool {
    fn from_f64(v: f64) -> Self {
        v != 0.0
    }
    fn into_data(values: Vec<Self>) -> TensorData {
        TensorData::Bool(values)
    }
}

/// Calls `f::<T>()` with `T` the Rust type of `dtype`.
macro_rules! with_element {
    ($dtype:expr, $f:ident ( $($arg:expr),* )) => {
        match $dtype {
            gpuport_manifest_core::modelport::DType::Float32 => $f::<f32>($($arg),*),
            gpuport_manifest_core::modelport::DType::Float16 => $f::<half::f16>($($arg),*),
            gpuport_manifest_core::modelport::DType::Int64 => $f::<i64>($($arg),*),
            gpuport_manifest_core::modelport::DType::Int32 => $f::<i32>($($arg),*),
            gpuport_manifest_core::modelport::DType::Int8 => $f::<i8>($($arg),*),
            gpuport_manifest_core::modelport::DType::Uint8 => $f::<u8>($($arg),*),
            gpuport_manifest_core::modelport::DType::Bool => $f::<bool>($($arg),*),
        }
    };
}
pub(crate) use with_element;

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
    /// The tensor as a NumPy `.npy` file (format 1.0: magic, a little-endian `u16` header
    /// length, a Python-literal header dict padded with spaces to a multiple of 64 bytes, then
    /// the raw little-endian C-order data). Hand-written: the format is those few lines, and the
    /// crates that write it bring an array library along.
    pub fn to_npy(&self) -> Vec<u8> {
        let descr = match self.data {
            TensorData::F32(_) => "<f4",
            TensorData::F16(_) => "<f2",
            TensorData::I64(_) => "<i8",
            TensorData::I32(_) => "<i4",
            TensorData::I8(_) => "|i1",
            TensorData::U8(_) => "|u1",
            TensorData::U32(_) => "<u4",
            TensorData::Bool(_) => "|b1",
        };
        let dims: Vec<String> = self.shape.iter().map(ToString::to_string).collect();
        let shape = match dims.len() {
            1 => format!("({},)", dims[0]),
            _ => format!("({})", dims.join(", ")),
        };
        let mut header =
            format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
        // magic (6) + version (2) + length (2) + header + '\n' is a multiple of 64.
        let used = 10 + header.len() + 1;
        header.push_str(&" ".repeat((64 - used % 64) % 64));
        header.push('\n');
        let mut out = Vec::with_capacity(10 + header.len() + self.data.len() * 8);
        out.extend_from_slice(b"\x93NUMPY\x01\x00");
        // Headers are a few hundred bytes, far below u16::MAX, for any rank this crate makes.
        out.extend_from_slice(&(header.len().min(usize::from(u16::MAX)) as u16).to_le_bytes());
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(&self.data.to_le_bytes());
        out
    }

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
    fn npy_header_is_aligned_and_describes_the_data() {
        let t = Tensor {
            shape: vec![1, 2, 3],
            data: TensorData::F16(vec![f16::ONE; 6]),
        };
        let npy = t.to_npy();
        let header_len = usize::from(u16::from_le_bytes([npy[8], npy[9]]));
        assert_eq!((10 + header_len) % 64, 0);
        let header = std::str::from_utf8(&npy[10..10 + header_len]).unwrap();
        assert!(
            header.starts_with("{'descr': '<f2', 'fortran_order': False, 'shape': (1, 2, 3), }")
        );
        assert!(header.ends_with('\n'));
        assert_eq!(npy.len(), 10 + header_len + 12);
    }

    #[test]
    fn integer_casts_round_half_to_even_and_saturate() {
        let values = [-300.0, -0.5, 0.5, 1.5, 2.5, 254.5, 300.0];
        assert_eq!(values.map(u8::from_f64), [0, 0, 0, 2, 2, 254, 255]);
        assert_eq!(values.map(i8::from_f64), [-128, 0, 0, 2, 2, 127, 127]);
        assert_eq!([0.0, -0.0, 0.1].map(bool::from_f64), [false, false, true]);
        let above_tie = f16_from_f64(1.0 + 1.0 / 2048.0 + 1e-12);
        assert_eq!(above_tie, f16::from_f32(1.0 + 1.0 / 1024.0));
        assert_eq!(f16_from_f64(1.0 + 1.0 / 2048.0), f16::ONE);
        assert_eq!(f16_from_f64(65519.9), f16::MAX);
        assert_eq!(f16_from_f64(-65520.0), f16::NEG_INFINITY);
        assert_eq!(f16_from_f64(2f64.powi(-25)), f16::ZERO);
        assert_eq!(f16_from_f64(2f64.powi(-25) * 1.5), f16::from_bits(1));
        assert_eq!(f16_from_f64(-0.1), f16::from_f32(-0.1));
        for bits in 0..0x7c00u16 {
            let exact = f16::from_bits(bits).to_f64();
            assert_eq!(f16_from_f64(exact).to_bits(), bits);
        }
    }
}
