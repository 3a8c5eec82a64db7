// Row normalization, one workgroup per row: MODE 0 RMSNorm y = x / rms(x) * w; MODE 1 RMSNorm
// with (1 + w) (Gemma's form); MODE 2 LayerNorm y = (x - mean) / std * w + b, with b stored
// right after w in the same buffer. With `residual` 1 the output is res + the norm (the residual
// add after a post-projection norm, fused). Rows from `w2_from_row` on take their weights from
// element `w2_offset` on (a query norm and a key norm over one buffer of heads in one dispatch).

struct Params {
    cols: u32,
    rows: u32,
    eps: f32,
    grid_x: u32,
    residual: u32,
    w2_from_row: u32,
    w2_offset: u32,
    _pad: u32,
}

override WG: u32 = 256u;
override MODE: u32 = 0u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
// The residual (same indexing as y); bound to x, and unread, when `residual` is 0.
@group(0) @binding(4) var<storage, read> res: array<f32>;

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
    let w0 = select(0u, p.w2_offset, row >= p.w2_from_row);
    for (var i = l.lid; i < p.cols; i += WG) {
        let v = (x[base + i] - mean) * inv;
        var out: f32;
        switch MODE {
            case 1u: { out = v * (1.0 + w[w0 + i]); }
            case 2u: { out = v * w[w0 + i] + w[w0 + p.cols + i]; }
            default: { out = v * w[w0 + i]; }
        }
        if p.residual == 1u {
            out += res[base + i];
        }
        y[base + i] = out;
    }
}
