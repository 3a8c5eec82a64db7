//! GEMV with fused dequantization: `y = W x` for a row-major GGUF matrix `W` (rows × cols),
//! f32 `x` and `y`. Decode of a batch-1 LLM is this kernel over every weight, so its figure of
//! merit is weight bytes per second against the adapter's streaming-read ceiling.

use bytemuck::{Pod, Zeroable};

use crate::kernel::{Family, KernelSpec};
use crate::quant::{GgmlType, dequantize};
use crate::rowops::ElementOp;
use crate::source::Reduction;

/// The uniform block of `gemv.wgsl` (field meanings there).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct GemvParams {
    /// Rows of W.
    pub rows: u32,
    /// Units per row.
    pub units_per_row: u32,
    /// Bytes per row.
    pub row_bytes: u32,
    /// Byte offset of row 0 in the weight binding (a multiple of 1,680 for Q6_K, whose
    /// groups the kernels count from the binding's start: `quant::gpu_layout`).
    pub w_offset: u32,
    /// Element offset of `y[0]` in the output binding.
    pub y_offset: u32,
    /// vec4 offset of `x[0]` in the input binding.
    pub x_offset: u32,
    /// Workgroups along x.
    pub grid_x: u32,
    /// 1: add the residual binding to the output.
    pub residual: u32,
    /// [`GemvInput::SwiGlu`], [`GemvInput::GeGlu`]: vec4 offset of the second operand after
    /// the first.
    pub x_aux: u32,
    /// The norm input forms: the norms' epsilon.
    pub eps: f32,
    /// The folded forms: added to the norm weights (1 for `(1 + w)` norms).
    pub w_one: f32,
    /// The folded forms: 1 = workgroup 0 writes the new residual row.
    pub write_x: u32,
    /// [`GemvInput::AttnCombine`]: elements per head.
    pub head_dim: u32,
    /// [`GemvInput::AttnCombine`]: key blocks per head.
    pub blocks: u32,
    /// Padding.
    pub pad: [u32; 2],
}

/// How the GEMV forms its input vector from the `x` binding: the operation before a
/// projection, fused so it costs no dispatch of its own (`XFORM` in `gemv.wgsl`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GemvInput {
    /// `x` as bound.
    Plain,
    /// `x / rms(x) * w`, `w` in the norm-weight binding.
    RmsNorm,
    /// `x / rms(x) * (1 + w)`.
    RmsNormPlusOne,
    /// `silu(a) * b` where `x` holds `a` then `b` (`cols` each).
    SwiGlu,
    /// `gelu_tanh(a) * b` where `x` holds `a` then `b`.
    GeGlu,
    /// A post-projection RMSNorm and its residual add folded into this projection's input
    /// RMSNorm: `x` is the last projection, the residual stream is bound apart, the norm
    /// weights hold the post-norm's then the input norm's (`w` form).
    FoldedRmsNorm,
    /// The same with `(1 + w)` norms.
    FoldedRmsNormPlusOne,
    /// The attention output of split decode attention, combined from its per-block partials
    /// (`x` = `part [heads, blocks, head_dim + 4]`, see `attn_decode.wgsl`): the second pass
    /// folded into the output projection. Built by [`GemvInput::attention_combine`], which
    /// says when it fits.
    AttnCombine {
        /// Elements per head (a multiple of 4).
        head_dim: u32,
        /// Key blocks per head.
        blocks: u32,
    },
    /// `x` holds the input vector as int8 blocks ([`Q8_BLOCK_WORDS`] words per 32 elements),
    /// written by the input-only variant in its quantized form
    /// ([`input_only_spec`]`(.., true)`): the GEMV multiplies them with `dot4I8Packed`
    /// (`gemv_q8.wgsl`; weights of the types [`takes_q8_input`] accepts).
    Q8Blocks,
}

/// Words per 32-element block of a [`GemvInput::Q8Blocks`] vector: 8 of packed int8, the
/// scale `d` and `d * sum(q)` as f32 bits, two spare (three 16-byte loads per block).
pub const Q8_BLOCK_WORDS: usize = 12;

/// Whether weights of type `ty` have the int8-input GEMV ([`GemvInput::Q8Blocks`]): the
/// block-quantized types (`gemv_q8.wgsl` with the type's `q8dot` snippet).
pub fn takes_q8_input(ty: GgmlType) -> bool {
    matches!(
        ty,
        GgmlType::Q4_0
            | GgmlType::Q4_1
            | GgmlType::Q5_0
            | GgmlType::Q5_1
            | GgmlType::Q8_0
            | GgmlType::Q4K
            | GgmlType::Q5K
            | GgmlType::Q6K
    )
}

/// CPU reference of the quantized input vector (the input-only variant's quantized form):
/// per 32 values `d = max|v| / 127`, `q = round(v / d)` (ties away from zero, as C's
/// `roundf`), packed little-endian 4 per word. `v.len()` must be a multiple of 32.
pub fn quantize_q8_input(v: &[f32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(v.len() / 32 * Q8_BLOCK_WORDS);
    for block in v.chunks_exact(32) {
        let amax = block.iter().fold(0.0f32, |m, a| m.max(a.abs()));
        let d = amax / 127.0;
        let inv = if d > 0.0 { 1.0 / d } else { 0.0 };
        let q: Vec<i32> = block
            .iter()
            .map(|a| ((a * inv).round() as i32).clamp(-127, 127))
            .collect();
        out.extend(q.chunks_exact(4).map(|c| {
            u32::from_le_bytes([
                c[0] as i8 as u8,
                c[1] as i8 as u8,
                c[2] as i8 as u8,
                c[3] as i8 as u8,
            ])
        }));
        let sum: i32 = q.iter().sum();
        out.extend([d.to_bits(), (d * sum as f32).to_bits(), 0, 0]);
    }
    out
}

/// The values a [`GemvInput::Q8Blocks`] vector stands for (`q * d`).
pub fn dequantize_q8_input(words: &[u32]) -> Vec<f32> {
    words
        .chunks_exact(Q8_BLOCK_WORDS)
        .flat_map(|b| {
            let d = f32::from_bits(b[8]);
            b[..8]
                .iter()
                .flat_map(|w| w.to_le_bytes())
                .map(move |q| f32::from(q as i8) * d)
        })
        .collect()
}

/// Most columns whose input vector a GEMV forms once into workgroup memory (8 KiB); wider
/// inputs are formed per step, and [`GemvInput::AttnCombine`] does not fit them.
pub const STAGED_MAX_COLS: u32 = 2048;

impl GemvInput {
    /// Whether this form is staged in workgroup memory (for `cols` columns): the attention
    /// combine always, GeGLU up to [`STAGED_MAX_COLS`] (its tanh per element outweighs the
    /// barrier). Measured on the H200 (docs/performance.md, LLM v11): staging the norm forms
    /// made their latency-bound decode GEMVs ~2 µs slower (a barrier before the first weight
    /// load), GeGLU's 1–1.2 µs faster.
    pub fn staged(self, cols: usize) -> bool {
        match self {
            GemvInput::AttnCombine { .. } => true,
            GemvInput::GeGlu => cols <= STAGED_MAX_COLS as usize,
            _ => false,
        }
    }
}
/// Most (head, block) pairs it weighs in workgroup memory.
pub const COMBINE_MAX_PAIRS: u32 = 512;

impl GemvInput {
    /// Every input form (the attention combine at a small sample geometry).
    pub const ALL: [GemvInput; 8] = [
        GemvInput::Plain,
        GemvInput::RmsNorm,
        GemvInput::RmsNormPlusOne,
        GemvInput::SwiGlu,
        GemvInput::GeGlu,
        GemvInput::FoldedRmsNorm,
        GemvInput::FoldedRmsNormPlusOne,
        GemvInput::AttnCombine {
            head_dim: 64,
            blocks: 3,
        },
    ];

    /// The combining input form for `heads` heads of `head_dim` elements split into `blocks`
    /// key blocks each, when it fits the kernel's workgroup memory (else the caller runs the
    /// combining pass and a plain input). Every workgroup of the projection reads every
    /// block, so whether folding pays at a given block count is the caller's choice (the
    /// decode step's: `llm`'s `FOLD_MAX_BLOCKS`).
    pub fn attention_combine(heads: u32, head_dim: u32, blocks: u32) -> Option<GemvInput> {
        let fits = head_dim.is_multiple_of(4)
            && head_dim > 0
            && blocks > 0
            && heads * head_dim <= STAGED_MAX_COLS
            && heads
                .checked_mul(blocks)
                .is_some_and(|pairs| pairs <= COMBINE_MAX_PAIRS);
        fits.then_some(GemvInput::AttnCombine { head_dim, blocks })
    }

    /// The `XFORM` constant.
    pub fn code(self) -> u32 {
        match self {
            GemvInput::Plain => 0,
            GemvInput::RmsNorm => 1,
            GemvInput::RmsNormPlusOne => 2,
            GemvInput::SwiGlu => 3,
            GemvInput::GeGlu => 4,
            GemvInput::FoldedRmsNorm | GemvInput::FoldedRmsNormPlusOne => 5,
            GemvInput::AttnCombine { .. } => 6,
            // Not a form of gemv.wgsl: a kernel of its own.
            GemvInput::Q8Blocks => 0,
        }
    }

    /// Whether this form reads norm weights (`cols` of them, `2 cols` when folded).
    pub fn norm_weights(self, cols: usize) -> Option<usize> {
        match self {
            GemvInput::RmsNorm | GemvInput::RmsNormPlusOne => Some(cols),
            GemvInput::FoldedRmsNorm | GemvInput::FoldedRmsNormPlusOne => Some(2 * cols),
            _ => None,
        }
    }

    /// What the folded forms add to the norm weights.
    pub fn w_one(self) -> f32 {
        match self {
            GemvInput::RmsNormPlusOne | GemvInput::FoldedRmsNormPlusOne => 1.0,
            _ => 0.0,
        }
    }

    /// Whether this form is the RMSNorm of the row itself ([`GemvInput::RmsNorm`],
    /// [`GemvInput::RmsNormPlusOne`]; not the folded forms).
    pub fn is_row_norm(self) -> bool {
        matches!(self, GemvInput::RmsNorm | GemvInput::RmsNormPlusOne)
    }

    /// Whether this form folds a post-norm and a residual in.
    pub fn is_folded(self) -> bool {
        matches!(
            self,
            GemvInput::FoldedRmsNorm | GemvInput::FoldedRmsNormPlusOne
        )
    }

    /// Elements of the `x` binding for a matrix of `cols` columns (the combine reads the
    /// first this many of a possibly larger scratch).
    pub fn x_len(self, cols: usize) -> usize {
        match self {
            GemvInput::SwiGlu | GemvInput::GeGlu => 2 * cols,
            GemvInput::AttnCombine { head_dim, blocks } => {
                let hd = head_dim as usize;
                cols / hd.max(1) * blocks as usize * crate::attention::part_stride(head_dim)
            }
            GemvInput::Q8Blocks => cols / 32 * Q8_BLOCK_WORDS,
            _ => cols,
        }
    }

    /// CPU reference of the input vector (`norm_w` for the norms, `eps` their epsilon), in
    /// f64 like the GEMV reference; the folded forms return the new residual row after it
    /// (`residual` is the stream they fold into).
    pub fn reference(
        self,
        x: &[f32],
        residual: &[f32],
        norm_w: &[f32],
        eps: f32,
        cols: usize,
    ) -> Vec<f32> {
        let rms_norm = |v: &[f64], w: &[f32]| -> Vec<f64> {
            let ms = v.iter().map(|a| a * a).sum::<f64>() / cols as f64;
            let inv = 1.0 / (ms + f64::from(eps)).sqrt();
            let one = f64::from(self.w_one());
            v.iter()
                .zip(w)
                .map(|(a, w)| a * inv * (f64::from(*w) + one))
                .collect()
        };
        // The first `cols` values in f64 (the norms' input; a Q8Blocks row is shorter).
        let xs = || -> Vec<f64> { x[..cols].iter().map(|v| f64::from(*v)).collect() };
        let to_f32 = |v: Vec<f64>| v.into_iter().map(|a| a as f32).collect();
        let act = |op: ElementOp| {
            (0..cols)
                .map(|i| op.apply(x[i], x[cols + i], 1.0))
                .collect()
        };
        match self {
            GemvInput::Plain => x[..cols].to_vec(),
            GemvInput::RmsNorm | GemvInput::RmsNormPlusOne => to_f32(rms_norm(&xs(), norm_w)),
            GemvInput::SwiGlu => act(ElementOp::SiluMul),
            GemvInput::GeGlu => act(ElementOp::GeluMul),
            GemvInput::FoldedRmsNorm | GemvInput::FoldedRmsNormPlusOne => {
                let post = rms_norm(&xs(), &norm_w[..cols]);
                let x1: Vec<f64> = post
                    .iter()
                    .zip(residual)
                    .map(|(a, r)| a + f64::from(*r))
                    .collect();
                let input = rms_norm(&x1, &norm_w[cols..2 * cols]);
                to_f32(input.into_iter().chain(x1).collect())
            }
            GemvInput::AttnCombine { head_dim, blocks } => {
                crate::attention::combine_reference(x, cols / head_dim as usize, head_dim, blocks)
            }
            GemvInput::Q8Blocks => {
                let words: Vec<u32> = x.iter().map(|v| v.to_bits()).collect();
                dequantize_q8_input(&words)
            }
        }
    }
}

/// Elements and bytes of the kernel's unit for `ty`: one GGUF block, or 4 (f32) / 8 (f16)
/// elements, a 16-byte load.
pub fn unit(ty: GgmlType) -> (u32, u32) {
    match ty {
        GgmlType::F32 => (4, 16),
        GgmlType::F16 => (8, 16),
        _ => (ty.block_elems() as u32, ty.block_bytes() as u32),
    }
}

/// The tunables of one GEMV variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GemvTunables {
    /// Threads per workgroup.
    pub wg: u32,
    /// Rows per workgroup.
    pub rows: u32,
    /// Rows per thread (each x load serves this many rows).
    pub rpt: u32,
    /// How a row's partial sums are reduced.
    pub reduction: Reduction,
    /// Steps a thread takes per loop iteration (an inner loop of constant trip count, which a
    /// compiler may unroll to put their loads in flight together).
    pub unroll: u32,
}

/// Allowed workgroup sizes.
pub const WG_VALUES: [u32; 4] = [32, 64, 128, 256];
/// Allowed rows per workgroup.
pub const ROWS_VALUES: [u32; 7] = [1, 2, 4, 8, 16, 32, 64];
/// Allowed rows per thread.
pub const RPT_VALUES: [u32; 4] = [1, 2, 4, 8];
/// Allowed steps per loop iteration.
pub const UNROLL_VALUES: [u32; 4] = [1, 2, 4, 8];
/// The most rows per thread the int8-input GEMV takes (`q8dot/rows.wgsl` names four).
pub const Q8_MAX_RPT: u32 = 4;

/// Fewest units of a row (`q8dot` units: 32 columns, 64 for the K-quants) each lane of the
/// int8 GEMV's row group keeps for a tuning table's entry to apply to a matrix
/// ([`GemvTunables::q8_for_cols`]): the entries are swept on 8192-column matrices (`cargo xtask
/// bench --shapes large`: 128 or 256 units a row), where 32 lanes a row won by 11-30% (v43); on
/// the Llama-1B shape's 2048-column matrices (32 units a row: one a lane) the H100's entry
/// decoded one stream at 898-901 tok/s against 994-1,022 on the defaults (v44, one call).
pub const Q8_TABLE_MIN_UNITS_PER_LANE: usize = 4;

impl GemvTunables {
    /// These tunables with rows per workgroup halved (the variant stays valid) until a matrix
    /// of `matrix_rows` rows gets at least `min_groups` workgroups: a table tuned on large
    /// matrices otherwise starves small decode GEMVs of parallelism.
    pub fn fit_rows(self, matrix_rows: usize, min_groups: usize) -> Self {
        let mut t = self;
        while t.rows > 1 && matrix_rows.div_ceil(t.rows as usize) < min_groups {
            t.rows /= 2;
            t.rpt = t.rpt.min(t.rows);
        }
        t
    }

    /// Every allowed combination: rows per thread at most rows per workgroup, and at most one
    /// row group per thread (all values are powers of two, so lanes per group are too).
    pub fn all() -> Vec<GemvTunables> {
        let mut out = Vec::new();
        for reduction in Reduction::ALL {
            for wg in WG_VALUES {
                for rows in ROWS_VALUES {
                    for rpt in RPT_VALUES
                        .into_iter()
                        .filter(|r| *r <= rows && rows / r <= wg)
                    {
                        out.extend(UNROLL_VALUES.map(|unroll| GemvTunables {
                            wg,
                            rows,
                            rpt,
                            reduction,
                            unroll,
                        }));
                    }
                }
            }
        }
        out
    }

    /// A sound default before any tuning, subgroups when available.
    pub fn default_for(subgroups: bool) -> Self {
        let reduction = if subgroups {
            Reduction::Subgroup
        } else {
            Reduction::Shared
        };
        GemvTunables {
            wg: 128,
            rows: 8,
            rpt: 2,
            reduction,
            unroll: 1,
        }
    }

    /// The int8-input GEMV's default before tuning for Q8_0: 4 lanes per row (a decode matrix
    /// of 640 columns is 20 blocks: 5 per lane).
    pub fn q8_default(subgroups: bool) -> Self {
        GemvTunables {
            rows: 64,
            rpt: 1,
            wg: 256,
            ..GemvTunables::default_for(subgroups)
        }
    }

    /// The int8-input GEMV's default before tuning for weights of `ty`: Q8_0's
    /// [`GemvTunables::q8_default`]; 8 lanes per row for the others, whose units are fewer
    /// bytes (a legacy block of 18–24 bytes; a K-quant unit of 64 elements, a 2048-column row
    /// of them 32 units: 4 per lane).
    pub fn q8_default_for(ty: GgmlType, subgroups: bool) -> Self {
        let t = GemvTunables::q8_default(subgroups);
        match ty {
            GgmlType::Q8_0 => t,
            _ => GemvTunables { rows: 32, ..t },
        }
    }

    /// Lanes that share a group of rows.
    pub fn lanes_per_group(self) -> u32 {
        self.wg * self.rpt / self.rows
    }

    /// The int8 GEMV's tunables for a matrix of `cols` columns of `ty` from `self`, a tuning
    /// table's entry for `ty`: the entry where each lane of its row groups keeps at least
    /// [`Q8_TABLE_MIN_UNITS_PER_LANE`] units of a row (its unroll at most the units a lane
    /// has: the unrolled loop's extra units are clamped loads and discarded sums), else the
    /// kernel's default ([`GemvTunables::q8_default_for`]).
    pub fn q8_for_cols(self, ty: GgmlType, cols: usize, subgroups: bool) -> Self {
        let units = cols / crate::gemm::q8_unit_cols(ty);
        let lanes = self.lanes_per_group().max(1) as usize;
        let per_lane = units / lanes;
        if per_lane < Q8_TABLE_MIN_UNITS_PER_LANE {
            return GemvTunables::q8_default_for(ty, subgroups);
        }
        let most = 1u32 << per_lane.ilog2().min(3);
        GemvTunables {
            unroll: self.unroll.min(most),
            ..self
        }
    }
}

/// The kernel variant for weights of type `ty` with a plain input.
pub fn spec(ty: GgmlType, t: GemvTunables) -> KernelSpec {
    spec_with(ty, t, GemvInput::Plain, 0)
}

/// The variant that only forms the input vector of [`spec_with`]`(ty, t, input)` (one
/// workgroup, written to the output binding), for GEMVs too large to repeat it per workgroup;
/// `quantized`: written as [`GemvInput::Q8Blocks`] for the int8-input GEMV.
pub fn input_only_spec(
    ty: GgmlType,
    t: GemvTunables,
    input: GemvInput,
    cols: usize,
    quantized: bool,
) -> KernelSpec {
    let mut spec = spec_with(ty, t, input, cols);
    spec.constants
        .push(("INPUT_ONLY", if quantized { 2 } else { 1 }));
    if quantized {
        spec.constants.push(("QV", t.wg));
    }
    spec
}

/// The kernel variant for weights of type `ty` forming its input by `input` for a matrix of
/// `cols` columns, staged in workgroup memory where [`GemvInput::staged`] says (labels of
/// plain-input variants carry no `XFORM`, so tuning tables keep their keys).
pub fn spec_with(ty: GgmlType, t: GemvTunables, input: GemvInput, cols: usize) -> KernelSpec {
    if input == GemvInput::Q8Blocks {
        return q8_spec(ty, t);
    }
    let mut constants = vec![("WG", t.wg), ("ROWS", t.rows), ("RPT", t.rpt)];
    if t.unroll > 1 {
        constants.push(("UNROLL", t.unroll));
    }
    if input != GemvInput::Plain {
        constants.push(("XFORM", input.code()));
    }
    if input.staged(cols) {
        constants.push(("XS4", STAGED_MAX_COLS / 4));
    }
    if let GemvInput::AttnCombine { .. } = input {
        constants.push(("BW", COMBINE_MAX_PAIRS));
    }
    KernelSpec {
        family: Family::Gemv,
        quant: Some(ty),
        reduction: Some(t.reduction),
        constants,
    }
}

/// The int8-input GEMV (`gemv_q8.wgsl` with `ty`'s `q8dot` snippet) at `t`'s workgroup size,
/// rows per workgroup, rows per thread (at most [`Q8_MAX_RPT`]), reduction and unrolling.
fn q8_spec(ty: GgmlType, t: GemvTunables) -> KernelSpec {
    let mut constants = vec![("WG", t.wg), ("ROWS", t.rows)];
    if t.rpt > 1 {
        constants.push(("RPT", t.rpt.min(Q8_MAX_RPT)));
    }
    if t.unroll > 1 {
        constants.push(("UNROLL", t.unroll));
    }
    KernelSpec {
        family: Family::GemvQ8,
        quant: Some(ty),
        reduction: Some(t.reduction),
        constants,
    }
}

/// Why a matrix cannot go through this kernel.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GemvShapeError {
    /// A row is not a whole number of units.
    #[error("{cols} columns of {ty} are not a whole number of {unit}-element units")]
    Cols {
        /// Weight type.
        ty: &'static str,
        /// Columns.
        cols: usize,
        /// Unit size.
        unit: u32,
    },
}

/// Parameters for a `rows × cols` matrix of `ty` at byte `w_offset`, and the workgroup grid
/// `(x, y)` for `t` given the adapter's per-dimension workgroup limit.
pub fn params(
    ty: GgmlType,
    rows: u32,
    cols: usize,
    w_offset: u32,
    t: GemvTunables,
    max_groups_per_dim: u32,
) -> Result<(GemvParams, (u32, u32)), GemvShapeError> {
    let (ue, ub) = unit(ty);
    if !cols.is_multiple_of(ue as usize) {
        return Err(GemvShapeError::Cols {
            ty: ty.name(),
            cols,
            unit: ue,
        });
    }
    let units = (cols / ue as usize) as u32;
    let groups = rows.div_ceil(t.rows);
    let grid = crate::grid_2d(groups, max_groups_per_dim);
    let p = GemvParams {
        rows,
        units_per_row: units,
        row_bytes: units * ub,
        w_offset,
        y_offset: 0,
        x_offset: 0,
        grid_x: grid.0,
        residual: 0,
        x_aux: 0,
        eps: 0.0,
        w_one: 0.0,
        write_x: 0,
        head_dim: 0,
        blocks: 0,
        pad: [0; 2],
    };
    Ok((p, grid))
}

/// CPU reference: dequantize each row, then accumulate the dot product in f64.
pub fn reference(ty: GgmlType, w: &[u8], rows: usize, cols: usize, x: &[f32]) -> Vec<f32> {
    let row_bytes = ty.row_bytes(cols).unwrap_or(0);
    (0..rows)
        .map(|r| {
            let row = dequantize(ty, &w[r * row_bytes..(r + 1) * row_bytes]);
            row.iter()
                .zip(x)
                .map(|(a, b)| f64::from(*a) * f64::from(*b))
                .sum::<f64>() as f32
        })
        .collect()
}

/// Bytes a GEMV must move: the weights, x once, y once.
pub fn bytes_moved(ty: GgmlType, rows: usize, cols: usize) -> u64 {
    let w = ty.row_bytes(cols).unwrap_or(0) * rows;
    (w + 4 * cols + 4 * rows) as u64
}
