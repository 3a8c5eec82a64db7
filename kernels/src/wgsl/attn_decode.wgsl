// Decode attention: one query row per head against the KV cache, one workgroup per head.
// GQA: query head h reads KV head h / (heads / kv_heads). Keys are cache positions
// [first, n_keys), first = n_keys - window when a sliding window is set. Scores are scaled,
// optionally soft-capped (cap * tanh(s / cap)), and soft-maxed; the output is the weighted sum of
// the values. Scores go through a scratch buffer, so the context length is bounded by memory,
// not by workgroup storage.
//
// Layouts (f32): q [heads, head_dim]; k, v [kv_heads, max_ctx, head_dim];
// scores [heads, max_ctx]; out [heads, head_dim].

struct Params {
    heads: u32,
    kv_heads: u32,
    head_dim: u32,
    n_keys: u32,
    max_ctx: u32,
    window: u32,   // 0: attend to every key
    scale: f32,
    cap: f32,      // 0: no soft cap
}

override WG: u32 = 128u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read_write> scores: array<f32>;
@group(0) @binding(5) var<storage, read_write> out: array<f32>;

//!include wgreduce

@compute @workgroup_size(WG)
fn main(l: Lanes) {
    let h = l.wg.x;
    let kvh = h / (p.heads / p.kv_heads);
    var first = 0u;
    if p.window > 0u && p.n_keys > p.window {
        first = p.n_keys - p.window;
    }
    let qb = h * p.head_dim;
    let kb = kvh * p.max_ctx * p.head_dim;
    let sb = h * p.max_ctx;
    var m = -3.0e38;
    for (var j = first + l.lid; j < p.n_keys; j += WG) {
        var s = 0.0;
        for (var d = 0u; d < p.head_dim; d++) {
            s += q[qb + d] * k[kb + j * p.head_dim + d];
        }
        s *= p.scale;
        if p.cap > 0.0 {
            s = p.cap * tanh(clamp(s / p.cap, -15.0, 15.0));
        }
        scores[sb + j] = s;
        m = max(m, s);
    }
    m = wg_max(l, m);
    var sum = 0.0;
    for (var j = first + l.lid; j < p.n_keys; j += WG) {
        let e = exp(scores[sb + j] - m);
        scores[sb + j] = e;
        sum += e;
    }
    // Makes this workgroup's score writes visible to all its threads.
    storageBarrier();
    let inv = 1.0 / wg_sum(l, sum);
    for (var d = l.lid; d < p.head_dim; d += WG) {
        var acc = 0.0;
        for (var j = first; j < p.n_keys; j++) {
            acc += scores[sb + j] * v[kb + j * p.head_dim + d];
        }
        out[qb + d] = acc * inv;
    }
}
