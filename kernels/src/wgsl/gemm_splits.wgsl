// The second step of a tensor-core GEMM split along K (gemm_coop.wgsl with p.split_chunks):
// Y[t, r] = sum over the `splits` partials part[z * split_stride + t * rows + r] (+ res[t, r]
// when `residual` is 1, + res[y_offset + r] when it is 2: a bias), in split order, so a result
// does not depend on which workgroup finished first. One invocation per output element.

//!include gemm_params.wgsl

override WG: u32 = 256u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> part: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
// The residual (same indexing as y) or the bias (indexed by output column); bound to `part`,
// and unread, when `residual` is 0.
@group(0) @binding(3) var<storage, read> res: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let e = (wg.x + wg.y * p.grid_x) * WG + lid;
    if e >= p.rows * p.tokens {
        return;
    }
    let r = e % p.rows;
    let t = e / p.rows;
    var v = 0.0;
    for (var z = 0u; z < p.splits; z++) {
        v += part[z * p.split_stride + e];
    }
    let i = p.y_offset + t * p.y_stride + r;
    if p.residual == 1u {
        v += res[i];
    } else if p.residual == 2u {
        v += res[p.y_offset + r];
    }
    y[i] = v;
}
