//! Dequantization to f32 on the GPU, one thread per element: bit-exact with
//! [`crate::quant::dequantize`].

use bytemuck::{Pod, Zeroable};

use crate::kernel::{Family, KernelSpec};
use crate::quant::GgmlType;

/// The uniform block of `dequant.wgsl`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pod, Zeroable)]
pub struct DequantParams {
    /// Elements to write.
    pub elems: u32,
    /// Byte offset of the first unit in the weight binding (a multiple of 1,680 for Q6_K, whose
    /// groups the kernels count from the binding's start: `quant::gpu_layout`).
    pub w_offset: u32,
    /// Workgroups along x.
    pub grid_x: u32,
    /// Padding.
    pub pad: u32,
}

/// Allowed workgroup sizes.
pub const WG_VALUES: [u32; 3] = [64, 128, 256];

/// The variant for `ty` with `wg` threads per workgroup.
pub fn spec(ty: GgmlType, wg: u32) -> KernelSpec {
    KernelSpec {
        family: Family::Dequant,
        quant: Some(ty),
        reduction: None,
        constants: vec![("WG", wg)],
    }
}

/// The uniform block of `embed.wgsl`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct EmbedParams {
    /// Tokens to look up.
    pub tokens: u32,
    /// Elements per row.
    pub cols: u32,
    /// Bytes per table row.
    pub row_bytes: u32,
    /// Rows in the whole table (an id past it yields zeros).
    pub rows: u32,
    /// Multiplier (Gemma scales embeddings by sqrt(hidden)); 1 for none.
    pub scale: f32,
    /// Workgroups along x.
    pub grid_x: u32,
    /// First table row of the bound chunk.
    pub first_row: u32,
    /// Rows in the bound chunk.
    pub chunk_rows: u32,
    /// Index of the first id in the ids buffer.
    pub id_offset: u32,
    /// Padding.
    pub pad: [u32; 3],
}

/// The embedding-gather variant for a table of `ty`.
pub fn embed_spec(ty: GgmlType, wg: u32) -> KernelSpec {
    KernelSpec {
        family: Family::Embed,
        quant: Some(ty),
        reduction: None,
        constants: vec![("WG", wg)],
    }
}

/// CPU reference: rows `ids` of a `[rows, cols]` table of `ty`, times `scale` (bit-exact with
/// the kernel: one f32 multiply after the dequantization).
pub fn embed_reference(
    ty: GgmlType,
    table: &[u8],
    cols: usize,
    ids: &[u32],
    scale: f32,
) -> Vec<f32> {
    let row_bytes = ty.row_bytes(cols).unwrap_or(0);
    let rows = table.len().checked_div(row_bytes).unwrap_or(0);
    let mut out = Vec::with_capacity(ids.len() * cols);
    for &id in ids {
        let id = id as usize;
        if id >= rows {
            out.extend(std::iter::repeat_n(0.0, cols));
            continue;
        }
        let row = crate::quant::dequantize(ty, &table[id * row_bytes..(id + 1) * row_bytes]);
        out.extend(row.iter().map(|v| v * scale));
    }
    out
}
