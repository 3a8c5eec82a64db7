// Decode attention, split over the keys (flash-decoding): one query row per head against the
// KV cache. Pass SPLIT (this entry point) gives each workgroup one head and one block of WG
// keys: it scores them (scaled, optionally soft-capped), and writes the block's max m, sum of
// exp(s - m) l, and the exp-weighted value sum o. Pass COMBINE (attn_combine.wgsl) rescales
// and adds the blocks of each head. GQA: head h reads KV head h / (heads / kv_heads). Keys are
// cache positions [first, n_keys), first = n_keys - window when a sliding window is set.
//
// Layouts (f32): q [heads, head_dim]; k, v [max_ctx, kv_heads, head_dim] (token-major, so a
// token's keys are one contiguous row and the cache grows by appending);
// part [heads, blocks, head_dim + 2] (o, then m and l).

//!include attn_params.wgsl

override WG: u32 = 128u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read_write> part: array<f32>;

var<workgroup> weights: array<f32, 1024>;

//!include wgreduce

@compute @workgroup_size(WG)
fn main(l: Lanes) {
    let h = l.wg.x;
    let blk = l.wg.y;
    let kvh = h / (p.heads / p.kv_heads);
    var first = 0u;
    if p.window > 0u && p.n_keys > p.window {
        first = p.n_keys - p.window;
    }
    let j = blk * WG + l.lid;
    let live = j >= first && j < p.n_keys;
    let kv_row = p.kv_heads * p.head_dim;
    let kb = kvh * p.head_dim;
    var s = -3.0e38;
    if live {
        var acc = 0.0;
        let qb = h * p.head_dim;
        let kr = kb + j * kv_row;
        for (var d = 0u; d < p.head_dim; d++) {
            acc += q[qb + d] * k[kr + d];
        }
        s = acc * p.scale;
        if p.cap > 0.0 {
            s = p.cap * tanh(clamp(s / p.cap, -15.0, 15.0));
        }
    }
    let m = wg_max(l, s);
    var e = 0.0;
    if live {
        e = exp(s - m);
    }
    weights[l.lid] = e;
    let total = wg_sum(l, e);
    let stride = p.head_dim + 2u;
    let pb = (h * p.blocks + blk) * stride;
    let j0 = blk * WG;
    for (var d = l.lid; d < p.head_dim; d += WG) {
        var o = 0.0;
        for (var i = 0u; i < WG; i++) {
            let jj = j0 + i;
            if jj >= first && jj < p.n_keys {
                o += weights[i] * v[kb + jj * kv_row + d];
            }
        }
        part[pb + d] = o;
    }
    if l.lid == 0u {
        part[pb + p.head_dim] = m;
        part[pb + p.head_dim + 1u] = total;
    }
}
