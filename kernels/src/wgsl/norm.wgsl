// Row normalization, one workgroup per row: MODE 0 RMSNorm y = x / rms(x) * w; MODE 1 RMSNorm
// with (1 + w) (Gemma's form); MODE 2 LayerNorm y = (x - mean) / std * w + b, with b stored
// right after w in the same buffer.

struct Params {
    cols: u32,
    rows: u32,
    eps: f32,
    grid_x: u32,
}

override WG: u32 = 256u;
override MODE: u32 = 0u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;

//!include wgreduce

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
    for (var i = l.lid; i < p.cols; i += WG) {
        let v = (x[base + i] - mean) * inv;
        switch MODE {
            case 1u: { y[base + i] = v * (1.0 + w[i]); }
            case 2u: { y[base + i] = v * w[i] + w[p.cols + i]; }
            default: { y[base + i] = v * w[i]; }
        }
    }
}
