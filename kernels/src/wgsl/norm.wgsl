// Row normalization, one workgroup per row: MODE 0 RMSNorm y = x / rms(x) * w; MODE 1 RMSNorm
// with (1 + w) (Gemma's form); MODE 2 LayerNorm y = (x - mean) / std * w + b, with b stored
// right after w in the same buffer. BLOCKS 1 (RMSNorms): the normed row goes out as the int8
// blocks gemv_q8.wgsl reads (12 words per 32 values, q8_grid.wgsl's grid) instead of f32, in
// the dispatch that norms it: the same numbers as this kernel's f32 row quantized apart or
// rounded by q8_round.wgsl, since the same expressions form every value.

struct Params {
    cols: u32,
    rows: u32,
    eps: f32,
    grid_x: u32,
}

override WG: u32 = 256u;
override MODE: u32 = 0u;
override BLOCKS: u32 = 0u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
// f32 results as their bits, so that BLOCKS 1 can store packed int8 words.
@group(0) @binding(3) var<storage, read_write> y: array<u32>;

//!include wgreduce
//!include q8_grid.wgsl

// Element `i` of the row at `base`, normed (`mean` and `inv` of that row).
fn normed(base: u32, i: u32, mean: f32, inv: f32) -> f32 {
    let v = (x[base + i] - mean) * inv;
    switch MODE {
        case 1u: { return v * (1.0 + w[i]); }
        case 2u: { return v * w[i] + w[p.cols + i]; }
        default: { return v * w[i]; }
    }
}

fn normed4(base: u32, i: u32, mean: f32, inv: f32) -> vec4<f32> {
    return vec4<f32>(
        normed(base, i, mean, inv),
        normed(base, i + 1u, mean, inv),
        normed(base, i + 2u, mean, inv),
        normed(base, i + 3u, mean, inv),
    );
}

@compute @workgroup_size(WG)
fn main(l: Lanes) {
    let row = l.wg.x + l.wg.y * p.grid_x;
    // Uniform per workgroup: every thread of a row takes the same branch.
    if row >= p.rows {
        return;
    }
    let base = row * p.cols;
    var mean = 0.0;
    if MODE == 2u {
        var s = 0.0;
        for (var i = l.lid; i < p.cols; i += WG) {
            s += x[base + i];
        }
        mean = wg_sum(l, s) / f32(p.cols);
    }
    var sq = 0.0;
    for (var i = l.lid; i < p.cols; i += WG) {
        let d = x[base + i] - mean;
        sq += d * d;
    }
    let inv = inverseSqrt(wg_sum(l, sq) / f32(p.cols) + p.eps);
    if BLOCKS == 0u {
        for (var i = l.lid; i < p.cols; i += WG) {
            y[base + i] = bitcast<u32>(normed(base, i, mean, inv));
        }
        return;
    }
    // One thread per 32-value block: its largest magnitude, then its quants packed four to a
    // word, the scale and the scale times the quants' sum (the layout of gemv.wgsl's
    // INPUT_ONLY 2), the values formed again rather than kept in a private array.
    let row_blocks = p.cols / 32u;
    for (var b = l.lid; b < row_blocks; b += WG) {
        var amax = 0.0;
        for (var k = 0u; k < 8u; k++) {
            let a = abs(normed4(base, 32u * b + 4u * k, mean, inv));
            amax = max(amax, max(max(a.x, a.y), max(a.z, a.w)));
        }
        let d = q8_scale(amax);
        let out = 12u * (row * row_blocks + b);
        var sum = 0.0;
        for (var k = 0u; k < 8u; k++) {
            let q = q8_quants(normed4(base, 32u * b + 4u * k, mean, inv), d);
            y[out + k] = pack4xI8Clamp(q);
            sum += f32(q.x + q.y + q.z + q.w);
        }
        y[out + 8u] = bitcast<u32>(d);
        y[out + 9u] = bitcast<u32>(d * sum);
        y[out + 10u] = 0u;
        y[out + 11u] = 0u;
    }
}
