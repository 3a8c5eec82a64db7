// Element-wise ops with numpy broadcasting up to rank 8: out[i] = OP(a[ia], b[ib]), where ia
// and ib come from i's multi-index and each operand's strides (0 along a broadcast dim).
// OP: 0 a + b, 1 a - b, 2 a * b, 3 a / b, 4 sigmoid(a), 5 clamp(a, lo, hi), 6 a * sigmoid(a).
// Unary ops ignore b (bind any buffer there).

struct Params {
    total: u32, rank: u32, grid_x: u32, _pad: u32,
    lo: f32, hi: f32, _pad2: u32, _pad3: u32,
    // out dims, a strides, b strides: 8 each, packed as two vec4 per array.
    dims: array<vec4<u32>, 2>,
    sa: array<vec4<u32>, 2>,
    sb: array<vec4<u32>, 2>,
}

override WG: u32 = 256u;
override OP: u32 = 0u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

fn at(v: array<vec4<u32>, 2>, d: u32) -> u32 {
    return v[d / 4u][d % 4u];
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wg.x + wg.y * p.grid_x) * WG + lid;
    if i >= p.total {
        return;
    }
    var rest = i;
    var ia = 0u;
    var ib = 0u;
    for (var k = 0u; k < p.rank; k++) {
        let d = p.rank - 1u - k;
        let n = at(p.dims, d);
        let c = rest % n;
        rest = rest / n;
        ia += c * at(p.sa, d);
        ib += c * at(p.sb, d);
    }
    let v = a[ia];
    var r: f32;
    switch OP {
        case 0u: { r = v + b[ib]; }
        case 1u: { r = v - b[ib]; }
        case 2u: { r = v * b[ib]; }
        case 3u: { r = v / b[ib]; }
        case 4u: { r = 1.0 / (1.0 + exp(-v)); }
        case 5u: { r = clamp(v, p.lo, p.hi); }
        default: { r = v / (1.0 + exp(-v)); }
    }
    out[i] = r;
}
