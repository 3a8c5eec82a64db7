// Decode attention, split over the keys (flash-decoding): one query row per head against the
// KV cache. Pass SPLIT (this entry point) gives each workgroup one head and one block of WG
// keys: it scores them (scaled, optionally soft-capped), and writes the block's max m, sum of
// exp(s - m) l, and the exp-weighted value sum o. Pass COMBINE (attn_combine.wgsl) rescales
// and adds the blocks of each head. GQA: head h reads KV head h / (heads / kv_heads). Keys are
// cache positions [first, n_keys), first = n_keys - window when a sliding window is set.
//
// Layouts (f32, read as vec4: head_dim is a multiple of 4, at most 256): q [heads, head_dim];
// k, v [max_ctx, kv_heads, head_dim] (token-major, so a token's keys are one contiguous row
// and the cache grows by appending); part [heads, blocks, head_dim + 2] (o, then m and l).
//
// Scores: one thread per key, q from workgroup memory, vec4 loads of the key row. Values:
// threads split as (vec4 column, key group) so every thread has independent loads in flight
// and each key row is read with coalesced 16-byte loads; the key groups' sums are added in
// workgroup memory.

//!include attn_params.wgsl

override WG: u32 = 128u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> k: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> v: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> part: array<f32>;

var<workgroup> weights: array<f32, 256>;
var<workgroup> qs: array<vec4<f32>, 64>;
var<workgroup> osum: array<vec4<f32>, 256>;

//!include wgreduce

@compute @workgroup_size(WG)
fn main(l: Lanes) {
    let h = l.wg.x;
    let blk = l.wg.y;
    let kvh = h / (p.heads / p.kv_heads);
    let hd4 = p.head_dim / 4u;
    var first = 0u;
    if p.window > 0u && p.n_keys > p.window {
        first = p.n_keys - p.window;
    }
    for (var i = l.lid; i < hd4; i += WG) {
        qs[i] = q[h * hd4 + i];
    }
    workgroupBarrier();
    let j = blk * WG + l.lid;
    let live = j >= first && j < p.n_keys;
    let row4 = p.kv_heads * hd4;
    let kb4 = kvh * hd4;
    var s = -3.0e38;
    if live {
        var acc = vec4<f32>(0.0);
        let kr = j * row4 + kb4;
        for (var d = 0u; d < hd4; d++) {
            acc += qs[d] * k[kr + d];
        }
        s = (acc.x + acc.y + acc.z + acc.w) * p.scale;
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
    // Values: column c (a vec4) and key group g of `groups`.
    let groups = max(WG / hd4, 1u);
    let c = l.lid % hd4;
    let g = l.lid / hd4;
    let j0 = blk * WG;
    var o = vec4<f32>(0.0);
    if g < groups && c < hd4 {
        for (var i = g; i < WG; i += groups) {
            let jj = j0 + i;
            if jj >= first && jj < p.n_keys {
                o += weights[i] * v[jj * row4 + kb4 + c];
            }
        }
    }
    osum[l.lid] = o;
    workgroupBarrier();
    let stride = p.head_dim + 2u;
    let pb = (h * p.blocks + blk) * stride;
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
