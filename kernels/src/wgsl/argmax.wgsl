// Argmax of an f32 vector in one workgroup (ties: the smallest index), written as u32 — the
// greedy sampler, so the chosen token never leaves the GPU.

struct Params {
    n: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

override WG: u32 = 256u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;

var<workgroup> best_v: array<f32, 1024>;
var<workgroup> best_i: array<u32, 1024>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32) {
    var v = -3.4e38;
    var idx = 0xFFFFFFFFu;
    for (var i = lid; i < p.n; i += WG) {
        let e = x[i];
        if e > v {
            v = e;
            idx = i;
        }
    }
    best_v[lid] = v;
    best_i[lid] = idx;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if lid < s {
            let ov = best_v[lid + s];
            let oi = best_i[lid + s];
            if ov > best_v[lid] || (ov == best_v[lid] && oi < best_i[lid]) {
                best_v[lid] = ov;
                best_i[lid] = oi;
            }
        }
        workgroupBarrier();
    }
    if lid == 0u {
        out[0] = best_i[0];
    }
}
