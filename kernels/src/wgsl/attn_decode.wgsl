// Decode attention, split over the keys (flash-decoding), with the new token's attention
// inputs prepared on the way in. Pass SPLIT (this entry point) gives each workgroup one head
// and one block of KB keys: it scores them (scaled, optionally soft-capped), and writes the
// block's max m, sum of exp(s - m) l, and the exp-weighted value sum o. Pass COMBINE
// (attn_combine.wgsl) rescales and adds the blocks of each head. GQA: head h reads KV head
// h / (heads / kv_heads). Keys are cache positions [first, n_keys), first = n_keys - window
// when a sliding window is set.
//
// The new token (position pos = n_keys - 1): its query, key and value come from `qkv` (the
// input projections' output) at q_src, k_src, v_src. Query and key heads are normalized
// (optional per-head RMSNorm: Gemma's QK-norm, weights `nw` = query norm then key norm) and
// rotated (RoPE by pos: pair i of a head rotates by pos * freq_scale * base^(-2i / rot_dims),
// pairs (2i, 2i + 1) or, with NEOX, (i, i + rot_dims / 2); elements past rot_dims unrotated)
// here, by every workgroup that needs them: that fuses what would be two more dispatches per
// layer. Key position pos is scored against the prepared key rather than the cache, and the
// workgroups of the last block of each KV group's first query head append the prepared key
// and the value to the caches (row pos is read by no one in this dispatch).
//
// Layouts (head_dim a multiple of 4, at most 256): k, v caches paged (attn_pages.wgsl), each
// position's row [kv_heads, head_dim] read four values a word (`KvWord`, the `kv` snippet: f32
// or f16; a key block lies in one page, so its rows are contiguous); part [heads, blocks,
// head_dim + 4] f32 (o, then m and l, then two unused). The new token's key and value enter
// the scores and sums as the cache holds them (`kv_round`, `kv_word`), so a later step that
// reads them from the cache sees the same numbers.
//
// Scores: LPK = WG / KB lanes per key, each a strided share of the key row's word loads
// against q in workgroup memory, their partial dots added in workgroup memory. Small blocks
// give a decode step's few heads enough workgroups to fill the GPU, and several lanes per key
// keep each thread's dependent loads short. Values: threads split as (vec4 column, key group)
// so every thread has independent loads in flight and each value row is read with coalesced
// word loads (16 bytes for f32, 8 for f16); the key groups' sums are added in workgroup memory.

//!include attn_params.wgsl
//!include kv

override WG: u32 = 128u;
// Keys per block (a power of two dividing WG).
override KB: u32 = 32u;
override LPK: u32 = WG / KB;
override NEOX: u32 = 0u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> qkv: array<f32>;
@group(0) @binding(2) var<storage, read_write> k: array<KvWord>;
@group(0) @binding(3) var<storage, read_write> v: array<KvWord>;
@group(0) @binding(4) var<storage, read_write> part: array<f32>;
// Query norm then key norm weights (head_dim each); bound to qkv, and unread, when norm is 0.
@group(0) @binding(5) var<storage, read> nw: array<f32>;
// The page table.
@group(0) @binding(6) var<storage, read> pages: array<u32>;

var<workgroup> weights: array<f32, 256>;
var<workgroup> qs: array<vec4<f32>, 64>;
var<workgroup> knew: array<vec4<f32>, 64>;
var<workgroup> osum: array<vec4<f32>, 256>;

//!include wgreduce

//!include attn_pages.wgsl
//!include attn_prepare.wgsl
//!include attn_score.wgsl

@compute @workgroup_size(WG)
fn main(l: Lanes) {
    let h = l.wg.x;
    let blk = l.wg.y;
    // The block's first pool row, resolved before the query preparation hides its latency.
    let base = cache_row(blk * KB);
    let group = p.heads / p.kv_heads;
    let kvh = h / group;
    let hd4 = p.head_dim / 4u;
    let pos = p.n_keys - 1u;
    var first = 0u;
    if p.window > 0u && p.n_keys > p.window {
        first = p.n_keys - p.window;
    }
    load_head(l, p.q_src + h * p.head_dim, 0u);
    for (var d = l.lid; d < p.head_dim; d += WG) {
        qs[d / 4u][d % 4u] = rotated(d, pos);
    }
    workgroupBarrier();
    let row4 = p.kv_heads * hd4;
    let kb4 = kvh * hd4;
    // Uniform per workgroup: the block holding the new token prepares its key.
    let last = blk == pos / KB;
    if last {
        load_head(l, p.k_src + kvh * p.head_dim, p.head_dim);
        for (var d = l.lid; d < p.head_dim; d += WG) {
            knew[d / 4u][d % 4u] = kv_round(rotated(d, pos));
        }
        workgroupBarrier();
        if h % group == 0u {
            let at = (base + pos % KB) * row4 + kb4;
            for (var c = l.lid; c < hd4; c += WG) {
                k[at + c] = kv_word(knew[c]);
                let vb = p.v_src + kvh * p.head_dim + 4u * c;
                v[at + c] = kv_word(vec4<f32>(qkv[vb], qkv[vb + 1u], qkv[vb + 2u], qkv[vb + 3u]));
            }
        }
    }
    let key = l.lid / LPK;
    let lane = l.lid % LPK;
    let j = blk * KB + key;
    let live = (j >= first) & (j < p.n_keys);
    var acc = vec4<f32>(0.0);
    if live {
        if j == pos {
            for (var d = lane; d < hd4; d += LPK) {
                acc += qs[d] * knew[d];
            }
        } else {
            let kr = (base + key) * row4 + kb4;
            for (var d = lane; d < hd4; d += LPK) {
                acc += qs[d] * kv_load(k[kr + d]);
            }
        }
    }
    let s = key_score(l, acc, live & (lane == 0u));
    let m = wg_max(l, s);
    var e = 0.0;
    if live && lane == 0u {
        e = exp(s - m);
        weights[key] = e;
    }
    let total = wg_sum(l, e);
    // Values: column c (a vec4) and key group g of `groups`.
    let groups = max(WG / hd4, 1u);
    let c = l.lid % hd4;
    let g = l.lid / hd4;
    let j0 = blk * KB;
    var o = vec4<f32>(0.0);
    if g < groups && c < hd4 {
        for (var i = g; i < KB; i += groups) {
            let jj = j0 + i;
            if jj == pos {
                let vb = p.v_src + kvh * p.head_dim + 4u * c;
                let vnew = vec4<f32>(qkv[vb], qkv[vb + 1u], qkv[vb + 2u], qkv[vb + 3u]);
                o += weights[i] * kv_load(kv_word(vnew));
            } else if jj >= first && jj < p.n_keys {
                o += weights[i] * kv_load(v[(base + i) * row4 + kb4 + c]);
            }
        }
    }
    osum[l.lid] = o;
    workgroupBarrier();
    let pb = (h * p.blocks + blk) * part_stride();
    // Columns beyond one pass of the workgroup (head_dim > 4 * WG) are not supported; the
    // launcher refuses them.
    if g == 0u && c < hd4 {
        var sum = osum[c];
        for (var gg = 1u; gg < groups; gg++) {
            sum += osum[gg * hd4 + c];
        }
        part[pb + 4u * c] = sum.x;
        part[pb + 4u * c + 1u] = sum.y;
        part[pb + 4u * c + 2u] = sum.z;
        part[pb + 4u * c + 3u] = sum.w;
    }
    if l.lid == 0u {
        part[pb + p.head_dim] = m;
        part[pb + p.head_dim + 1u] = total;
    }
}
