//! The one table of ONNX tensor element types (`TensorProto.DataType`): id, name, bits per
//! element, and which typed `*_data` field holds the values when `raw_data` does not.

/// The typed field of `TensorProto` that holds a type's values when `raw_data` is absent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypedField {
    /// `float_data` (4): `float`, `complex64` (two per element).
    Float,
    /// `int32_data` (5): every type narrower than 32 bits, each `int32` one byte or half-word
    /// of the raw layout (4- and 2-bit types: one packed byte each).
    Int32,
    /// `string_data` (6).
    String,
    /// `int64_data` (7).
    Int64,
    /// `double_data` (10): `double`, `complex128` (two per element).
    Double,
    /// `uint64_data` (11): `uint32`, `uint64`.
    Uint64,
}

/// An ONNX element type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DataType {
    /// 32-bit IEEE float.
    Float,
    /// Unsigned 8-bit integer.
    Uint8,
    /// Signed 8-bit integer.
    Int8,
    /// Unsigned 16-bit integer.
    Uint16,
    /// Signed 16-bit integer.
    Int16,
    /// Signed 32-bit integer.
    Int32,
    /// Signed 64-bit integer.
    Int64,
    /// Byte strings (UTF-8 by convention).
    String,
    /// One byte per element, 0 or 1.
    Bool,
    /// IEEE half.
    Float16,
    /// 64-bit IEEE float.
    Double,
    /// Unsigned 32-bit integer.
    Uint32,
    /// Unsigned 64-bit integer.
    Uint64,
    /// Two floats, real first.
    Complex64,
    /// Two doubles, real first.
    Complex128,
    /// bfloat16.
    Bfloat16,
    /// 8-bit float E4M3, finite (no infinities).
    Float8E4M3Fn,
    /// 8-bit float E4M3, finite, no negative zero.
    Float8E4M3Fnuz,
    /// 8-bit float E5M2.
    Float8E5M2,
    /// 8-bit float E5M2, finite, no negative zero.
    Float8E5M2Fnuz,
    /// Unsigned 4-bit integer, two per byte, first in the low nibble.
    Uint4,
    /// Signed 4-bit integer, two per byte.
    Int4,
    /// 4-bit float E2M1, two per byte.
    Float4E2M1,
    /// 8-bit exponent-only float (scales).
    Float8E8M0,
    /// Unsigned 2-bit integer, four per byte, first in the low bits.
    Uint2,
    /// Signed 2-bit integer, four per byte.
    Int2,
}

/// `(type, id, name as onnx.TensorProto spells it, bits per element, typed field)`.
const TABLE: &[(DataType, i32, &str, u32, TypedField)] = &[
    (DataType::Float, 1, "FLOAT", 32, TypedField::Float),
    (DataType::Uint8, 2, "UINT8", 8, TypedField::Int32),
    (DataType::Int8, 3, "INT8", 8, TypedField::Int32),
    (DataType::Uint16, 4, "UINT16", 16, TypedField::Int32),
    (DataType::Int16, 5, "INT16", 16, TypedField::Int32),
    (DataType::Int32, 6, "INT32", 32, TypedField::Int32),
    (DataType::Int64, 7, "INT64", 64, TypedField::Int64),
    (DataType::String, 8, "STRING", 0, TypedField::String),
    (DataType::Bool, 9, "BOOL", 8, TypedField::Int32),
    (DataType::Float16, 10, "FLOAT16", 16, TypedField::Int32),
    (DataType::Double, 11, "DOUBLE", 64, TypedField::Double),
    (DataType::Uint32, 12, "UINT32", 32, TypedField::Uint64),
    (DataType::Uint64, 13, "UINT64", 64, TypedField::Uint64),
    (DataType::Complex64, 14, "COMPLEX64", 64, TypedField::Float),
    (
        DataType::Complex128,
        15,
        "COMPLEX128",
        128,
        TypedField::Double,
    ),
    (DataType::Bfloat16, 16, "BFLOAT16", 16, TypedField::Int32),
    (
        DataType::Float8E4M3Fn,
        17,
        "FLOAT8E4M3FN",
        8,
        TypedField::Int32,
    ),
    (
        DataType::Float8E4M3Fnuz,
        18,
        "FLOAT8E4M3FNUZ",
        8,
        TypedField::Int32,
    ),
    (DataType::Float8E5M2, 19, "FLOAT8E5M2", 8, TypedField::Int32),
    (
        DataType::Float8E5M2Fnuz,
        20,
        "FLOAT8E5M2FNUZ",
        8,
        TypedField::Int32,
    ),
    (DataType::Uint4, 21, "UINT4", 4, TypedField::Int32),
    (DataType::Int4, 22, "INT4", 4, TypedField::Int32),
    (DataType::Float4E2M1, 23, "FLOAT4E2M1", 4, TypedField::Int32),
    (DataType::Float8E8M0, 24, "FLOAT8E8M0", 8, TypedField::Int32),
    (DataType::Uint2, 25, "UINT2", 2, TypedField::Int32),
    (DataType::Int2, 26, "INT2", 2, TypedField::Int32),
];

impl DataType {
    fn row(self) -> &'static (DataType, i32, &'static str, u32, TypedField) {
        TABLE
            .iter()
            .find(|r| r.0 == self)
            .unwrap_or_else(|| unreachable!("every DataType has a row"))
    }

    /// The type with ONNX id `id`, if there is one (0, UNDEFINED, is none).
    pub fn from_id(id: i32) -> Option<DataType> {
        TABLE.iter().find(|r| r.1 == id).map(|r| r.0)
    }

    /// The ONNX id.
    pub fn id(self) -> i32 {
        self.row().1
    }

    /// The name as `onnx.TensorProto.DataType` spells it (`FLOAT16`).
    pub fn name(self) -> &'static str {
        self.row().2
    }

    /// Bits per element in the raw layout (0 for strings, which have no fixed size).
    pub fn bits(self) -> u32 {
        self.row().3
    }

    /// The typed field that holds the values when `raw_data` does not.
    pub fn typed_field(self) -> TypedField {
        self.row().4
    }

    /// Bytes that `elems` elements take in the raw layout (sub-byte types packed, the last
    /// byte padded); `None` for strings or on overflow.
    pub fn raw_bytes(self, elems: u64) -> Option<u64> {
        match self.bits() {
            0 => None,
            bits => elems.checked_mul(u64::from(bits)).map(|b| b.div_ceil(8)),
        }
    }
}

impl std::fmt::Display for DataType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
