// Softmax along one axis of a tensor seen as [outer, len, inner]: one invocation per
// (outer, inner) line, max-subtracted.

struct Params {
    outer: u32, len: u32, inner: u32, grid_x: u32,
}

override WG: u32 = 64u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let line = (wg.x + wg.y * p.grid_x) * WG + lid;
    if line >= p.outer * p.inner {
        return;
    }
    let base = (line / p.inner) * p.len * p.inner + line % p.inner;
    var m = -3.402823e38;
    for (var t = 0u; t < p.len; t++) {
        m = max(m, x[base + t * p.inner]);
    }
    var s = 0.0;
    for (var t = 0u; t < p.len; t++) {
        s += exp(x[base + t * p.inner] - m);
    }
    for (var t = 0u; t < p.len; t++) {
        y[base + t * p.inner] = exp(x[base + t * p.inner] - m) / s;
    }
}
