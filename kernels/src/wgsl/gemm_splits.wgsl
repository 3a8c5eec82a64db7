// The second step of a tensor-core GEMM split along K (gemm_coop.wgsl with p.split_chunks):
// Y[t, r] = sum over the `splits` partials part[z * split_stride + t * rows + r] (+ res[t, r]
// when `residual` is 1, + res[y_offset + r] when it is 2: a bias), in split order, so a result
// does not depend on which workgroup finished first. One invocation per output element, or
// with V4 1 per four consecutive ones (their partials read as vec4s: `rows` a multiple of 4,
// so the four share a token and `split_stride` is a multiple of 4).

//!include gemm_params.wgsl
//!include gemm_store.wgsl

override WG: u32 = 256u;
override V4: u32 = 0u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> part: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
// The residual (same indexing as y) or the bias (indexed by output column); bound to `part`,
// and unread, when `residual` is 0.
@group(0) @binding(3) var<storage, read> res: array<f32>;
// `part` again, as vec4s (V4 1).
@group(0) @binding(4) var<storage, read> part4: array<vec4<f32>>;

fn finish(e: u32, v: f32) {
    let r = e % p.rows;
    store_output(p.y_offset + (e / p.rows) * p.y_stride + r, r, v);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let n = (wg.x + wg.y * p.grid_x) * WG + lid;
    if V4 == 1u {
        let e = 4u * n;
        if e >= p.rows * p.tokens {
            return;
        }
        var v = vec4<f32>(0.0);
        for (var z = 0u; z < p.splits; z++) {
            v += part4[(z * p.split_stride + e) / 4u];
        }
        finish(e, v.x);
        finish(e + 1u, v.y);
        finish(e + 2u, v.z);
        finish(e + 3u, v.w);
        return;
    }
    if n >= p.rows * p.tokens {
        return;
    }
    var v = 0.0;
    for (var z = 0u; z < p.splits; z++) {
        v += part[z * p.split_stride + n];
    }
    finish(n, v);
}
