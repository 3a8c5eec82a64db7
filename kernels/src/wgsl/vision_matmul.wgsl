// Batched matrix product with strided operands (transposes are strides) and an optional
// broadcast bias: out[bt, i, j] = alpha * Σ_k A[bt, i, k] B[bt, k, j] + beta * C[i, j].
// One invocation per output element.

struct Params {
    batch: u32, m: u32, n: u32, k: u32,
    a_batch: u32, a_row: u32, a_col: u32, b_batch: u32,
    b_row: u32, b_col: u32, c_row: u32, c_col: u32,
    alpha: f32, beta: f32, grid_x: u32, _pad: u32,
}

override WG: u32 = 256u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read> c: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let idx = (wg.x + wg.y * p.grid_x) * WG + lid;
    if idx >= p.batch * p.m * p.n {
        return;
    }
    let j = idx % p.n;
    let i = (idx / p.n) % p.m;
    let bt = idx / (p.n * p.m);
    let a0 = bt * p.a_batch + i * p.a_row;
    let b0 = bt * p.b_batch + j * p.b_col;
    var acc = 0.0;
    for (var t = 0u; t < p.k; t++) {
        acc += a[a0 + t * p.a_col] * b[b0 + t * p.b_row];
    }
    var r = p.alpha * acc;
    if p.beta != 0.0 {
        r += p.beta * c[i * p.c_row + j * p.c_col];
    }
    out[idx] = r;
}
