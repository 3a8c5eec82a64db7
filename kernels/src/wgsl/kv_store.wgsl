// Appends one or more tokens' keys and values to the KV cache: kc[dst + i] = k[i],
// vc[dst + i] = v[i] for i < n, where dst = first position * kv_heads * head_dim (the cache is
// token-major, so appending is one contiguous copy per tensor). One dispatch for both.

struct Params {
    n: u32,
    dst: u32,
    grid_x: u32,
    _pad: u32,
}

override WG: u32 = 256u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> k: array<f32>;
@group(0) @binding(2) var<storage, read> v: array<f32>;
@group(0) @binding(3) var<storage, read_write> kc: array<f32>;
@group(0) @binding(4) var<storage, read_write> vc: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wg.x + wg.y * p.grid_x) * WG + lid;
    if i >= p.n {
        return;
    }
    kc[p.dst + i] = k[i];
    vc[p.dst + i] = v[i];
}
