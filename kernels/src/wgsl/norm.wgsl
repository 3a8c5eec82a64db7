// Row normalization, one workgroup per row: MODE 0 RMSNorm y = x / rms(x) * w; MODE 1 RMSNorm
// with (1 + w) (Gemma's form); MODE 2 LayerNorm y = (x - mean) / std * w + b, with b stored
// right after w in the same buffer. BLOCKS 1 (RMSNorms): the normed row goes out as the int8
// blocks gemv_q8.wgsl reads (12 words per 32 values, q8_grid.wgsl's grid) instead of f32, in
// the dispatch that norms it: the same numbers as this kernel's f32 row quantized apart or
// rounded by q8_round.wgsl, since the same reductions and expressions form every value.
// RES 1 (BLOCKS 0): y = res + the normed row — a post-projection norm and its residual add
// (Gemma 3's sandwich norms) in one dispatch instead of a norm and an elementwise add.
//
// One row is latency-bound (a decode step norms one token): each thread's loads are issued
// four at a time before any is used, in the order a plain strided loop would add them (the
// same sums, bit for bit), since a loop that adds each load as it arrives waits a memory
// latency per element, and a store between loads keeps the next loads from moving ahead of it.

struct Params {
    cols: u32,
    rows: u32,
    eps: f32,
    grid_x: u32,
}

override WG: u32 = 256u;
override MODE: u32 = 0u;
override BLOCKS: u32 = 0u;
override RES: u32 = 0u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
// f32 results as their bits, so that BLOCKS 1 can store packed int8 words.
@group(0) @binding(3) var<storage, read_write> y: array<u32>;
// RES 1: the rows the normed rows are added to (same indexing as x); bound to x, and unread,
// otherwise.
@group(0) @binding(4) var<storage, read> res: array<f32>;

//!include wgreduce
//!include q8_grid.wgsl

// Element `i` of the row at `base`, normed (`mean` and `inv` of that row); RES 1: plus the
// residual's element.
fn normed(base: u32, i: u32, mean: f32, inv: f32) -> f32 {
    let v = (x[base + i] - mean) * inv;
    var n: f32;
    switch MODE {
        case 1u: { n = v * (1.0 + w[i]); }
        case 2u: { n = v * w[i] + w[p.cols + i]; }
        default: { n = v * w[i]; }
    }
    if RES == 1u {
        return res[base + i] + n;
    }
    return n;
}

// BLOCKS 1: a chunk of the normed row, one value a thread.
var<workgroup> vals: array<f32, WG>;

fn vals4(i: u32) -> vec4<f32> {
    return vec4<f32>(vals[i], vals[i + 1u], vals[i + 2u], vals[i + 3u]);
}

// Four elements WG apart from `i` (all inside the row), less `mean`.
fn centered4(base: u32, i: u32, mean: f32) -> vec4<f32> {
    return vec4<f32>(x[base + i], x[base + i + WG], x[base + i + 2u * WG], x[base + i + 3u * WG]) - mean;
}

@compute @workgroup_size(WG)
fn main(l: Lanes) {
    // BLOCKS 1: workgroups (chunk, row); else one per row, rows past the grid's width in y.
    let row = select(l.wg.x + l.wg.y * p.grid_x, l.wg.y, BLOCKS == 1u);
    // Uniform per workgroup: every thread of a row takes the same branch.
    if row >= p.rows {
        return;
    }
    let base = row * p.cols;
    // The strided elements lid, lid + WG, ... in four-element steps, then one at a time.
    let quads = select(0u, (p.cols - l.lid) / (4u * WG), p.cols > l.lid);
    let tail = l.lid + quads * 4u * WG;
    var mean = 0.0;
    if MODE == 2u {
        var s = 0.0;
        for (var n = 0u; n < quads; n++) {
            let v = centered4(base, l.lid + n * 4u * WG, 0.0);
            s += v.x;
            s += v.y;
            s += v.z;
            s += v.w;
        }
        for (var i = tail; i < p.cols; i += WG) {
            s += x[base + i];
        }
        mean = wg_sum(l, s) / f32(p.cols);
    }
    var sq = 0.0;
    for (var n = 0u; n < quads; n++) {
        let d = centered4(base, l.lid + n * 4u * WG, mean);
        sq += d.x * d.x;
        sq += d.y * d.y;
        sq += d.z * d.z;
        sq += d.w * d.w;
    }
    for (var i = tail; i < p.cols; i += WG) {
        let d = x[base + i] - mean;
        sq += d * d;
    }
    let inv = inverseSqrt(wg_sum(l, sq) / f32(p.cols) + p.eps);
    if BLOCKS == 0u {
        for (var n = 0u; n < quads; n++) {
            let i = l.lid + n * 4u * WG;
            let v0 = normed(base, i, mean, inv);
            let v1 = normed(base, i + WG, mean, inv);
            let v2 = normed(base, i + 2u * WG, mean, inv);
            let v3 = normed(base, i + 3u * WG, mean, inv);
            y[base + i] = bitcast<u32>(v0);
            y[base + i + WG] = bitcast<u32>(v1);
            y[base + i + 2u * WG] = bitcast<u32>(v2);
            y[base + i + 3u * WG] = bitcast<u32>(v3);
        }
        for (var i = tail; i < p.cols; i += WG) {
            y[base + i] = bitcast<u32>(normed(base, i, mean, inv));
        }
        return;
    }
    // Workgroup (chunk, row) of the blocks grid: every workgroup of a row repeats the row's
    // reductions above (the row is a few KB, read from cache) and forms the row's values
    // chunk·WG … chunk·WG + WG - 1, one a thread, into workgroup memory; then a thread per
    // 32-value block of them packs it. A one-row decode step so spreads over cols / WG
    // workgroups instead of waiting on one.
    let i = l.wg.x * WG + l.lid;
    var v = 0.0;
    if i < p.cols {
        v = normed(base, i, mean, inv);
    }
    vals[l.lid] = v;
    workgroupBarrier();
    let b = l.wg.x * (WG / 32u) + l.lid;
    let row_blocks = p.cols / 32u;
    if l.lid >= WG / 32u || b >= row_blocks {
        return;
    }
    // Its quants packed four to a word, the scale and the scale times the quants' sum (the
    // layout of gemv.wgsl's INPUT_ONLY 2).
    let at = 32u * l.lid;
    var amax = 0.0;
    for (var k = 0u; k < 8u; k++) {
        let a = abs(vals4(at + 4u * k));
        amax = max(amax, max(max(a.x, a.y), max(a.z, a.w)));
    }
    let d = q8_scale(amax);
    let out = 12u * (row * row_blocks + b);
    var sum = 0;
    for (var k = 0u; k < 8u; k++) {
        let q = q8_quants(vals4(at + 4u * k), d);
        y[out + k] = pack4xI8Clamp(q);
        sum += q.x + q.y + q.z + q.w;
    }
    y[out + 8u] = bitcast<u32>(d);
    y[out + 9u] = bitcast<u32>(d * f32(sum));
    y[out + 10u] = 0u;
    y[out + 11u] = 0u;
}
