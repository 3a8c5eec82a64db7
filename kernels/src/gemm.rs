//! GEMM with fused dequantization: `Y = X Wᵀ` for a batch of tokens (prefill), `W` a row-major
//! GGUF matrix (rows × cols), `X` and `Y` f32 token-major. Each weight element is decoded once
//! per tile of tokens, so prefill reads the weights `tokens / TM` times instead of `tokens`
//! times (the decode GEMV once per token).

use bytemuck::{Pod, Zeroable};

use crate::gemv::GemvInput;
use crate::kernel::{Family, KernelSpec};
use crate::quant::GgmlType;

/// The uniform block of `gemm.wgsl` (field meanings there).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pod, Zeroable)]
pub struct GemmParams {
    /// Rows of W (output columns).
    pub rows: u32,
    /// Columns of W (the reduction length).
    pub cols: u32,
    /// Tokens (rows of X and Y).
    pub tokens: u32,
    /// Bytes per row of W.
    pub row_bytes: u32,
    /// Byte offset of row 0 in the weight binding.
    pub w_offset: u32,
    /// Element offset of `X[0, 0]`.
    pub x_offset: u32,
    /// Elements between consecutive tokens of X.
    pub x_stride: u32,
    /// The GLU inputs: element offset of the second operand after the first.
    pub x_aux: u32,
    /// Element offset of `Y[0, 0]` (and of the residual's).
    pub y_offset: u32,
    /// Elements between consecutive tokens of Y.
    pub y_stride: u32,
    /// 1: add the residual binding.
    pub residual: u32,
    /// Padding.
    pub pad: u32,
}

/// Tokens × rows of one workgroup's output tile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GemmTile {
    /// Tokens per tile.
    pub tm: u32,
    /// Weight rows per tile.
    pub tn: u32,
}

/// Allowed tile sides (the 16 × 16 threads each own a (tm / 16) × (tn / 16) block).
pub const TILE_VALUES: [u32; 3] = [16, 32, 64];

impl GemmTile {
    /// The default tile: 32 tokens × 64 rows.
    pub const DEFAULT: GemmTile = GemmTile { tm: 32, tn: 64 };

    /// Bytes of workgroup memory the tile takes (the weight and input tiles, rows padded by
    /// one float): the 64 × 64 tile needs 16,896, over WebGPU's default 16,384.
    pub fn workgroup_bytes(self) -> u32 {
        (self.tm + self.tn) * (KC + 1) * 4
    }

    /// Every allowed tile.
    pub fn all() -> Vec<GemmTile> {
        TILE_VALUES
            .into_iter()
            .flat_map(|tm| TILE_VALUES.map(|tn| GemmTile { tm, tn }))
            .collect()
    }
}

/// Columns per reduction chunk (`KC` in `gemm.wgsl`).
pub const KC: u32 = 32;

/// Input forms the GEMM applies while loading X: plain and the two GLUs.
pub const INPUTS: [GemvInput; 3] = [GemvInput::Plain, GemvInput::SwiGlu, GemvInput::GeGlu];

/// The variant for weights of `ty`, tile `t`, input form `input` (one of [`INPUTS`]).
pub fn spec(ty: GgmlType, t: GemmTile, input: GemvInput) -> KernelSpec {
    let mut constants = vec![("TM", t.tm), ("TN", t.tn)];
    if input != GemvInput::Plain {
        constants.push(("XFORM", input.code()));
    }
    KernelSpec {
        family: Family::Gemm,
        quant: Some(ty),
        reduction: None,
        constants,
    }
}

/// CPU reference: `Y[t] = W X[t]` for each token row of `x` (`cols` elements each), the GLU
/// forms applied to rows of `2 cols`, accumulated in f64 like [`crate::gemv::reference`].
pub fn reference(
    ty: GgmlType,
    w: &[u8],
    rows: usize,
    cols: usize,
    x: &[f32],
    input: GemvInput,
) -> Vec<f32> {
    let width = input.x_len(cols);
    x.chunks(width)
        .flat_map(|row| {
            let xin = input.reference(row, &[], &[], 0.0, cols);
            crate::gemv::reference(ty, w, rows, cols, &xin[..cols])
        })
        .collect()
}
