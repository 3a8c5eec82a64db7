//! Launches of the row and elementwise kernels (`gpuport_kernels::rowops`).

use gpuport_kernels::attention::{self, DecodeAttnParams};
use gpuport_kernels::rowops::{self, ElementOp, NormKind};
use gpuport_kernels::{Reduction, grid_2d};

use super::launch;
use crate::device::Gpu;
use crate::error::GpuError;
use crate::recorder::Recorder;
use crate::tensor::Tensor;

/// The whole-workgroup reduction to use here.
pub(super) fn reduction(gpu: &Gpu) -> Reduction {
    if gpu.has_subgroups() {
        Reduction::Subgroup
    } else {
        Reduction::Shared
    }
}

pub(super) fn elems(t: &Tensor) -> usize {
    t.shape.iter().product()
}

fn row_grid(gpu: &Gpu, rows: usize) -> (u32, u32) {
    grid_2d(
        rows as u32,
        gpu.limits().max_compute_workgroups_per_dimension,
    )
}

/// `y = norm(x) * w` per row of `cols`, tensors `[x, w, y]` (LayerNorm: `w` holds weights then
/// biases).
pub fn norm(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    kind: NormKind,
    [x, w, y]: [&Tensor; 3],
    cols: usize,
    eps: f32,
) -> Result<(), GpuError> {
    let n = elems(x);
    let want_w = if kind == NormKind::Layer {
        2 * cols
    } else {
        cols
    };
    if cols == 0 || !n.is_multiple_of(cols) || elems(w) != want_w || elems(y) != n {
        return Err(GpuError::Shape(format!(
            "norm of {:?} by rows of {cols} with weights {:?} into {:?}",
            x.shape, w.shape, y.shape
        )));
    }
    let rows = n / cols;
    let grid = row_grid(gpu, rows);
    let p = rowops::NormParams {
        cols: cols as u32,
        rows: rows as u32,
        eps,
        grid_x: grid.0,
    };
    launch(
        gpu,
        rec,
        &rowops::norm_spec(kind, 256, reduction(gpu)),
        &p,
        &[x, w, y],
        grid,
    )
}

/// `out = op(a, b)` elementwise (`b` is ignored by unary ops; pass `a`).
pub fn elementwise(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    op: ElementOp,
    a: &Tensor,
    b: &Tensor,
    out: &Tensor,
    s: f32,
) -> Result<(), GpuError> {
    let n = elems(a);
    if elems(out) != n || elems(b) < n {
        return Err(GpuError::Shape(format!(
            "{op:?} of {:?} and {:?} into {:?}",
            a.shape, b.shape, out.shape
        )));
    }
    let wg = 256;
    let grid = grid_2d(
        (n as u32).div_ceil(wg),
        gpu.limits().max_compute_workgroups_per_dimension,
    );
    let p = rowops::ElementParams {
        n: n as u32,
        grid_x: grid.0,
        s,
        pad: 0,
    };
    launch(
        gpu,
        rec,
        &rowops::element_spec(op, wg),
        &p,
        &[a, b, out],
        grid,
    )
}

/// Rotates `x` = `[tokens, heads, head_dim]` in place by the positions in `pos` (u32).
pub fn rope(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    x: &Tensor,
    pos: &Tensor,
    mut p: rowops::RopeParams,
    neox: bool,
) -> Result<(), GpuError> {
    let n = (p.tokens * p.heads * p.head_dim) as usize;
    if elems(x) != n
        || elems(pos) < p.tokens as usize
        || !p.rot_dims.is_multiple_of(2)
        || p.rot_dims > p.head_dim
    {
        return Err(GpuError::Shape(format!("rope {p:?} over {:?}", x.shape)));
    }
    let wg = 256;
    let pairs = p.tokens * p.heads * (p.rot_dims / 2);
    let grid = grid_2d(
        pairs.div_ceil(wg),
        gpu.limits().max_compute_workgroups_per_dimension,
    );
    p.grid_x = grid.0;
    launch(gpu, rec, &rowops::rope_spec(neox, wg), &p, &[x, pos], grid)
}

/// Softmax of each row of `cols`, in place, after `scale` and an optional soft cap.
pub fn softmax(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    x: &Tensor,
    cols: usize,
    scale: f32,
    cap: f32,
) -> Result<(), GpuError> {
    let n = elems(x);
    if cols == 0 || !n.is_multiple_of(cols) {
        return Err(GpuError::Shape(format!(
            "softmax of {:?} by rows of {cols}",
            x.shape
        )));
    }
    let rows = n / cols;
    let grid = row_grid(gpu, rows);
    let p = rowops::SoftmaxParams {
        cols: cols as u32,
        rows: rows as u32,
        scale,
        cap,
        grid_x: grid.0,
        pad: [0; 3],
    };
    launch(
        gpu,
        rec,
        &rowops::softmax_spec(256, reduction(gpu)),
        &p,
        &[x],
        grid,
    )
}

/// The index of the largest element of `x` (ties: the smallest), written to
/// `tokens[out_index]` and `out[0]` (u32) on the GPU, in two dispatches; `part` is scratch of
/// `2 * ARGMAX_GROUPS` u32.
pub fn argmax(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    [x, part, tokens, out]: [&Tensor; 4],
    out_index: usize,
) -> Result<(), GpuError> {
    let groups = rowops::ARGMAX_GROUPS;
    if elems(part) < 2 * groups as usize || elems(tokens) <= out_index || elems(out) < 2 {
        return Err(GpuError::Shape(format!(
            "argmax of {:?} into tokens {:?} at {out_index}",
            x.shape, tokens.shape
        )));
    }
    let p = rowops::ArgmaxParams {
        n: elems(x) as u32,
        groups,
        out_index: out_index as u32,
        pad: 0,
    };
    let bound = [x, part, tokens, out];
    launch(
        gpu,
        rec,
        &rowops::argmax_spec(256, 0),
        &p,
        &bound,
        (groups, 1),
    )?;
    launch(gpu, rec, &rowops::argmax_spec(256, 1), &p, &bound, (1, 1))
}

/// Threads per workgroup of both decode-attention passes.
const ATTENTION_WG: u32 = 128;

/// One layer of a paged KV cache as the attention kernels see it: pools of keys and values
/// (`[pages, page, kv_heads, head_dim]` f32) and the sequence's page table (u32, logical page
/// → pool page; `attn_pages.wgsl`).
#[derive(Clone, Copy)]
pub struct KvLayer<'a> {
    /// The key pool.
    pub k: &'a Tensor,
    /// The value pool.
    pub v: &'a Tensor,
    /// The page table.
    pub pages: &'a Tensor,
    /// Positions per page (a multiple of [`attention::PAGE_MULTIPLE`]).
    pub page: u32,
}

/// Decode attention for a new token (both passes): its queries, keys and values are read from
/// `qkv` at `p.q_src`, `p.k_src`, `p.v_src`, normalized per head when `p.norm` is set (weights
/// `qk_norm`: query norm then key norm) and rotated (RoPE, `neox` pair layout) in the kernel;
/// the key and value are appended to the cache `kv` at position `p.n_keys - 1`, and the
/// attention output of every head lands in `out`. Tensors `[qkv, part, out]`.
pub fn attention_decode(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    p: DecodeAttnParams,
    neox: bool,
    [qkv, part, out]: [&Tensor; 3],
    kv: KvLayer<'_>,
    qk_norm: Option<&Tensor>,
) -> Result<(), GpuError> {
    let p = attention_split(gpu, rec, p, neox, [qkv, part], kv, qk_norm)?;
    attention_combine(gpu, rec, &p, [part, out])
}

/// The second pass of [`attention_decode`]: combines the partials [`attention_split`] left in
/// `part` (`p` as it returned) into the attention output `out` (`heads × head_dim`).
pub fn attention_combine(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    p: &DecodeAttnParams,
    [part, out]: [&Tensor; 2],
) -> Result<(), GpuError> {
    let need = (p.heads * p.blocks) as usize * attention::part_stride(p.head_dim);
    if elems(out) != (p.heads * p.head_dim) as usize || elems(part) < need {
        return Err(GpuError::Shape(format!(
            "combining {} heads × {} in {} blocks from {:?} into {:?}",
            p.heads, p.head_dim, p.blocks, part.shape, out.shape
        )));
    }
    launch(
        gpu,
        rec,
        &attention::combine_spec(ATTENTION_WG, reduction(gpu)),
        p,
        &[part, out],
        (p.heads, p.head_dim.div_ceil(attention::COMBINE_COLUMNS)),
    )
}

/// The first pass of [`attention_decode`] alone: the per-block partials land in `part` (for a
/// GEMV with the [`gpuport_kernels::gemv::GemvInput::AttnCombine`] input to combine); returns the
/// parameters with `blocks` and `page` set. Tensors `[qkv, part]`.
pub fn attention_split(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    mut p: DecodeAttnParams,
    neox: bool,
    [qkv, part]: [&Tensor; 2],
    kv: KvLayer<'_>,
    qk_norm: Option<&Tensor>,
) -> Result<DecodeAttnParams, GpuError> {
    let kb = attention::keys_per_block(p.head_dim);
    let (heads, hd) = (p.heads as usize, p.head_dim as usize);
    p.blocks = p.n_keys.div_ceil(kb).max(1);
    p.page = kv.page;
    let ok = attention_inputs_fit(&p, elems(qkv), kv, qk_norm)
        && p.n_keys > 0
        && hd <= 4 * ATTENTION_WG as usize
        && elems(part) >= heads * p.blocks as usize * attention::part_stride(p.head_dim)
        && p.blocks <= gpu.limits().max_compute_workgroups_per_dimension;
    if !ok {
        return Err(GpuError::Shape(format!(
            "decode attention {p:?} with q/k/v {:?}, caches {:?}, {:?}, page table {:?}, norm \
             weights {:?}",
            qkv.shape,
            kv.k.shape,
            kv.v.shape,
            kv.pages.shape,
            qk_norm.map(|w| &w.shape)
        )));
    }
    launch(
        gpu,
        rec,
        &attention::decode_spec(ATTENTION_WG, kb, reduction(gpu), neox),
        &p,
        &[qkv, kv.k, kv.v, part, qk_norm.unwrap_or(qkv), kv.pages],
        (p.heads, p.blocks),
    )?;
    Ok(p)
}

/// Whether attention `p` fits its inputs: a head shape the kernels take (head_dim a multiple
/// of 4, at most 256; an even RoPE width within it; whole GQA groups), q, k and v within the
/// first `row_len` elements of a projections row, norm weights exactly when a norm is set
/// (query then key: `2 head_dim`), a cache of whole pages whose table covers `max_ctx`
/// positions holding `n_keys`, and `p.page` the cache's page.
pub(super) fn attention_inputs_fit(
    p: &DecodeAttnParams,
    row_len: usize,
    kv: KvLayer<'_>,
    qk_norm: Option<&Tensor>,
) -> bool {
    let (heads, kv_heads, hd, ctx) = (
        p.heads as usize,
        p.kv_heads as usize,
        p.head_dim as usize,
        p.max_ctx as usize,
    );
    let within = |at: u32, n: usize| at as usize + n <= row_len;
    // The table's entries cannot be checked here (they live on the GPU): the caller keeps them
    // below the pool's page count (`KvCache` does); a pool with fewer pages than the table
    // has entries is refused.
    let page_elems = kv.page as usize * kv_heads * hd;
    let pool = |t: &Tensor| {
        elems(t) >= page_elems * elems(kv.pages) && elems(t).is_multiple_of(page_elems.max(1))
    };
    kv_heads > 0
        && hd.is_multiple_of(4)
        && hd <= 256
        && p.rot_dims.is_multiple_of(2)
        && p.rot_dims <= p.head_dim
        && heads.is_multiple_of(kv_heads)
        && p.n_keys as usize <= ctx
        && within(p.q_src, heads * hd)
        && within(p.k_src, kv_heads * hd)
        && within(p.v_src, kv_heads * hd)
        && (p.norm == 0) == qk_norm.is_none()
        && qk_norm.is_none_or(|w| elems(w) == 2 * hd)
        && p.page == kv.page
        && kv.page > 0
        && kv.page.is_multiple_of(attention::PAGE_MULTIPLE)
        && elems(kv.pages) * kv.page as usize >= ctx
        && pool(kv.k)
        && elems(kv.v) == elems(kv.k)
}

/// Scratch elements [`attention_decode`] needs for a cache of `max_ctx` positions.
pub fn attention_scratch(heads: u32, head_dim: u32, max_ctx: u32) -> usize {
    let blocks = max_ctx.div_ceil(attention::keys_per_block(head_dim)).max(1);
    heads as usize * blocks as usize * attention::part_stride(head_dim)
}

/// Samples one token from `logits` (modified in place by the penalty): the id goes to
/// `tokens[p.out_index]` and `out[0]`, with the count of tokens that kept a probability in
/// `out[1]`; `probs` is `[vocab]` f32 scratch, `part` the stages' partials and state
/// ([`gpuport_kernels::sample::scratch_words`] u32); the ids to penalize are
/// `tokens[p.recent_start..][..p.n_recent]`. Records the chain of stages `p` needs
/// ([`gpuport_kernels::sample::stages`]: 2 dispatches greedy, 12 with top-p, 20 with top-k
/// too, one more with a penalty).
pub fn sample(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    p: gpuport_kernels::sample::SampleParams,
    [logits, probs, tokens, out, part]: [&Tensor; 5],
) -> Result<(), GpuError> {
    use gpuport_kernels::sample;
    let v = p.vocab as usize;
    let slices = v.div_ceil(sample::SLICE) as u32;
    if elems(logits) != v
        || elems(probs) < v
        || elems(part) < sample::scratch_words(v)
        || elems(tokens) < p.recent_start as usize + p.n_recent as usize
        || elems(tokens) <= p.out_index as usize
        || elems(out) < 2
        || v == 0
        || slices > gpu.limits().max_compute_workgroups_per_dimension
    {
        return Err(GpuError::Shape(format!(
            "sampling {p:?} with logits {:?}, scratch {:?} and tokens {:?}",
            logits.shape, part.shape, tokens.shape
        )));
    }
    for (stage, round) in sample::stages(&p) {
        let groups = if stage.per_slice() { slices } else { 1 };
        let params = sample::SampleParams { round, ..p };
        launch(
            gpu,
            rec,
            &sample::spec(stage),
            &params,
            &[logits, probs, tokens, out, part],
            (groups, 1),
        )?;
    }
    Ok(())
}

/// `dst[i] = src[idx[idx_first + i idx_stride]]` for rows of `width` 32-bit words (`src`, `dst`
/// of any 32-bit element type): the token ids of a batch's rows from the token buffer, or the
/// activation rows whose logits are wanted.
pub fn gather(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    [src, idx, dst]: [&Tensor; 3],
    (rows, width): (usize, usize),
    (idx_first, idx_stride): (usize, usize),
) -> Result<(), GpuError> {
    let last = idx_first + rows.saturating_sub(1) * idx_stride;
    if rows == 0 {
        return Ok(());
    }
    if elems(dst) < rows * width || elems(idx) <= last || width == 0 || dst.shares_buffer(src) {
        return Err(GpuError::Shape(format!(
            "gather of {rows} rows of {width} from {:?} by {:?} (from {idx_first}, stride \
             {idx_stride}) into {:?}",
            src.shape, idx.shape, dst.shape
        )));
    }
    let wg = 256;
    let grid = grid_2d(
        ((rows * width) as u32).div_ceil(wg),
        gpu.limits().max_compute_workgroups_per_dimension,
    );
    let p = rowops::GatherParams {
        rows: rows as u32,
        width: width as u32,
        idx_first: idx_first as u32,
        idx_stride: idx_stride as u32,
        grid_x: grid.0,
        pad: [0; 3],
    };
    launch(
        gpu,
        rec,
        &rowops::gather_spec(wg),
        &p,
        &[src, idx, dst],
        grid,
    )
}
