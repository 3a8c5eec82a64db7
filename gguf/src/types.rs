//! The one table of ggml tensor element types: id, name, elements and bytes per block.
//!
//! Facts from ggml's type table (`ggml.c`'s `type_traits`), written here. Every type a GGUF
//! file may name is listed, so any valid file can be sized and inspected; [`GgmlType`] is the
//! subset gpuport's kernels compute with, and its block facts are read from the same table.

/// One row of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TypeInfo {
    /// ggml's type id, as stored in GGUF tensor infos.
    pub id: u32,
    /// ggml's name (`q4_K`, `f16`, …), gguf-py's spelling.
    pub name: &'static str,
    /// Elements per block.
    pub block_elems: u64,
    /// Bytes per block.
    pub block_bytes: u64,
}

const fn row(id: u32, name: &'static str, block_elems: u64, block_bytes: u64) -> TypeInfo {
    TypeInfo {
        id,
        name,
        block_elems,
        block_bytes,
    }
}

/// Every ggml type id a GGUF file can hold (ids 4, 5, 31–33 and 36–38 were removed from ggml).
pub const TYPES: &[TypeInfo] = &[
    row(0, "f32", 1, 4),
    row(1, "f16", 1, 2),
    row(2, "q4_0", 32, 18),
    row(3, "q4_1", 32, 20),
    row(6, "q5_0", 32, 22),
    row(7, "q5_1", 32, 24),
    row(8, "q8_0", 32, 34),
    row(9, "q8_1", 32, 36),
    row(10, "q2_K", 256, 84),
    row(11, "q3_K", 256, 110),
    row(12, "q4_K", 256, 144),
    row(13, "q5_K", 256, 176),
    row(14, "q6_K", 256, 210),
    row(15, "q8_K", 256, 292),
    row(16, "iq2_xxs", 256, 66),
    row(17, "iq2_xs", 256, 74),
    row(18, "iq3_xxs", 256, 98),
    row(19, "iq1_s", 256, 50),
    row(20, "iq4_nl", 32, 18),
    row(21, "iq3_s", 256, 110),
    row(22, "iq2_s", 256, 82),
    row(23, "iq4_xs", 256, 136),
    row(24, "i8", 1, 1),
    row(25, "i16", 1, 2),
    row(26, "i32", 1, 4),
    row(27, "i64", 1, 8),
    row(28, "f64", 1, 8),
    row(29, "iq1_m", 256, 56),
    row(30, "bf16", 1, 2),
    row(34, "tq1_0", 256, 54),
    row(35, "tq2_0", 256, 66),
    row(39, "mxfp4", 32, 17),
];

/// The table row of type id `id`, if ggml defines it.
pub fn type_info(id: u32) -> Option<&'static TypeInfo> {
    TYPES.iter().find(|t| t.id == id)
}

/// An element type of a GGUF tensor that gpuport's kernels execute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GgmlType {
    /// IEEE binary32.
    F32,
    /// IEEE binary16.
    F16,
    /// 32 weights: f16 scale, 4-bit quants, `(q - 8) * d`.
    Q4_0,
    /// 32 weights: f16 scale and min, 4-bit quants, `q * d + m`.
    Q4_1,
    /// 32 weights: f16 scale, 5-bit quants (high bits packed apart), `(q - 16) * d`.
    Q5_0,
    /// 32 weights: f16 scale and min, 5-bit quants, `q * d + m`.
    Q5_1,
    /// 32 weights: f16 scale, int8 quants, `q * d`.
    Q8_0,
    /// 256 weights: 8 sub-blocks with 6-bit scales and mins, 4-bit quants.
    Q4K,
    /// 256 weights: 8 sub-blocks with 6-bit scales and mins, 5-bit quants.
    Q5K,
    /// 256 weights: 16 sub-blocks with int8 scales, 6-bit quants.
    Q6K,
}

impl GgmlType {
    /// Every executed type, in ggml's numbering order.
    pub const ALL: [GgmlType; 10] = [
        GgmlType::F32,
        GgmlType::F16,
        GgmlType::Q4_0,
        GgmlType::Q4_1,
        GgmlType::Q5_0,
        GgmlType::Q5_1,
        GgmlType::Q8_0,
        GgmlType::Q4K,
        GgmlType::Q5K,
        GgmlType::Q6K,
    ];

    /// ggml's type id as stored in GGUF tensor infos.
    pub fn ggml_id(self) -> u32 {
        match self {
            GgmlType::F32 => 0,
            GgmlType::F16 => 1,
            GgmlType::Q4_0 => 2,
            GgmlType::Q4_1 => 3,
            GgmlType::Q5_0 => 6,
            GgmlType::Q5_1 => 7,
            GgmlType::Q8_0 => 8,
            GgmlType::Q4K => 12,
            GgmlType::Q5K => 13,
            GgmlType::Q6K => 14,
        }
    }

    /// The type with ggml id `id`, if gpuport executes it.
    pub fn from_ggml_id(id: u32) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.ggml_id() == id)
    }

    /// The executed type named `name` (ggml's name, exactly: `q4_K`, `f16`, ...).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }

    /// This type's row of [`TYPES`].
    pub fn info(self) -> &'static TypeInfo {
        let id = self.ggml_id();
        // Every executed type has a row (the `every_executed_type_has_a_row` test); the
        // fallback only keeps this total.
        type_info(id).unwrap_or(&TYPES[0])
    }

    /// ggml's name (`q4_K`, `f16`, ...).
    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// Elements per block.
    pub fn block_elems(self) -> usize {
        self.info().block_elems as usize
    }

    /// Bytes per block.
    pub fn block_bytes(self) -> usize {
        self.info().block_bytes as usize
    }

    /// Bytes of a row of `elems` elements, `None` if `elems` is not a whole number of blocks.
    pub fn row_bytes(self, elems: usize) -> Option<usize> {
        elems
            .is_multiple_of(self.block_elems())
            .then(|| elems / self.block_elems() * self.block_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_executed_type_has_a_row() {
        for t in GgmlType::ALL {
            let info = type_info(t.ggml_id()).expect("row");
            assert_eq!(info.id, t.ggml_id());
            assert_eq!(GgmlType::from_ggml_id(info.id), Some(t));
            assert_eq!(GgmlType::from_name(t.name()), Some(t));
        }
    }

    #[test]
    fn ids_and_names_are_unique() {
        for (i, a) in TYPES.iter().enumerate() {
            for b in &TYPES[i + 1..] {
                assert_ne!(a.id, b.id);
                assert_ne!(a.name, b.name);
            }
        }
    }
}
