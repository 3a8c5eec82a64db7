// Row softmax, one workgroup per row, in place: v = x * scale, soft-capped as cap * tanh(v / cap)
// when cap > 0, then exp(v - max) / sum.

struct Params {
    cols: u32,
    rows: u32,
    scale: f32,
    cap: f32,
    grid_x: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

override WG: u32 = 256u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> x: array<f32>;

//!include wgreduce

fn value(i: u32) -> f32 {
    let v = x[i] * p.scale;
    if p.cap > 0.0 {
        return p.cap * tanh(clamp(v / p.cap, -15.0, 15.0));
    }
    return v;
}

@compute @workgroup_size(WG)
fn main(l: Lanes) {
    let row = l.wg.x + l.wg.y * p.grid_x;
    if row >= p.rows {
        return;
    }
    let base = row * p.cols;
    var m = -3.0e38;
    for (var i = l.lid; i < p.cols; i += WG) {
        m = max(m, value(base + i));
    }
    m = wg_max(l, m);
    var s = 0.0;
    for (var i = l.lid; i < p.cols; i += WG) {
        s += exp(value(base + i) - m);
    }
    let inv = 1.0 / wg_sum(l, s);
    for (var i = l.lid; i < p.cols; i += WG) {
        x[base + i] = exp(value(base + i) - m) * inv;
    }
}
