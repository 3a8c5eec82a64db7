// The second step of a split-K convolution (vision_conv_gemm.wgsl with SPLIT): adds the
// slices' partial sums part[s][m][q], the bias and the activation (ACT as there), and writes
// y[n, m, pos] for column q = n * plane + pos. One invocation per output element.

struct Params {
    m: u32, cols: u32, plane: u32, slices: u32,
    total: u32, grid_x: u32, lo: f32, hi: f32,
}

override WG: u32 = 256u;
override ACT: u32 = 0u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> part: array<f32>;
@group(0) @binding(2) var<storage, read> bias: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wg.x + wg.y * p.grid_x) * WG + lid;
    if i >= p.total {
        return;
    }
    // i walks y in order: (n, m, pos).
    let pos = i % p.plane;
    let m = (i / p.plane) % p.m;
    let n = i / (p.plane * p.m);
    let q = n * p.plane + pos;
    var r = bias[m];
    for (var s = 0u; s < p.slices; s++) {
        r += part[(s * p.m + m) * p.cols + q];
    }
    switch ACT {
        case 1u: { r = clamp(r, p.lo, p.hi); }
        case 2u: { r = r / (1.0 + exp(-r)); }
        default: {}
    }
    y[i] = r;
}
