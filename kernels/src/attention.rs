//! Attention kernels. Decode: one query row per head against the KV cache (GQA, sliding
//! window, optional logit soft cap), split over blocks of keys so that every key block is a
//! workgroup, then combined per head; the new token's query and key are normalized (optional
//! QK-norm) and rotated (RoPE) on the way in, and its key and value appended to the cache, in
//! the same dispatch.

use bytemuck::{Pod, Zeroable};

use crate::kernel::{Family, KernelSpec};
use crate::quant::GgmlType;
use crate::rowops::{NormKind, RopeParams, norm_reference, rope_reference};
use crate::source::Reduction;

/// The uniform block of `attn_decode.wgsl`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct DecodeAttnParams {
    /// Query heads.
    pub heads: u32,
    /// KV heads (divides `heads`).
    pub kv_heads: u32,
    /// Elements per head.
    pub head_dim: u32,
    /// Valid cache positions, the current token's included.
    pub n_keys: u32,
    /// Positions the cache holds (`k`, `v` are `[max_ctx, kv_heads, head_dim]`).
    pub max_ctx: u32,
    /// Sliding window in positions (0 = none).
    pub window: u32,
    /// Score multiplier (usually 1/sqrt(head_dim)).
    pub scale: f32,
    /// Logit soft cap (0 = none).
    pub cap: f32,
    /// Key blocks per head (set by the launcher: `ceil(n_keys / WG)`).
    pub blocks: u32,
    /// Element offset of the new token's queries in the `qkv` binding.
    pub q_src: u32,
    /// Element offset of its keys.
    pub k_src: u32,
    /// Element offset of its values.
    pub v_src: u32,
    /// RoPE: rotated elements per head (even, at most `head_dim`).
    pub rot_dims: u32,
    /// RoPE frequency base.
    pub rope_base: f32,
    /// RoPE position scaling (1 = none).
    pub freq_scale: f32,
    /// Per-head query/key norm: [`QkNorm::code`].
    pub norm: u32,
    /// The norm's epsilon.
    pub eps: f32,
    /// Prefill: tokens in the batch (at positions `n_keys - tokens ..`); decode: 1.
    pub tokens: u32,
    /// Prefill: elements between consecutive tokens' rows of `qkv`.
    pub qkv_stride: u32,
    /// Positions per page of the paged KV cache (set by the launcher from the cache; a
    /// multiple of [`PAGE_MULTIPLE`]).
    pub page: u32,
    /// Prefill passes: 1 when each token's position and page-table base come from a row
    /// table (a batch of rows of several sequences; set by the launcher), 0 for one
    /// sequence's consecutive positions.
    pub row_table: u32,
    /// The row table's first entry for this batch (set by the launcher).
    pub rows_first: u32,
    /// The causal pass over a row table: keys per split (workgroup z of the pass takes keys
    /// `z · split_keys ..` of its row and writes a partial for `attn_combine.wgsl`, `blocks`
    /// splits per row); 0 = a row's keys in one workgroup (set by the launcher).
    pub split_keys: u32,
    /// The per-row causal pass: query heads per workgroup ([`row_group`]; set by the
    /// launcher); unused elsewhere.
    pub group: u32,
}

/// What a KV-cache page's positions must be a multiple of: the largest key block, so that a
/// block never straddles two pages and each workgroup resolves its page once.
pub const PAGE_MULTIPLE: u32 = 64;

/// Where logical position `j` sits in a paged pool of `page` positions per page (`pages` the
/// page table): the CPU mirror of `attn_pages.wgsl`, for tests and tools.
pub fn cache_row(pages: &[u32], page: usize, j: usize) -> usize {
    pages[j / page] as usize * page + j % page
}

/// The per-head norm of queries and keys before RoPE (Gemma 3's QK-norm).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QkNorm {
    /// None.
    None,
    /// `x / rms(x) * w`.
    Rms,
    /// `x / rms(x) * (1 + w)`.
    RmsPlusOne,
}

impl QkNorm {
    /// The `norm` field of [`DecodeAttnParams`].
    pub fn code(self) -> u32 {
        match self {
            QkNorm::None => 0,
            QkNorm::Rms => 1,
            QkNorm::RmsPlusOne => 2,
        }
    }

    fn kind(code: u32) -> Option<NormKind> {
        match code {
            1 => Some(NormKind::Rms),
            2 => Some(NormKind::RmsPlusOne),
            _ => None,
        }
    }
}

/// Allowed workgroup sizes.
pub const WG_VALUES: [u32; 3] = [64, 128, 256];

/// Keys per block the decode-attention launcher uses for heads of `head_dim` elements: a few
/// hundred keys of a decode step's handful of heads then make enough workgroups to fill a GPU,
/// and the 128 threads give each key 4 (32 keys) or, for heads of 128 elements or more, 8 (16
/// keys) lanes (see `attn_decode.wgsl`; measured on the H200, docs/performance.md).
pub fn keys_per_block(head_dim: u32) -> u32 {
    if head_dim >= 128 { 16 } else { 32 }
}

/// Most query values one workgroup of the per-row causal pass holds (`QMAX` in
/// `attn_prefill.wgsl`: its heads times `head_dim`).
pub const ROW_QUERY_VALUES: u32 = 2048;

/// Most scores a block of the per-row causal pass holds (`SMAX` in `attn_prefill.wgsl`: its
/// heads times its keys per block).
pub const ROW_SCORES: u32 = 512;

/// Most key (or value) elements of one block of the per-row causal pass (`KB · HD`): each of
/// its 128 threads holds at most eight vec4s of a block's keys and eight of its values.
pub const ROW_BLOCK_VALUES: u32 = 4096;

/// Keys per block of the per-row causal pass at `head_dim` where workgroups get `limit` bytes
/// of memory: the most of 32, 16, 8, 4 that fit [`ROW_BLOCK_VALUES`] and `limit`
/// ([`row_workgroup_bytes`]); `None` past a head dim of 1024 or below 8 KiB or so.
pub fn row_keys(head_dim: u32, limit: u32) -> Option<u32> {
    [32, 16, 8, 4]
        .into_iter()
        .find(|&kb| kb * head_dim <= ROW_BLOCK_VALUES && row_workgroup_bytes(head_dim, kb) <= limit)
}

/// Most key (or value) elements of one block of the per-row causal pass over a row table
/// (batched decode: [`row_table_keys`]).
pub const ROW_TABLE_BLOCK_VALUES: u32 = 2048;

/// Keys per block of the per-row causal pass over a row table (each row its own sequence: a
/// batched decode step) at `head_dim` where workgroups get `limit` bytes: the most of 16, 8, 4
/// whose block holds at most [`ROW_TABLE_BLOCK_VALUES`] values and fits `limit`. Half of
/// [`row_keys`]' blocks: on an H100 (docs/performance.md, "v39"; `bench --other-kernels`, 64
/// rows of 192 keys, f16 cache) 16 keys a block instead of 32 took the Llama-8B shape's
/// attention from 165.5 to 129.7 µs, SmolLM2's from 39.5 to 29.2 and the 1B's from 77.4 to
/// 74.1, and 8 instead of 16 Gemma 3's (head dim 256) from 59.1 to 47.7 — fewer registers a
/// thread, more workgroups a core, shorter serial loops — while 8 at head dims 64 and 128
/// was slower again (145.9, 97.3). End to end, 64 streams of the 8B 2,796 → 2,979 tok/s,
/// Gemma 3 13,891 → 14,587, SmolLM2 13,493 → 13,860, the 1B 12,301 → 12,511.
pub fn row_table_keys(head_dim: u32, limit: u32) -> Option<u32> {
    [16, 8, 4].into_iter().find(|&kb| {
        kb * head_dim <= ROW_TABLE_BLOCK_VALUES && row_workgroup_bytes(head_dim, kb) <= limit
    })
}

/// Bytes of workgroup memory the per-row causal pass takes at most at `head_dim` and `keys` per
/// block: the block staged in rows of `head_dim + 4` floats (an f32 cache; an f16 one's take
/// half), the queries and the scores of the largest group [`row_group`] allows (a workgroup
/// holds its own group's only).
pub fn row_workgroup_bytes(head_dim: u32, keys: u32) -> u32 {
    keys * (head_dim / 4 + 1) * 16 + ROW_QUERY_VALUES * 4 + ROW_SCORES * 4
}

/// Query heads one workgroup of the per-row causal pass takes (`p.group`): the whole GQA group
/// (`heads / kv_heads` heads sharing a KV head, each key and value row read once for all of
/// them) when its queries and scores fit the workgroup's memory, else its largest divisor that
/// fits at `keys` per block ([`row_keys`]); `None` when not even one head fits (a head dim
/// past [`ROW_QUERY_VALUES`]).
pub fn row_group(heads: u32, kv_heads: u32, head_dim: u32, keys: u32) -> Option<u32> {
    let g = heads.checked_div(kv_heads).filter(|g| *g > 0)?;
    (1..=g)
        .rev()
        .find(|&d| g % d == 0 && d * head_dim <= ROW_QUERY_VALUES && d * keys <= ROW_SCORES)
}

/// Workgroups the causal pass over a row table aims for when it splits rows' keys
/// ([`row_splits`]): batched decode's few rows gave a workgroup per (head group, row) and each
/// walked every key of its row (the Llama-8B shape at 8 rows: 70 µs a layer, docs/performance.md
/// v28). 256 since v53 (1,024 from v32): on an H100 the 8B at 32 / 64 streams keeps one
/// workgroup a (KV head, row) — 256 and 512 of them, no combining pass — and decoded 3.2–3.3%
/// faster (four interleaved rounds), the 1B 1.3–1.6%, Gemma 3 1–2%, with the same ids for
/// the 8B, SmolLM2 and Gemma 3 (the 1B's changed with its split count: another order of its
/// sums); SmolLM2 edged toward 512 (docs/performance.md, "v53").
pub const ROW_SPLIT_WORKGROUPS: u32 = 256;

/// Most splits per row of the causal pass over a row table.
pub const ROW_SPLITS_MAX: u32 = 16;

/// How the causal pass over a row table splits each row's keys (`attn_prefill.wgsl` with
/// `split_keys`, then `attn_combine.wgsl` over (row, head) pairs): `(splits, keys per split)`
/// for `tokens` rows of `groups` workgroups each whose rows attend to at most `keys` keys, in
/// blocks of `kb`, at most `max_splits` splits (what the partials' scratch holds): about
/// `target` workgroups ([`ROW_SPLIT_WORKGROUPS`] by default), splits whole blocks; `None` keeps
/// one workgroup per (head group, row).
pub fn row_splits(
    groups: u32,
    tokens: u32,
    keys: u32,
    kb: u32,
    max_splits: u32,
    target: u32,
) -> Option<(u32, u32)> {
    let pairs = groups.max(1).saturating_mul(tokens.max(1));
    let want = (target / pairs).clamp(1, max_splits.clamp(1, ROW_SPLITS_MAX));
    let per = keys.div_ceil(want).next_multiple_of(kb.max(1));
    let splits = keys.div_ceil(per.max(1));
    (splits > 1).then_some((splits, per))
}

/// Columns per workgroup of the combining pass (`CW` in `attn_combine.wgsl`).
pub const COMBINE_COLUMNS: u32 = 32;

/// Allowed keys per block (each must divide the workgroup size).
pub const KB_VALUES: [u32; 4] = [8, 16, 32, 64];

/// The element types a KV cache may hold (the `kv` snippet of every kernel that reads or
/// writes one, named by its spec's `quant`): f32, and f16 (half the memory and the bytes each
/// attention step reads, as llama.cpp's default cache; packed by hand, so no adapter feature
/// is needed).
pub const KV_TYPES: [GgmlType; 2] = [GgmlType::F32, GgmlType::F16];

/// The decode-attention variant: `wg` threads, `kb` keys per block (`kb` divides `wg`),
/// `neox` the RoPE pair layout, over a cache of `kv` values (one of [`KV_TYPES`]).
pub fn decode_spec(wg: u32, kb: u32, reduction: Reduction, neox: bool, kv: GgmlType) -> KernelSpec {
    KernelSpec {
        family: Family::AttnDecode,
        quant: Some(kv),
        reduction: Some(reduction),
        constants: vec![("WG", wg), ("KB", kb), ("NEOX", u32::from(neox))],
    }
}

/// CPU reference of the new token's preparation in `attn_decode.wgsl`: from `qkv` (and the
/// query-then-key norm weights `nw`), the rotated queries, and the key and value rows the
/// cache gets at position `n_keys - 1`.
pub fn prepare_reference(
    p: &DecodeAttnParams,
    qkv: &[f32],
    nw: &[f32],
    neox: bool,
) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let hd = p.head_dim as usize;
    let (qn, kvn) = (p.heads as usize * hd, p.kv_heads as usize * hd);
    let slice = |at: u32, n: usize| qkv[at as usize..at as usize + n].to_vec();
    let prepare = |x: Vec<f32>, heads: u32, w: &[f32]| {
        let mut x = match QkNorm::kind(p.norm) {
            Some(kind) => norm_reference(kind, &x, w, hd, p.eps),
            None => x,
        };
        let rp = RopeParams {
            tokens: 1,
            heads,
            head_dim: p.head_dim,
            rot_dims: p.rot_dims,
            base: p.rope_base,
            freq_scale: p.freq_scale,
            grid_x: 0,
            pos_base: 0,
        };
        rope_reference(&mut x, &[p.n_keys - 1], &rp, neox);
        x
    };
    let (wq, wk) = if nw.len() >= 2 * hd {
        (&nw[..hd], &nw[hd..2 * hd])
    } else {
        (&[][..], &[][..])
    };
    (
        prepare(slice(p.q_src, qn), p.heads, wq),
        prepare(slice(p.k_src, kvn), p.kv_heads, wk),
        slice(p.v_src, kvn),
    )
}

/// Floats per (head, key block) in the partials buffer: the block's value sum (`head_dim`),
/// its score max m and exp-sum l, two unused (each block starts on a vec4).
pub fn part_stride(head_dim: u32) -> usize {
    head_dim as usize + 4
}

/// CPU reference of the combining pass (`attn_combine.wgsl`, or the GEMV input form that
/// folds it in): from `part [heads, blocks, part_stride]`, each head's
/// `sum_b exp(m_b - M) o_b / sum_b exp(m_b - M) l_b`, in f64.
pub fn combine_reference(part: &[f32], heads: usize, head_dim: u32, blocks: u32) -> Vec<f32> {
    let (hd, stride, blocks) = (head_dim as usize, part_stride(head_dim), blocks as usize);
    let mut out = Vec::with_capacity(heads * hd);
    for h in 0..heads {
        let block = |b: usize| &part[(h * blocks + b) * stride..(h * blocks + b + 1) * stride];
        let big = (0..blocks)
            .map(|b| f64::from(block(b)[hd]))
            .fold(f64::NEG_INFINITY, f64::max);
        let weight = |b: usize| (f64::from(block(b)[hd]) - big).exp();
        let denom: f64 = (0..blocks)
            .map(|b| weight(b) * f64::from(block(b)[hd + 1]))
            .sum();
        out.extend((0..hd).map(|d| {
            let o: f64 = (0..blocks)
                .map(|b| weight(b) * f64::from(block(b)[d]))
                .sum();
            (o / denom) as f32
        }));
    }
    out
}

/// The prefill preparation pass (`attn_prep.wgsl`): `neox` the RoPE pair layout, a cache of
/// `kv` values.
pub fn prep_spec(wg: u32, reduction: Reduction, neox: bool, kv: GgmlType) -> KernelSpec {
    KernelSpec {
        family: Family::AttnPrep,
        quant: Some(kv),
        reduction: Some(reduction),
        constants: vec![("WG", wg), ("NEOX", u32::from(neox))],
    }
}

/// The per-row causal pass (`attn_prefill.wgsl`) for heads of `head_dim` values (a multiple of
/// 4) in blocks of `keys` keys ([`row_keys`]), `group` query heads a workgroup ([`row_group`]:
/// it sizes the queries' and scores' workgroup memory), over a cache of `kv` values (staged as
/// the cache holds them: an f16 cache's blocks take half the memory of an f32 one's).
pub fn prefill_spec(head_dim: u32, keys: u32, group: u32, kv: GgmlType) -> KernelSpec {
    KernelSpec {
        family: Family::AttnPrefill,
        quant: Some(kv),
        reduction: None,
        constants: vec![("HD", head_dim), ("KB", keys), ("GROUP", group)],
    }
}

/// Most vec4s of workgroup memory the subgroup row pass (`attn_rows_sg.wgsl`, `PMAX`) holds
/// for its subgroups' partial results: `128 / width` subgroups × heads × (head_dim / 4 + 1).
pub const ROWS_SG_PARTS: u32 = 1024;

/// The subgroup row pass's shape, `(heads a workgroup, vec4 columns a lane)`, for `heads`
/// query heads on `kv_heads` KV heads of `head_dim` values (a multiple of 4) where subgroups
/// have at least `min_width` lanes: a lane's share of a head's vec4s, rounded up to 1, 2 or 4
/// (`NC`); the largest divisor of the GQA group up to 4 (`G`: a lane holds each head's query
/// and sums in registers) whose subgroups' partials fit [`ROWS_SG_PARTS`]. `None` where a lane
/// would need more than 4 columns, subgroups are narrower than 4 lanes, or no head fits.
pub fn rows_sg_shape(
    heads: u32,
    kv_heads: u32,
    head_dim: u32,
    min_width: u32,
) -> Option<(u32, u32)> {
    if min_width < 4 || !head_dim.is_multiple_of(4) || head_dim == 0 {
        return None;
    }
    let cols = (head_dim / 4).div_ceil(min_width);
    let nc = [1, 2, 4].into_iter().find(|&n| n >= cols)?;
    let group = heads.checked_div(kv_heads).filter(|g| *g > 0)?;
    let subgroups = (128 / min_width).max(1);
    let g = (1..=group.min(4)).rev().find(|&d| {
        group.is_multiple_of(d) && subgroups * d * (head_dim / 4 + 1) <= ROWS_SG_PARTS
    })?;
    Some((g, nc))
}

/// The subgroup row pass (`attn_rows_sg.wgsl`) for heads of `head_dim` values, `group` query
/// heads a workgroup and `columns` vec4 columns a lane ([`rows_sg_shape`]), over a cache of
/// `kv` values.
pub fn rows_sg_spec(head_dim: u32, group: u32, columns: u32, kv: GgmlType) -> KernelSpec {
    KernelSpec {
        family: Family::AttnRowsSubgroup,
        quant: Some(kv),
        reduction: None,
        constants: vec![("HD", head_dim), ("G", group), ("NC", columns)],
    }
}

/// Head dims the tiled prefill pass (`attn_tiles.wgsl`) takes; other models use the per-row
/// pass ([`prefill_spec`]).
pub const TILE_HEAD_DIMS: [u32; 3] = [64, 128, 256];

/// The tiled prefill pass for `head_dim` (one of [`TILE_HEAD_DIMS`]) with `keys` keys per
/// block (one of [`TILE_KEYS`]): tiles of [`tile_rows`] rows of one sequence at consecutive
/// positions, over a cache of `kv` values.
pub fn tiles_spec(head_dim: u32, keys: u32, kv: GgmlType) -> KernelSpec {
    KernelSpec {
        family: Family::AttnTiles,
        quant: Some(kv),
        reduction: None,
        constants: vec![("HD", head_dim), ("BK", keys)],
    }
}

/// The tiled prefill pass on cooperative matrices (`attn_coop.wgsl`: tensor cores, f16
/// operands, f32 sums) for `head_dim` (one of [`TILE_HEAD_DIMS`]): tiles of [`tile_rows`]
/// rows, blocks of [`coop_tile_keys`] keys, over a cache of `kv` values.
pub fn coop_tiles_spec(head_dim: u32, kv: GgmlType) -> KernelSpec {
    KernelSpec {
        family: Family::AttnCoop,
        quant: Some(kv),
        reduction: None,
        constants: vec![("HD", head_dim), ("BK", coop_tile_keys(head_dim))],
    }
}

/// Keys per block of [`coop_tiles_spec`]: 32, or 16 at head dim 256 (a tile of 16 rows times
/// 16 keys is its one scores fragment).
pub fn coop_tile_keys(head_dim: u32) -> u32 {
    if head_dim >= 256 { 16 } else { 32 }
}

/// Bytes of workgroup memory [`coop_tiles_spec`] takes at `head_dim`: f16 queries and a key
/// (then value) block in rows of `head_dim + 8` halves, f32 scores in rows of `keys + 4` (one
/// plane per part of the head dim: 8 subgroups over the score fragments), f16 weights in rows
/// of `keys + 8`, the f32 P V block in rows of `head_dim + 4`, a float per row and two per
/// thread.
pub fn coop_tiles_workgroup_bytes(head_dim: u32) -> u32 {
    let (rows, keys) = (tile_rows(head_dim), coop_tile_keys(head_dim));
    let planes = 8 / ((rows / 16) * (keys / 16)).max(1);
    (rows + keys) * (head_dim + 8) * 2
        + planes * rows * (keys + 4) * 4
        + rows * (keys + 8) * 2
        + rows * (head_dim + 4) * 4
        + rows * 4
        + 2 * 256 * 4
}

/// Keys per block of the tiled prefill pass, largest first (each divides every page size).
pub const TILE_KEYS: [u32; 3] = [32, 16, 8];

/// Rows per workgroup of the tiled prefill pass: its 256 threads own 4,096 outputs.
pub fn tile_rows(head_dim: u32) -> u32 {
    4096 / head_dim.max(1)
}

/// Bytes of workgroup memory the tiled prefill pass takes at `head_dim` with `keys` keys per
/// block: the queries and a key (then value) block in rows of `head_dim + 4` floats, the
/// scores in rows of `keys + 1`, a float per row and one per thread (the rows' maxima).
pub fn tiles_workgroup_bytes(head_dim: u32, keys: u32) -> u32 {
    let rows = tile_rows(head_dim);
    (rows + keys) * (head_dim + 4) * 4 + rows * (keys + 1) * 4 + rows * 4 + 256 * 4
}

/// Whether the tiled prefill pass has a variant at `head_dim` with `keys` keys per block: its
/// 256 threads load a key block in 1, 2 or 4 vec4s each.
pub fn tiles_variant(head_dim: u32, keys: u32) -> bool {
    TILE_HEAD_DIMS.contains(&head_dim)
        && TILE_KEYS.contains(&keys)
        && [1024, 2048, 4096].contains(&(keys * head_dim))
}

/// The most keys per block ([`TILE_KEYS`]) whose tiles at `head_dim` fit `storage` bytes of
/// workgroup memory (H200: 32 at head dims 64 and 128, 16 at 256; lavapipe's 32 KiB: 16, 16
/// and 8).
pub fn tile_keys(head_dim: u32, storage: u32) -> Option<u32> {
    TILE_KEYS
        .into_iter()
        .find(|&k| tiles_variant(head_dim, k) && tiles_workgroup_bytes(head_dim, k) <= storage)
}

/// CPU reference of prefill attention: token `t` of the batch (`p.tokens` of them, at positions
/// `p.n_keys - p.tokens + t`) is a decode step at its position, its prepared queries the rows
/// of `q` (`[tokens, heads, head_dim]`); `k`, `v` the caches with every batch key in place.
pub fn prefill_reference(p: &DecodeAttnParams, q: &[f32], k: &[f32], v: &[f32]) -> Vec<f32> {
    let width = (p.heads * p.head_dim) as usize;
    (0..p.tokens)
        .flat_map(|t| {
            let step = DecodeAttnParams {
                n_keys: p.n_keys - p.tokens + t + 1,
                ..*p
            };
            let row = &q[t as usize * width..(t as usize + 1) * width];
            decode_reference(&step, row, k, v)
        })
        .collect()
}

/// The combining pass; `blocks`: the heads' output goes out as the int8-input GEMV's blocks
/// ([`crate::gemv::GemvInput::Q8Blocks`]; head_dim a multiple of [`COMBINE_COLUMNS`]).
pub fn combine_spec(wg: u32, reduction: Reduction, blocks: bool) -> KernelSpec {
    KernelSpec {
        family: Family::AttnCombine,
        quant: None,
        reduction: Some(reduction),
        constants: vec![("WG", wg), ("BLOCKS", u32::from(blocks))],
    }
}

/// CPU reference of `attn_decode.wgsl`.
pub fn decode_reference(p: &DecodeAttnParams, q: &[f32], k: &[f32], v: &[f32]) -> Vec<f32> {
    let (hd, kvn) = (p.head_dim as usize, p.kv_heads as usize);
    let group = (p.heads / p.kv_heads) as usize;
    let first = if p.window > 0 && p.n_keys > p.window {
        (p.n_keys - p.window) as usize
    } else {
        0
    };
    let mut out = vec![0.0f32; p.heads as usize * hd];
    for h in 0..p.heads as usize {
        let kvh = h / group;
        let qh = &q[h * hd..(h + 1) * hd];
        let scores: Vec<f64> = (first..p.n_keys as usize)
            .map(|j| {
                let kj = &k[(j * kvn + kvh) * hd..(j * kvn + kvh + 1) * hd];
                let s = qh
                    .iter()
                    .zip(kj)
                    .map(|(a, b)| f64::from(*a) * f64::from(*b))
                    .sum::<f64>()
                    * f64::from(p.scale);
                if p.cap > 0.0 {
                    f64::from(p.cap) * (s / f64::from(p.cap)).tanh()
                } else {
                    s
                }
            })
            .collect();
        let m = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = scores.iter().map(|s| (s - m).exp()).collect();
        let sum: f64 = e.iter().sum();
        for d in 0..hd {
            let acc: f64 = e
                .iter()
                .enumerate()
                .map(|(i, w)| w * f64::from(v[((first + i) * kvn + kvh) * hd + d]))
                .sum();
            out[h * hd + d] = (acc / sum) as f32;
        }
    }
    out
}
