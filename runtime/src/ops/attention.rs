//! Attention launches (`gpuport_kernels::attention`): decode (split over key blocks, then
//! combined) and the row passes of prefill and batched forwards (preparation, causal
//! attention), all over paged KV caches.

use gpuport_kernels::attention::{self, DecodeAttnParams};
use gpuport_kernels::quant::GgmlType;

use super::{elems, launch, launch_3d, reduction};
use crate::device::Gpu;
use crate::error::GpuError;
use crate::recorder::Recorder;
use crate::tensor::{Elem, Tensor};

/// Threads per workgroup of both decode-attention passes.
const ATTENTION_WG: u32 = 128;

/// One layer of a paged KV cache as the attention kernels see it: pools of keys and values
/// (`[pages, page, kv_heads, head_dim]`, both f32 or both f16: [`KvLayer::cache_type`]) and the
/// sequence's page table (u32, logical page → pool page; `attn_pages.wgsl`).
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

impl KvLayer<'_> {
    /// The element type both pools hold, one of [`attention::KV_TYPES`] (the kernels' `kv`
    /// variant); `None` when they differ or hold anything else.
    pub fn cache_type(&self) -> Option<GgmlType> {
        let ty = attention::KV_TYPES
            .into_iter()
            .find(|t| cache_elem(*t) == Some(self.k.elem))?;
        (self.v.elem == self.k.elem).then_some(ty)
    }
}

/// The tensor element of a KV pool of `kv` values (one of [`attention::KV_TYPES`]); `None`
/// for any other type.
pub fn cache_elem(kv: GgmlType) -> Option<Elem> {
    match kv {
        GgmlType::F32 => Some(Elem::F32),
        GgmlType::F16 => Some(Elem::F16),
        _ => None,
    }
}

/// [`KvLayer::cache_type`], or the error naming the pools.
fn cache_type(kv: KvLayer<'_>) -> Result<GgmlType, GpuError> {
    kv.cache_type().ok_or_else(|| {
        GpuError::Shape(format!(
            "KV caches of {:?} keys and {:?} values (both f32 or both f16)",
            kv.k.elem, kv.v.elem
        ))
    })
}

/// Decode attention for a new token: its queries, keys and values are read from `qkv` at
/// `p.q_src`, `p.k_src`, `p.v_src`, normalized per head when `p.norm` is set (weights
/// `qk_norm`: query norm then key norm) and rotated (RoPE, `neox` pair layout) in the kernel;
/// the key and value are appended to the cache `kv` at position `p.n_keys - 1`; each block of
/// cached keys leaves its partial result in `part`.
#[derive(Clone, Copy)]
pub struct DecodeAttention<'a> {
    /// Shapes and options (`blocks` and `page` are set by the launch).
    pub p: DecodeAttnParams,
    /// RoPE pairs (i, i + d/2).
    pub neox: bool,
    /// The token's projections.
    pub qkv: &'a Tensor,
    /// The per-block partials ([`attention_scratch`] elements).
    pub part: &'a Tensor,
    /// The cache.
    pub kv: KvLayer<'a>,
    /// Query norm then key norm weights, when `p.norm` is set.
    pub qk_norm: Option<&'a Tensor>,
}

/// Records a [`DecodeAttention`] and the combine pass: every head's output lands in `out`.
pub fn attention_decode(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    call: DecodeAttention<'_>,
    out: &Tensor,
) -> Result<(), GpuError> {
    let part = call.part;
    let p = attention_split(gpu, rec, call)?;
    attention_combine(gpu, rec, &p, part, out)
}

/// The second pass of [`attention_decode`]: combines the partials [`attention_split`] left in
/// `part` (`p` as it returned) into the attention output `out` (`heads × head_dim`).
pub fn attention_combine(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    p: &DecodeAttnParams,
    part: &Tensor,
    out: &Tensor,
) -> Result<(), GpuError> {
    let n = (p.heads * p.head_dim) as usize;
    combine(gpu, rec, p, (part, out), n, false)
}

/// [`attention_combine`] with the output as the int8-input GEMV's blocks
/// ([`super::Q8Blocks::words`] of `heads × head_dim`): the output projection's int8 input in
/// the combining dispatch, the same numbers as the f32 output quantized apart. `head_dim` must
/// be a multiple of 32.
pub fn attention_combine_blocks(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    p: &DecodeAttnParams,
    part: &Tensor,
    blocks: &Tensor,
) -> Result<(), GpuError> {
    if !p.head_dim.is_multiple_of(attention::COMBINE_COLUMNS) {
        return Err(GpuError::Shape(format!(
            "int8 blocks of attention heads of {} (a multiple of {})",
            p.head_dim,
            attention::COMBINE_COLUMNS
        )));
    }
    let words = super::Q8Blocks::words((p.heads * p.head_dim) as usize);
    combine(gpu, rec, p, (part, blocks), words, true)
}

fn combine(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    p: &DecodeAttnParams,
    (part, out): (&Tensor, &Tensor),
    out_elems: usize,
    blocks: bool,
) -> Result<(), GpuError> {
    let need = (p.heads * p.blocks) as usize * attention::part_stride(p.head_dim);
    if elems(out) != out_elems || elems(part) < need {
        return Err(GpuError::Shape(format!(
            "combining {} heads × {} in {} blocks from {:?} into {:?}",
            p.heads, p.head_dim, p.blocks, part.shape, out.shape
        )));
    }
    launch(
        gpu,
        rec,
        &attention::combine_spec(ATTENTION_WG, reduction(gpu), blocks),
        p,
        &[part, out],
        (p.heads, p.head_dim.div_ceil(attention::COMBINE_COLUMNS)),
    )
}

/// The first pass of [`attention_decode`] alone: the per-block partials land in `part` (for a
/// GEMV with the [`gpuport_kernels::gemv::GemvInput::AttnCombine`] input to combine); returns the
/// parameters with `blocks` and `page` set.
pub fn attention_split(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    call: DecodeAttention<'_>,
) -> Result<DecodeAttnParams, GpuError> {
    let DecodeAttention {
        mut p,
        neox,
        qkv,
        part,
        kv,
        qk_norm,
    } = call;
    let kb = decode_keys_per_block(gpu, p.head_dim);
    let kv_type = cache_type(kv)?;
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
        &attention::decode_spec(ATTENTION_WG, kb, reduction(gpu), neox, kv_type),
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

/// Keys per block of [`attention_decode`]'s split pass on `gpu`: [`attention::keys_per_block`]
/// on a GPU (small blocks: a decode step's few heads fill it with workgroups), the most a block
/// holds on a CPU adapter ([`CPU_DECODE_KEYS_PER_BLOCK`]), unless `GPUPORT_ATTN_DECODE_KB`
/// names another of [`attention::KB_VALUES`] at least [`attention::keys_per_block`] (the
/// partials [`attention_scratch`] sized still hold them), for A/Bs.
pub fn decode_keys_per_block(gpu: &Gpu, head_dim: u32) -> u32 {
    static KB: std::sync::OnceLock<Option<u32>> = std::sync::OnceLock::new();
    let least = attention::keys_per_block(head_dim);
    let default = if gpu.is_cpu() {
        CPU_DECODE_KEYS_PER_BLOCK.max(least)
    } else {
        least
    };
    super::knob_set(&KB, "GPUPORT_ATTN_DECODE_KB")
        .filter(|kb| attention::KB_VALUES.contains(kb) && *kb >= least)
        .unwrap_or(default)
}

/// Keys per decode-attention block on a CPU adapter: 64, the most a block holds (it lies in one
/// page of [`attention::PAGE_MULTIPLE`] positions). A CPU runs a workgroup's lanes as vector
/// passes, each barrier a switch between them, and every block prepares its head's query
/// again, so fewer, longer blocks win: on lavapipe Gemma 3's decode attention (`xtask bench
/// --other-kernels`, 4 × 256 heads, f32 cache) at 512 keys took 3.02 against 4.07 ms and at
/// 4,096 keys 17.9 against 30.6 ms with 16-key blocks (one run each, v41).
pub const CPU_DECODE_KEYS_PER_BLOCK: u32 = 64;

/// Scratch elements [`attention_decode`] needs for a cache of `max_ctx` positions.
pub fn attention_scratch(heads: u32, head_dim: u32, max_ctx: u32) -> usize {
    let blocks = max_ctx.div_ceil(attention::keys_per_block(head_dim)).max(1);
    heads as usize * blocks as usize * attention::part_stride(head_dim)
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
    /// The most keys a row of the batch attends to (its position + 1), at most `n_keys`:
    /// sizes the causal pass's splits.
    pub keys: u32,
}

/// One launch of the prefill attention passes over a batch of `p.tokens` rows: their
/// queries, keys and values read from `qkv` (row t at `t * p.qkv_stride`, offsets `p.q_src`,
/// `p.k_src`, `p.v_src`), normalized per head when `p.norm` is set (weights `qk_norm`) and
/// rotated; keys and values written to the cache `kv` at each row's position, the prepared
/// queries to `q`, and, when `out` is given, each row's causal attention output to it
/// (without it only the cache is filled, as for a model's last layer).
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
    /// With a row table: scratch for the partials of rows whose keys the causal pass splits
    /// across workgroups ([`attention::row_splits`]; as many splits as it holds, up to
    /// [`attention::ROW_SPLITS_MAX`], of `tokens × heads` partials of
    /// `attention::part_stride(head_dim)` floats each).
    pub part: Option<&'a Tensor>,
    /// For an output projection that reads int8 blocks: where the rows' keys split, the
    /// combining pass writes the output as those blocks here ([`super::Q8Blocks::words`] of
    /// `heads × head_dim` a row, `tokens` rows) instead of into `out`, one dispatch fewer
    /// than combining then quantizing, the same numbers ([`attention_combine_blocks`]);
    /// [`attention_rows`] says whether it did. Needs `head_dim` a multiple of
    /// [`attention::COMBINE_COLUMNS`] (else ignored).
    pub out_blocks: Option<&'a Tensor>,
}

/// How the causal pass over a row table walks each row's keys ([`attention_rows_on`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowsPass {
    /// `attn_prefill.wgsl`: a row's keys in blocks staged in workgroup memory, a thread per
    /// (head, key) for the scores and per (head, column) for the values.
    Blocks,
    /// `attn_rows_sg.wgsl`: a row table's rows only; subgroups walk the keys, lanes across the
    /// head dim, scores as subgroup sums ([`attention::rows_sg_shape`] must hold on the
    /// adapter's narrowest subgroups).
    Subgroups,
}

/// The pass [`attention_rows`] gives a row table: [`RowsPass::Subgroups`] where the adapter's
/// subgroups hold the heads ([`rows_sg_fits`]) on CPU adapters, and on GPUs where
/// `GPUPORT_ATTN_ROWS_SG=1` (0 keeps the blocks on a CPU adapter too); else
/// [`RowsPass::Blocks`]. On lavapipe (this project's 2-core CI machine, docs/performance.md,
/// "v39") 8 streams of SmolLM2 decoded 19.7 / 20.1 tok/s on subgroups against 16.1 / 16.3 in
/// blocks. On an H100 ("v40") it lost to the blocks once both dropped naga's loop bounding
/// (the 8B's 64 rows × 192 keys 94.7 against 67.5 µs; only Gemma 3's head dim 256 was faster
/// on subgroups, 22.0 against 24.2), so GPUs keep the blocks.
pub fn rows_pass(gpu: &Gpu, p: &DecodeAttnParams) -> RowsPass {
    static ON: std::sync::OnceLock<Option<u32>> = std::sync::OnceLock::new();
    let on = super::knob_set(&ON, "GPUPORT_ATTN_ROWS_SG").map_or(gpu.is_cpu(), |v| v == 1);
    if on && rows_sg_fits(gpu, p).is_some() {
        RowsPass::Subgroups
    } else {
        RowsPass::Blocks
    }
}

/// The subgroup pass's `(heads a workgroup, columns a lane)` for `p`'s heads on this adapter:
/// [`attention::rows_sg_shape`] at its narrowest subgroups, where it has subgroups and gives a
/// workgroup the memory of [`attention::ROWS_SG_PARTS`] vec4s.
pub fn rows_sg_fits(gpu: &Gpu, p: &DecodeAttnParams) -> Option<(u32, u32)> {
    let width = gpu.subgroup_min_width();
    let memory = gpu.limits().max_compute_workgroup_storage_size >= 16 * attention::ROWS_SG_PARTS;
    (gpu.has_subgroups() && memory)
        .then(|| attention::rows_sg_shape(p.heads, p.kv_heads, p.head_dim, width))
        .flatten()
}

/// Records a [`RowsAttention`]: the preparation pass (queries into `q`, keys and values into
/// each row's sequence at its position), then, with an output, the causal pass (each row
/// attends to its own sequence's positions up to its own): over tiles of rows for consecutive
/// rows of one sequence where [`tile_keys`] allows, else a row per workgroup (for a row table
/// as [`rows_pass`] says). Returns whether the output went to `out_blocks` as int8 blocks
/// (else it is in `out`).
pub fn attention_rows(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    call: RowsAttention<'_>,
) -> Result<bool, GpuError> {
    attention_rows_on(gpu, rec, call, rows_pass(gpu, &call.p))
}

/// [`attention_rows`] with a row table's causal pass chosen by the caller (`pass`; without a
/// row table it is ignored): tests run both.
pub fn attention_rows_on(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    call: RowsAttention<'_>,
    pass: RowsPass,
) -> Result<bool, GpuError> {
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
        part,
        out_blocks,
    } = call;
    let (heads, hd, tokens) = (p.heads as usize, p.head_dim as usize, p.tokens as usize);
    let kv_type = cache_type(kv)?;
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
        &attention::prep_spec(WG, reduction(gpu), neox, kv_type),
        &p,
        &[qkv, kv.k, kv.v, q, qk_norm.unwrap_or(qkv), kv.pages, table],
        (p.heads + p.kv_heads, p.tokens),
    )?;
    let Some(out) = out else {
        return Ok(false);
    };
    if rows.is_none() && attention_on_coop(gpu, p.head_dim, p.tokens as usize) {
        launch(
            gpu,
            rec,
            &attention::coop_tiles_spec(p.head_dim, kv_type),
            &p,
            &[q, kv.k, kv.v, out, kv.pages],
            (p.heads, p.tokens.div_ceil(attention::tile_rows(p.head_dim))),
        )?;
        return Ok(false);
    }
    if let Some(keys) = rows.is_none().then(|| tile_keys(gpu, p.head_dim)).flatten() {
        launch(
            gpu,
            rec,
            &attention::tiles_spec(p.head_dim, keys, kv_type),
            &p,
            &[q, kv.k, kv.v, out, kv.pages],
            (p.heads, p.tokens.div_ceil(attention::tile_rows(p.head_dim))),
        )?;
        return Ok(false);
    }
    // A row per workgroup and GQA group (or the largest part of one that fits): a row table's
    // on subgroups where the caller asks; otherwise in blocks of keys as many as suit a row
    // table's rows or one sequence's.
    let (spec, group, kb) = match (rows, pass) {
        (Some(_), RowsPass::Subgroups) => {
            let Some((group, columns)) = rows_sg_fits(gpu, &p) else {
                return Err(GpuError::Shape(format!(
                    "row-table attention on subgroups: {} heads on {} KV heads of {} values do \
                     not fit subgroups of {} lanes",
                    p.heads,
                    p.kv_heads,
                    p.head_dim,
                    gpu.subgroup_min_width()
                )));
            };
            // Splits in whole units of 16 keys (any count would do: no blocks here).
            let spec = attention::rows_sg_spec(p.head_dim, group, columns, kv_type);
            (spec, group, 16)
        }
        _ => {
            let limit = gpu.limits().max_compute_workgroup_storage_size;
            let keys = match rows {
                Some(_) if !row_tables_in_prompt_blocks(kv_type) => {
                    attention::row_table_keys(p.head_dim, limit)
                }
                _ => attention::row_keys(p.head_dim, limit),
            };
            let fit = keys.map(|kb| kb.min(row_keys_most())).and_then(|kb| {
                attention::row_group(p.heads, p.kv_heads, p.head_dim, kb).map(|g| (kb, g))
            });
            let Some((kb, group)) = fit else {
                return Err(GpuError::Shape(format!(
                    "prefill attention: heads of {} values do not fit the per-row pass's {} \
                     query values and {limit} bytes of workgroup memory",
                    p.head_dim,
                    attention::ROW_QUERY_VALUES
                )));
            };
            (
                attention::prefill_spec(p.head_dim, kb, group, kv_type),
                group,
                kb,
            )
        }
    };
    p.group = group;
    let groups = p.heads / group;
    let stride = attention::part_stride(p.head_dim);
    // Rows of several sequences, few enough for the partials' scratch: each row's keys split
    // across workgroups, then combined per (row, head).
    let split = rows.zip(part).and_then(|(r, part)| {
        let max_splits = elems(part) / (tokens * heads * stride).max(1);
        let keys = r.keys.clamp(1, p.n_keys.max(1));
        attention::row_splits(
            groups,
            p.tokens,
            keys,
            kb,
            max_splits as u32,
            row_split_target(),
        )
        .map(|s| (s, part))
    });
    if let Some(((splits, keys), part)) = split {
        let mut ps = p;
        ps.split_keys = keys;
        ps.blocks = splits;
        launch_3d(
            gpu,
            rec,
            &spec,
            &ps,
            &[q, kv.k, kv.v, part, kv.pages, table],
            (groups, p.tokens, splits),
        )?;
        // The combine's heads are the (row, head) pairs: its output is `out`'s rows (or, as
        // blocks, their int8 blocks: a pair's columns are whole blocks of its row).
        let pairs = DecodeAttnParams {
            heads: p.heads * p.tokens,
            ..ps
        };
        if let Some(blocks) =
            out_blocks.filter(|_| p.head_dim.is_multiple_of(attention::COMBINE_COLUMNS))
        {
            let words = tokens * super::Q8Blocks::words(heads * hd);
            if elems(blocks) < words {
                return Err(GpuError::Shape(format!(
                    "int8 blocks of {tokens} attention rows ({words} words) into {:?}",
                    blocks.shape
                )));
            }
            attention_combine_blocks(gpu, rec, &pairs, part, &blocks.view(0, words))?;
            return Ok(true);
        }
        attention_combine(gpu, rec, &pairs, part, out)?;
        return Ok(false);
    }
    launch(
        gpu,
        rec,
        &spec,
        &p,
        &[q, kv.k, kv.v, out, kv.pages, table],
        (groups, p.tokens),
    )?;
    Ok(false)
}

/// Whether callers ask [`attention_rows`] for an int8-input output projection's blocks
/// ([`RowsAttention::out_blocks`]): yes, unless `GPUPORT_ROWS_COMBINE_BLOCKS=0` (the combine
/// then a quantizing pass of its own, for A/Bs).
pub fn rows_combine_blocks() -> bool {
    static ON: std::sync::OnceLock<u8> = std::sync::OnceLock::new();
    super::knob(&ON, "GPUPORT_ROWS_COMBINE_BLOCKS", 1) != 0
}

/// Whether a row table's per-row pass over a cache of `kv_type` takes the prompts' blocks
/// ([`attention::row_keys`]: 32 keys up to head dim 128) rather than its own half-size ones
/// ([`attention::row_table_keys`], since v39): yes for an f16 cache (the GPUs' default), no
/// for f32; `GPUPORT_ROW_TABLE_BLOCKS=1` / `=0` forces one for A/Bs. v39 halved the blocks
/// when one was staged as f32 rows beside queries sized for the largest group; since v53 a
/// workgroup stages the cache's own words and queries for its group, and on an H100
/// (docs/performance.md, "v54") the f16 cache's pass at 64 rows of 192 keys took 33.4 / 21.8
/// / 18.7 / 15.4 µs in 32-key blocks against 37.6 / 24.7 / 21.9 / 19.0 in 16 (Llama-8B,
/// Llama-1B, Gemma 3, SmolLM2 shapes; 8 rows of the 8B level), the 8B's 32 streams +1.9%
/// end to end; an f32 cache's 8B pass was slower in 32 (51.6 against 47.1 µs).
pub fn row_tables_in_prompt_blocks(kv_type: GgmlType) -> bool {
    static FORCED: std::sync::OnceLock<u8> = std::sync::OnceLock::new();
    match super::knob(&FORCED, "GPUPORT_ROW_TABLE_BLOCKS", 2) {
        0 => false,
        1 => true,
        _ => kv_type == GgmlType::F16,
    }
}

/// Workgroups the per-row causal pass over a row table aims for when it splits rows' keys:
/// [`attention::ROW_SPLIT_WORKGROUPS`]; `GPUPORT_ROW_SPLIT_WORKGROUPS` moves it (A/B
/// measurements on an adapter).
pub fn row_split_target() -> u32 {
    static TARGET: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    super::knob(
        &TARGET,
        "GPUPORT_ROW_SPLIT_WORKGROUPS",
        attention::ROW_SPLIT_WORKGROUPS,
    )
}

/// Most keys per block of the per-row causal pass ([`attention::row_keys`] and
/// [`attention::row_table_keys`] give the most that fit): 32 unless `GPUPORT_ROW_KEYS` says
/// 16, 8 or 4, for A/Bs (fewer keys a block: fewer registers, shorter loops, more blocks).
pub fn row_keys_most() -> u32 {
    static MOST: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    let most = super::knob(&MOST, "GPUPORT_ROW_KEYS", 32);
    if [4, 8, 16, 32].contains(&most) {
        most
    } else {
        32
    }
}

/// Whether the causal pass of a batch of `tokens` consecutive rows of one sequence runs on
/// tensor cores (`attn_coop.wgsl`, f16 operands): where the device has f16 cooperative
/// matrices ([`Gpu::has_coop_f16`]), from the batch size the GEMMs move to them
/// ([`super::coop_min_tokens`]: shorter prompts keep f32 throughout), where the f32 tiled pass
/// would run ([`tile_keys`]; so `GPUPORT_ATTN_TILES=0` keeps the per-row pass here too), when
/// its workgroup memory fits. `GPUPORT_ATTN_COOP=0` keeps the f32 tiled pass (A/B
/// measurements, an escape hatch).
pub fn attention_on_coop(gpu: &Gpu, head_dim: u32, tokens: usize) -> bool {
    static OFF: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let off = *OFF.get_or_init(|| std::env::var("GPUPORT_ATTN_COOP").is_ok_and(|v| v == "0"));
    !off && gpu.has_coop_f16()
        && tokens >= super::coop_min_tokens()
        && tile_keys(gpu, head_dim).is_some()
        && attention::TILE_HEAD_DIMS.contains(&head_dim)
        && attention::coop_tiles_workgroup_bytes(head_dim)
            <= gpu.limits().max_compute_workgroup_storage_size
}

/// Keys per block when the causal pass of a batch of consecutive rows of one sequence runs on
/// tiles of rows (`attn_tiles.wgsl`: each key and value read once per tile rather than once
/// per row): the most the adapter's workgroup memory holds, at the head dims the pass is
/// written for; `None` keeps the per-row pass. `GPUPORT_ATTN_TILES=0` keeps it always (A/B
/// measurements, an escape hatch).
pub fn tile_keys(gpu: &Gpu, head_dim: u32) -> Option<u32> {
    static OFF: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let off = *OFF.get_or_init(|| std::env::var("GPUPORT_ATTN_TILES").is_ok_and(|v| v == "0"));
    if off {
        return None;
    }
    attention::tile_keys(head_dim, gpu.limits().max_compute_workgroup_storage_size)
}
