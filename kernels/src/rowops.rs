//! Row-wise and elementwise kernels of a transformer layer — normalization, activations,
//! rotary embedding, softmax, argmax — with their uniform blocks, variants and CPU references.
//! Each is small; they share the variant scheme (WG as an override constant, the whole-workgroup
//! reduction as a snippet) and the reference style (f64 accumulation).

use bytemuck::{Pod, Zeroable};

use crate::kernel::{Family, KernelSpec};
use crate::source::Reduction;

/// Workgroup sizes the row kernels allow.
pub const WG_VALUES: [u32; 3] = [64, 128, 256];

/// Normalization flavours (`MODE` in `norm.wgsl`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NormKind {
    /// `x / rms(x) * w`.
    Rms,
    /// `x / rms(x) * (1 + w)` (Gemma's stored form in some converters).
    RmsPlusOne,
    /// `(x - mean) / std * w + b`, `b` stored after `w`.
    Layer,
}

impl NormKind {
    /// Every kind.
    pub const ALL: [NormKind; 3] = [NormKind::Rms, NormKind::RmsPlusOne, NormKind::Layer];

    fn mode(self) -> u32 {
        match self {
            NormKind::Rms => 0,
            NormKind::RmsPlusOne => 1,
            NormKind::Layer => 2,
        }
    }
}

/// Uniform block of `norm.wgsl`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct NormParams {
    /// Elements per row.
    pub cols: u32,
    /// Rows.
    pub rows: u32,
    /// Epsilon inside the square root.
    pub eps: f32,
    /// Workgroups along x.
    pub grid_x: u32,
}

/// The norm variant; `blocks`: the normed rows go out as the int8-input GEMV's blocks
/// ([`crate::gemv::GemvInput::Q8Blocks`], RMSNorms only) instead of f32.
pub fn norm_spec(kind: NormKind, wg: u32, reduction: Reduction, out: NormOut) -> KernelSpec {
    let mut constants = vec![
        ("WG", wg),
        ("MODE", kind.mode()),
        ("BLOCKS", u32::from(out == NormOut::Blocks)),
    ];
    if out == NormOut::Added {
        constants.push(("RES", 1));
    }
    KernelSpec {
        family: Family::Norm,
        quant: None,
        reduction: Some(reduction),
        constants,
    }
}

/// Where `norm.wgsl` puts a normed row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NormOut {
    /// As f32 values.
    Rows,
    /// As the int8-input GEMV's blocks (RMSNorms).
    Blocks,
    /// Added to a residual row (`y = res + norm(x)`).
    Added,
}

/// CPU reference of `norm.wgsl` for `rows` rows of `x`.
pub fn norm_reference(kind: NormKind, x: &[f32], w: &[f32], cols: usize, eps: f32) -> Vec<f32> {
    let mut out = Vec::with_capacity(x.len());
    for row in x.chunks(cols) {
        let mean = match kind {
            NormKind::Layer => row.iter().map(|v| f64::from(*v)).sum::<f64>() / cols as f64,
            _ => 0.0,
        };
        let var = row
            .iter()
            .map(|v| (f64::from(*v) - mean).powi(2))
            .sum::<f64>()
            / cols as f64;
        let inv = 1.0 / (var + f64::from(eps)).sqrt();
        for (i, v) in row.iter().enumerate() {
            let n = (f64::from(*v) - mean) * inv;
            let y = match kind {
                NormKind::Rms => n * f64::from(w[i]),
                NormKind::RmsPlusOne => n * (1.0 + f64::from(w[i])),
                NormKind::Layer => n * f64::from(w[i]) + f64::from(w[cols + i]),
            };
            out.push(y as f32);
        }
    }
    out
}

/// Elementwise operations (`OP` in `elementwise.wgsl`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ElementOp {
    /// `a + b`.
    Add,
    /// `a * b`.
    Mul,
    /// `silu(a)`.
    Silu,
    /// `gelu_tanh(a)`.
    Gelu,
    /// `silu(a) * b` (SwiGLU).
    SiluMul,
    /// `gelu_tanh(a) * b` (GeGLU).
    GeluMul,
    /// `a * s`.
    Scale,
}

impl ElementOp {
    /// Every op.
    pub const ALL: [ElementOp; 7] = [
        ElementOp::Add,
        ElementOp::Mul,
        ElementOp::Silu,
        ElementOp::Gelu,
        ElementOp::SiluMul,
        ElementOp::GeluMul,
        ElementOp::Scale,
    ];

    fn code(self) -> u32 {
        self as u32
    }

    /// The CPU reference of one element.
    pub fn apply(self, a: f32, b: f32, s: f32) -> f32 {
        let (a, b) = (f64::from(a), f64::from(b));
        let silu = |v: f64| v / (1.0 + (-v).exp());
        let gelu = |v: f64| {
            0.5 * v * (1.0 + (0.797_884_560_802_865_4 * (v + 0.044_715 * v * v * v)).tanh())
        };
        (match self {
            ElementOp::Add => a + b,
            ElementOp::Mul => a * b,
            ElementOp::Silu => silu(a),
            ElementOp::Gelu => gelu(a),
            ElementOp::SiluMul => silu(a) * b,
            ElementOp::GeluMul => gelu(a) * b,
            ElementOp::Scale => a * f64::from(s),
        }) as f32
    }
}

/// Uniform block of `elementwise.wgsl`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct ElementParams {
    /// Elements.
    pub n: u32,
    /// Workgroups along x.
    pub grid_x: u32,
    /// The scalar of `Scale`.
    pub s: f32,
    /// Padding.
    pub pad: u32,
}

/// The elementwise variant.
pub fn element_spec(op: ElementOp, wg: u32) -> KernelSpec {
    KernelSpec {
        family: Family::Elementwise,
        quant: None,
        reduction: None,
        constants: vec![("WG", wg), ("OP", op.code())],
    }
}

/// Uniform block of `rope.wgsl`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct RopeParams {
    /// Tokens.
    pub tokens: u32,
    /// Heads per token.
    pub heads: u32,
    /// Elements per head.
    pub head_dim: u32,
    /// Rotated elements per head (even, at most `head_dim`).
    pub rot_dims: u32,
    /// Frequency base (10000, or a layer's own).
    pub base: f32,
    /// Position scaling (1 = none).
    pub freq_scale: f32,
    /// Workgroups along x.
    pub grid_x: u32,
    /// Added to every position read from the `pos` buffer.
    pub pos_base: u32,
}

/// The RoPE variant: `neox` rotates (i, i + rot/2) instead of (2i, 2i + 1).
pub fn rope_spec(neox: bool, wg: u32) -> KernelSpec {
    KernelSpec {
        family: Family::Rope,
        quant: None,
        reduction: None,
        constants: vec![("WG", wg), ("NEOX", u32::from(neox))],
    }
}

/// CPU reference of `rope.wgsl` (in place).
pub fn rope_reference(x: &mut [f32], pos: &[u32], p: &RopeParams, neox: bool) {
    let half = (p.rot_dims / 2) as usize;
    for (t, &position) in pos.iter().enumerate().take(p.tokens as usize) {
        for h in 0..p.heads as usize {
            let base = (t * p.heads as usize + h) * p.head_dim as usize;
            for i in 0..half {
                let theta = f64::from(p.pos_base + position)
                    * f64::from(p.freq_scale)
                    * f64::from(p.base).powf(-2.0 * i as f64 / f64::from(p.rot_dims));
                let (i0, i1) = if neox {
                    (base + i, base + i + half)
                } else {
                    (base + 2 * i, base + 2 * i + 1)
                };
                let (a, b) = (f64::from(x[i0]), f64::from(x[i1]));
                x[i0] = (a * theta.cos() - b * theta.sin()) as f32;
                x[i1] = (a * theta.sin() + b * theta.cos()) as f32;
            }
        }
    }
}

/// Uniform block of `softmax.wgsl`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct SoftmaxParams {
    /// Elements per row.
    pub cols: u32,
    /// Rows.
    pub rows: u32,
    /// Multiplier applied first.
    pub scale: f32,
    /// Soft cap (0 = off).
    pub cap: f32,
    /// Workgroups along x.
    pub grid_x: u32,
    /// Padding.
    pub pad: [u32; 3],
}

/// The softmax variant.
pub fn softmax_spec(wg: u32, reduction: Reduction) -> KernelSpec {
    KernelSpec {
        family: Family::Softmax,
        quant: None,
        reduction: Some(reduction),
        constants: vec![("WG", wg)],
    }
}

/// CPU reference of `softmax.wgsl`.
pub fn softmax_reference(x: &[f32], cols: usize, scale: f32, cap: f32) -> Vec<f32> {
    let mut out = Vec::with_capacity(x.len());
    for row in x.chunks(cols) {
        let v: Vec<f64> = row
            .iter()
            .map(|e| {
                let v = f64::from(*e) * f64::from(scale);
                if cap > 0.0 {
                    f64::from(cap) * (v / f64::from(cap)).tanh()
                } else {
                    v
                }
            })
            .collect();
        let m = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let sum: f64 = v.iter().map(|e| (e - m).exp()).sum();
        out.extend(v.iter().map(|e| ((e - m).exp() / sum) as f32));
    }
    out
}

/// Uniform block of `argmax.wgsl`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pod, Zeroable)]
pub struct ArgmaxParams {
    /// Elements.
    pub n: u32,
    /// Workgroups of stage 0 (partials).
    pub groups: u32,
    /// Index in `tokens` that receives the result (one row).
    pub out_index: u32,
    /// Elements from one row's values to the next (many rows).
    pub x_stride: u32,
    /// 1: many rows, each id written where the row table says (`argmax.wgsl`).
    pub rows: u32,
    /// Many rows: the batch's first row in the row table.
    pub rows_first: u32,
    /// Many rows: the word of the row table where the sampled rows' list starts.
    pub picks: u32,
    /// Padding.
    pub pad: u32,
}

/// Workgroups of the first argmax stage (a multiple of a large GPU's core count; the second
/// stage reduces this many partials in one workgroup).
pub const ARGMAX_GROUPS: u32 = 256;

/// The argmax variant: stage 0 (per-workgroup partials) or 1 (the final reduction).
pub fn argmax_spec(wg: u32, stage: u32) -> KernelSpec {
    KernelSpec {
        family: Family::Argmax,
        quant: None,
        reduction: None,
        constants: vec![("WG", wg), ("STAGE", stage)],
    }
}

/// CPU reference of `argmax.wgsl`: the first index of the largest value (NaNs ignored).
pub fn argmax_reference(x: &[f32]) -> Option<u32> {
    let mut best: Option<(usize, f32)> = None;
    for (i, v) in x.iter().enumerate() {
        if best.is_none_or(|(_, b)| *v > b) && !v.is_nan() {
            best = Some((i, *v));
        }
    }
    best.map(|(i, _)| i as u32)
}

/// Uniform block of `gather.wgsl`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct GatherParams {
    /// Rows gathered.
    pub rows: u32,
    /// Words per row.
    pub width: u32,
    /// The first index.
    pub idx_first: u32,
    /// Words between consecutive indices.
    pub idx_stride: u32,
    /// Workgroups along x.
    pub grid_x: u32,
    /// Unused (the block is a multiple of 16 bytes).
    pub pad: [u32; 3],
}

/// The gather variant.
pub fn gather_spec(wg: u32) -> KernelSpec {
    KernelSpec {
        family: Family::Gather,
        quant: None,
        reduction: None,
        constants: vec![("WG", wg)],
    }
}

/// CPU reference of `gather.wgsl`.
pub fn gather_reference(src: &[u32], idx: &[u32], p: &GatherParams) -> Vec<u32> {
    let w = p.width as usize;
    (0..p.rows as usize)
        .flat_map(|r| {
            let at = idx[p.idx_first as usize + r * p.idx_stride as usize] as usize * w;
            src[at..at + w].to_vec()
        })
        .collect()
}

/// Uniform block of `q8_round.wgsl`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct Q8RoundParams {
    /// 32-element output blocks.
    pub blocks: u32,
    /// Workgroups along x.
    pub grid_x: u32,
    /// Output blocks per row.
    pub row_blocks: u32,
    /// vec4s from one row to the next (`2 · row_blocks · 8` for `[gate | up]` rows).
    pub row_stride: u32,
}

/// What `q8_round.wgsl` makes of its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Q8Out {
    /// The (gated) values in place, unrounded.
    Formed,
    /// The (gated) values in place, every 32 rounded onto the int8-input GEMV's grid.
    Rounded,
    /// The rows left as they are; every 32 (gated) values written out as the int8-input
    /// GEMV's blocks ([`crate::gemv::GemvInput::Q8Blocks`]).
    Blocks,
}

impl Q8Out {
    /// Every output.
    pub const ALL: [Q8Out; 3] = [Q8Out::Formed, Q8Out::Rounded, Q8Out::Blocks];
}

/// The variant of `q8_round.wgsl`: `gate(gate) · up` of each `[gate | up]` row where `gate`
/// is SwiGLU ([`ElementOp::SiluMul`]) or GeGLU ([`ElementOp::GeluMul`]) (any other op: the
/// values as they are), made into `out`.
pub fn q8_round_spec(wg: u32, gate: Option<ElementOp>, out: Q8Out) -> KernelSpec {
    let act = match gate {
        Some(ElementOp::SiluMul) => 1,
        Some(ElementOp::GeluMul) => 2,
        _ => 0,
    };
    KernelSpec {
        family: Family::Q8Round,
        quant: None,
        reduction: None,
        constants: vec![
            ("WG", wg),
            ("ACT", act),
            ("ROUND", u32::from(out == Q8Out::Rounded)),
            ("BLOCKS", u32::from(out == Q8Out::Blocks)),
        ],
    }
}

/// CPU reference of `q8_round.wgsl` without a gate: each 32 values as the int8-input GEMV
/// sees them after [`crate::gemv::quantize_q8_input`]. `x.len()` must be a multiple of 32.
pub fn q8_round_reference(x: &[f32]) -> Vec<f32> {
    crate::gemv::dequantize_q8_input(&crate::gemv::quantize_q8_input(x))
}

/// CPU reference of `q8_round.wgsl` with `gate` (SwiGLU or GeGLU) over `[gate | up]` rows of
/// `2 · width` values: each row's `width` gated values, rounded when `round`.
pub fn gated_rows_reference(x: &[f32], width: usize, gate: ElementOp, round: bool) -> Vec<f32> {
    x.chunks_exact(2 * width)
        .flat_map(|row| {
            let (g, u) = row.split_at(width);
            let v: Vec<f32> = g
                .iter()
                .zip(u)
                .map(|(&g, &u)| gate.apply(g, u, 1.0))
                .collect();
            if round { q8_round_reference(&v) } else { v }
        })
        .collect()
}

/// Every row-kernel variant.
pub fn all_specs() -> Vec<KernelSpec> {
    let mut out = Vec::new();
    for wg in WG_VALUES {
        for r in Reduction::ALL {
            for o in [NormOut::Rows, NormOut::Added] {
                out.extend(NormKind::ALL.map(|k| norm_spec(k, wg, r, o)));
            }
            out.push(norm_spec(NormKind::Rms, wg, r, NormOut::Blocks));
            out.push(norm_spec(NormKind::RmsPlusOne, wg, r, NormOut::Blocks));
            out.push(softmax_spec(wg, r));
        }
        out.extend(ElementOp::ALL.map(|op| element_spec(op, wg)));
        out.extend([
            rope_spec(false, wg),
            rope_spec(true, wg),
            argmax_spec(wg, 0),
            argmax_spec(wg, 1),
            gather_spec(wg),
        ]);
        for gate in [None, Some(ElementOp::SiluMul), Some(ElementOp::GeluMul)] {
            for q8 in Q8Out::ALL {
                // Ungated rows formed in place would be a no-op.
                if gate.is_some() || q8 != Q8Out::Formed {
                    out.push(q8_round_spec(wg, gate, q8));
                }
            }
        }
    }
    out
}
