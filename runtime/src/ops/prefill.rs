//! Launches of the prefill kernels: the tiled GEMM over a batch of tokens and the two
//! attention passes (preparation, causal attention).

use gpuport_kernels::attention::{self, DecodeAttnParams};
use gpuport_kernels::gemm::{self, GemmParams, GemmTile};
use gpuport_kernels::gemv::GemvInput;

use super::rows::{KvLayer, attention_inputs_fit};
use super::{elems, launch, matrix, reduction, row_chunks, whole};
use crate::device::Gpu;
use crate::error::GpuError;
use crate::recorder::Recorder;
use crate::tensor::Tensor;

/// One GEMM: `Y[t, y_first + r] = (W input(X[t]))[r] (+ residual or bias)` for `tokens` token
/// rows.
#[derive(Clone, Copy)]
pub struct GemmCall<'a> {
    /// The matrix `[rows, cols]`.
    pub w: &'a Tensor,
    /// The input, `tokens` rows of `x_stride` elements (at least `input.x_len(cols)`).
    pub x: &'a Tensor,
    /// The output, `tokens` rows of `y_stride` elements.
    pub y: &'a Tensor,
    /// Tokens (rows of X and Y).
    pub tokens: usize,
    /// Elements per row of X.
    pub x_stride: usize,
    /// Elements per row of Y.
    pub y_stride: usize,
    /// Column of Y the first row of W goes to.
    pub y_first: usize,
    /// Added to the output (same indexing as `y`).
    pub residual: Option<&'a Tensor>,
    /// Added to every token's row: element `y_first + r` to column `y_first + r` (at least
    /// `y_first + rows` elements; a stacked projection's biases side by side). Not with
    /// `residual`.
    pub bias: Option<&'a Tensor>,
    /// Plain or a GLU of each X row's two halves.
    pub input: GemvInput,
}

/// Records one [`GemmCall`] (weights larger than one binding in row chunks).
pub fn gemm(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    call: GemmCall<'_>,
    tile: GemmTile,
) -> Result<(), GpuError> {
    let (ty, rows, cols, row_bytes) = matrix(call.w)?;
    let width = call.input.x_len(cols);
    let rows_of = |t: &Tensor, stride: usize| elems(t) / stride.max(1);
    let ok = gemm::INPUTS.contains(&call.input)
        && call.x_stride >= width
        && call.y_stride >= call.y_first + rows
        && rows_of(call.x, call.x_stride) >= call.tokens
        && rows_of(call.y, call.y_stride) >= call.tokens
        && call.residual.is_none_or(|r| elems(r) == elems(call.y))
        && !call.y.shares_buffer(call.x)
        && call.residual.is_none_or(|r| !call.y.shares_buffer(r))
        && call.bias.is_none_or(|b| {
            call.residual.is_none() && elems(b) >= call.y_first + rows && !call.y.shares_buffer(b)
        })
        && call.tokens as u64 <= u64::from(tile.tm) * u64::from(u16::MAX);
    if !ok {
        return Err(GpuError::Shape(format!(
            "GEMM [{rows}, {cols}] ({:?} input) of {} tokens: x {:?} (stride {}), y {:?} \
             (stride {}, from column {}), residual {:?}, bias {:?}",
            call.input,
            call.tokens,
            call.x.shape,
            call.x_stride,
            call.y.shape,
            call.y_stride,
            call.y_first,
            call.residual.map(|r| &r.shape),
            call.bias.map(|b| &b.shape)
        )));
    }
    let limits = gpu.limits();
    if !GemmTile::all().contains(&tile) {
        return Err(GpuError::Shape(format!(
            "GEMM tile {tile:?}: sides must be among {:?}",
            gemm::TILE_VALUES
        )));
    }
    if tile.workgroup_bytes() > limits.max_compute_workgroup_storage_size {
        return Err(GpuError::Shape(format!(
            "GEMM tile {tile:?} takes {} bytes of workgroup memory, the adapter allows {}",
            tile.workgroup_bytes(),
            limits.max_compute_workgroup_storage_size
        )));
    }
    if rows == 0 || call.tokens == 0 {
        return Ok(());
    }
    let pipeline = gpu.pipeline(&gemm::spec(ty, tile, call.input))?;
    let chunks = row_chunks(
        rows as u64,
        row_bytes as u64,
        limits.max_storage_buffer_binding_size,
        u64::from(limits.min_storage_buffer_offset_alignment),
    )?;
    for (first, n, byte_offset) in chunks {
        let p = GemmParams {
            rows: n as u32,
            cols: cols as u32,
            tokens: call.tokens as u32,
            row_bytes: row_bytes as u32,
            w_offset: 0,
            x_offset: 0,
            x_stride: call.x_stride as u32,
            x_aux: cols as u32,
            y_offset: (call.y_first + first as usize) as u32,
            y_stride: call.y_stride as u32,
            residual: match (call.residual, call.bias) {
                (Some(_), _) => 1,
                (None, Some(_)) => 2,
                (None, None) => 0,
            },
            pad: 0,
        };
        let grid = (
            (n as u32).div_ceil(tile.tn),
            (call.tokens as u32).div_ceil(tile.tm),
        );
        if grid.0 > limits.max_compute_workgroups_per_dimension {
            return Err(GpuError::Shape(format!(
                "GEMM of {n} rows needs {} row tiles, more than the adapter's {}",
                grid.0, limits.max_compute_workgroups_per_dimension
            )));
        }
        let slot = rec.uniform(&p)?;
        let len = (n * row_bytes as u64).div_ceil(4) * 4;
        let bindings = [
            (call.w, byte_offset, len),
            whole(call.x),
            whole(call.y),
            whole(call.residual.or(call.bias).unwrap_or(call.x)),
        ];
        let group = rec.bind_group(&pipeline, slot, &bindings);
        rec.dispatch(&pipeline, &group, (grid.0, grid.1, 1));
    }
    Ok(())
}

/// Attention of a batch of `p.tokens` tokens at positions `p.n_keys - p.tokens ..`: their
/// queries, keys and values read from `qkv` (row t at `t * p.qkv_stride`, offsets `p.q_src`,
/// `p.k_src`, `p.v_src`), normalized per head when `p.norm` is set (weights `qk_norm`) and
/// rotated; keys and values written to the cache `kv`, the prepared queries to `q`
/// (`[tokens, heads, head_dim]`), and, when `out` is given, each token's causal attention
/// output to it (`[tokens, heads * head_dim]`; without it only the cache is filled, as for a
/// model's last layer). Tensors `[qkv, q]`. [`attention_rows`] with no row table.
#[allow(clippy::too_many_arguments)]
pub fn attention_prefill(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    p: DecodeAttnParams,
    neox: bool,
    [qkv, q]: [&Tensor; 2],
    kv: KvLayer<'_>,
    out: Option<&Tensor>,
    qk_norm: Option<&Tensor>,
) -> Result<(), GpuError> {
    let call = RowsAttention {
        p,
        neox,
        qkv,
        q,
        kv,
        rows: None,
        out,
        qk_norm,
    };
    attention_rows(gpu, rec, call)
}

/// The rows of a batch that mixes sequences: entries `4 (first + t) ..` of `table` (u32) are
/// token t's position, the first entry of its sequence's page table in the [`KvLayer`]'s
/// `pages` (which then holds every sequence's table), its token's index in the token buffer,
/// and 0.
#[derive(Clone, Copy)]
pub struct RowTable<'a> {
    /// (position, page-table base, token index, 0) per row.
    pub table: &'a Tensor,
    /// The batch's first pair.
    pub first: u32,
}

/// One launch of the prefill attention passes over a batch of rows.
#[derive(Clone, Copy)]
pub struct RowsAttention<'a> {
    /// Shapes and options; `tokens` rows, `qkv_stride` between their projections. Without a
    /// row table the rows are positions `n_keys - tokens ..` of one sequence; with one,
    /// `n_keys` bounds every row's position + 1 and `max_ctx` one sequence's capacity.
    pub p: DecodeAttnParams,
    /// RoPE pairs (i, i + d/2).
    pub neox: bool,
    /// The rows' projections.
    pub qkv: &'a Tensor,
    /// The prepared queries (`[tokens, heads, head_dim]`).
    pub q: &'a Tensor,
    /// The caches.
    pub kv: KvLayer<'a>,
    /// Each row's position and sequence, when the batch mixes sequences.
    pub rows: Option<RowTable<'a>>,
    /// The attention output (`[tokens, heads * head_dim]`), or only fill the caches.
    pub out: Option<&'a Tensor>,
    /// Query norm then key norm weights, when `p.norm` is set.
    pub qk_norm: Option<&'a Tensor>,
}

/// Records a [`RowsAttention`]: the preparation pass (queries into `q`, keys and values into
/// each row's sequence at its position), then, with an output, the causal pass (each row
/// attends to its own sequence's positions up to its own).
pub fn attention_rows(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    call: RowsAttention<'_>,
) -> Result<(), GpuError> {
    const WG: u32 = 128;
    let RowsAttention {
        mut p,
        neox,
        qkv,
        q,
        kv,
        rows,
        out,
        qk_norm,
    } = call;
    let (heads, hd, tokens) = (p.heads as usize, p.head_dim as usize, p.tokens as usize);
    p.page = kv.page;
    p.row_table = u32::from(rows.is_some());
    p.rows_first = rows.map_or(0, |r| r.first);
    // With a row table the pages binding holds every sequence's table: the checks see one
    // sequence's share of it.
    let seq_pages = (p.max_ctx as usize).div_ceil(kv.page.max(1) as usize);
    let own = kv.pages.view(0, seq_pages.min(elems(kv.pages)));
    let checked = match rows {
        Some(_) => KvLayer { pages: &own, ..kv },
        None => kv,
    };
    let ok = attention_inputs_fit(&p, p.qkv_stride as usize, checked, qk_norm)
        && tokens > 0
        && (rows.is_some() || tokens <= p.n_keys as usize)
        && rows.is_none_or(|r| elems(r.table) >= 4 * (r.first as usize + tokens))
        && elems(qkv) >= tokens * p.qkv_stride as usize
        && elems(q) >= tokens * heads * hd
        && out.is_none_or(|o| elems(o) >= tokens * heads * hd)
        && p.tokens <= gpu.limits().max_compute_workgroups_per_dimension;
    if !ok {
        return Err(GpuError::Shape(format!(
            "prefill attention {p:?} with q/k/v {:?}, caches {:?}, {:?}, page table {:?}, \
             queries {:?}, output {:?}, norm weights {:?}, row table {:?}",
            qkv.shape,
            kv.k.shape,
            kv.v.shape,
            kv.pages.shape,
            q.shape,
            out.map(|o| &o.shape),
            qk_norm.map(|w| &w.shape),
            rows.map(|r| &r.table.shape)
        )));
    }
    let table = rows.map_or(kv.pages, |r| r.table);
    launch(
        gpu,
        rec,
        &attention::prep_spec(WG, reduction(gpu), neox),
        &p,
        &[qkv, kv.k, kv.v, q, qk_norm.unwrap_or(qkv), kv.pages, table],
        (p.heads + p.kv_heads, p.tokens),
    )?;
    let Some(out) = out else {
        return Ok(());
    };
    let kb = attention::keys_per_block(p.head_dim);
    launch(
        gpu,
        rec,
        &attention::prefill_spec(WG, kb, reduction(gpu)),
        &p,
        &[q, kv.k, kv.v, out, kv.pages, table],
        (p.heads, p.tokens),
    )
}
