// Prefill, first pass: the attention inputs of a batch of tokens. Token t of the batch sits at
// position pos = n_keys - tokens + t (or, with a row table, at its own position in its own
// sequence: attn_rows.wgsl), its projections at qkv[t * qkv_stride ..] (queries at
// q_src, keys at k_src, values at v_src). Workgroup (slot, t): slots below `heads` normalize
// and rotate query head `slot` into q [tokens, heads, head_dim]; the others take KV head
// slot - heads, normalize and rotate its key into the key cache and copy its value into the
// value cache at position pos (paged caches, attn_pages.wgsl). The same preparation as
// decode attention's (attn_prepare.wgsl), for all tokens at once, so that the causal pass finds
// every key it needs in the cache.

//!include attn_params.wgsl
//!include kv

override WG: u32 = 128u;
override NEOX: u32 = 0u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> qkv: array<f32>;
@group(0) @binding(2) var<storage, read_write> k: array<KvWord>;
@group(0) @binding(3) var<storage, read_write> v: array<KvWord>;
@group(0) @binding(4) var<storage, read_write> q: array<f32>;
// Query norm then key norm weights (head_dim each); bound to qkv, and unread, when norm is 0.
@group(0) @binding(5) var<storage, read> nw: array<f32>;
// The page table.
@group(0) @binding(6) var<storage, read> pages: array<u32>;
// The batch's rows (attn_rows.wgsl).
@group(0) @binding(7) var<storage, read> rows: array<u32>;

//!include wgreduce
//!include attn_pages.wgsl
//!include attn_rows.wgsl
//!include attn_prepare.wgsl

@compute @workgroup_size(WG)
fn main(l: Lanes) {
    let slot = l.wg.x;
    let t = l.wg.y;
    let at = batch_row(t);
    let pos = at.x;
    let row = t * p.qkv_stride;
    let hd = p.head_dim;
    if slot < p.heads {
        load_head(l, row + p.q_src + slot * hd, 0u);
        let out = (t * p.heads + slot) * hd;
        for (var d = l.lid; d < hd; d += WG) {
            q[out + d] = rotated(d, pos);
        }
        return;
    }
    let g = slot - p.heads;
    load_head(l, row + p.k_src + g * hd, hd);
    // Four values a cache word (`KvWord`: f32 or f16, the `kv` snippet); head_dim is a
    // multiple of 4.
    let out = (cache_row_in(at.y, pos) * p.kv_heads + g) * (hd / 4u);
    let vr = row + p.v_src + g * hd;
    for (var c = l.lid; c < hd / 4u; c += WG) {
        let d = 4u * c;
        let kr = vec4<f32>(rotated(d, pos), rotated(d + 1u, pos), rotated(d + 2u, pos), rotated(d + 3u, pos));
        k[out + c] = kv_word(kr);
        v[out + c] = kv_word(vec4<f32>(qkv[vr + d], qkv[vr + d + 1u], qkv[vr + d + 2u], qkv[vr + d + 3u]));
    }
}
