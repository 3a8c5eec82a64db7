// 2-D convolution with one group as an implicit GEMM, NCHW f32:
//     y[n, m, oy, ox] = act(bias[m] + sum_k w[m, k] * patch[n, oy, ox][k])
// where k runs over (input channel, ky, kx) — the weights [M, C, KH, KW] are already the
// [M, K] matrix — and patch gathers the input under the kernel window (zero outside: pads).
// The batch is folded into the columns: column q = n * OH * OW + oy * OW + ox, so the small
// late layers (7x7) of a batch still fill the GPU. A workgroup computes a BM x BN tile of
// (m, q) through workgroup memory in steps of BK over k; each of its 256 invocations holds
// 4 x 4 accumulators: rows ty * 4 + i, columns tx + 16 * j (consecutive invocations write
// consecutive columns). Tiles past the edges are zero-filled.
//
// Split K: workgroup z takes k in [z * k_chunk, (z + 1) * k_chunk). With SPLIT the raw sums
// go to part[z][m][q] and vision_slice_sum.wgsl adds the slices, the bias and the activation;
// layers with few output tiles (late, small feature maps with long K) use it to fill the GPU.
// POINTWISE (1x1, stride 1, no pad) skips the window arithmetic.

// The head is ConvShape (kernels/src/vision.rs), as in vision_conv.wgsl; `groups` is 1 here.
struct Params {
    n: u32, c: u32, h: u32, w: u32,
    m: u32, oh: u32, ow: u32, groups: u32,
    kh: u32, kw: u32, sh: u32, sw: u32,
    dh: u32, dw: u32, ph: u32, pw: u32,
    k_total: u32, k_chunk: u32, slices: u32, lo: f32, hi: f32,
}

override ACT: u32 = 0u;
override POINTWISE: bool = false;
override SPLIT: bool = false;

const BM: u32 = 64u;
const BN: u32 = 64u;
const BK: u32 = 16u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> wt: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;

// As[k][m], Bs[k][q]. The accumulators are four vec4s named one by one (rows ty * 4 + 0..3,
// columns tx + 16 * (0..3) as components): indexing a private array with a loop variable
// puts it in local memory on some drivers (NVIDIA's Vulkan compiler did, at a 5x cost).
var<workgroup> As: array<array<f32, 64>, 16>;
var<workgroup> Bs: array<array<f32, 64>, 16>;

fn activate(v: vec4<f32>) -> vec4<f32> {
    switch ACT {
        case 1u: { return clamp(v, vec4(p.lo), vec4(p.hi)); }
        case 2u: { return v / (1.0 + exp(-v)); }
        default: { return v; }
    }
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let out_plane = p.oh * p.ow;
    let in_plane = p.h * p.w;
    let ksize = p.kh * p.kw;
    let cols = p.n * out_plane;
    let m0 = wg.y * BM;
    let q0 = wg.x * BN;
    let tx = lid % 16u;
    let ty = lid / 16u;

    // This invocation's B-tile column (the same for every k step): its image, and the top
    // left input position of its window.
    let bq = q0 + lid % BN;
    let b_in = bq < cols;
    let bn = select(0u, bq / out_plane, b_in);
    let pos = select(0u, bq % out_plane, b_in);
    let x_base = bn * p.c * in_plane;
    let iy0 = i32((pos / p.ow) * p.sh) - i32(p.ph);
    let ix0 = i32((pos % p.ow) * p.sw) - i32(p.pw);
    let bk = lid / BN; // rows bk, bk + 4, bk + 8, bk + 12 of the B tile
    // A-tile: rows am + 16 r, k column ak.
    let am = lid / BK;
    let ak = lid % BK;

    let k_begin = wg.z * p.k_chunk;
    let k_end = min(p.k_total, k_begin + p.k_chunk);
    var acc0 = vec4(0.0);
    var acc1 = vec4(0.0);
    var acc2 = vec4(0.0);
    var acc3 = vec4(0.0);
    for (var k0 = k_begin; k0 < k_end; k0 += BK) {
        let gk = k0 + ak;
        for (var r = 0u; r < 4u; r++) {
            let row = am + 16u * r;
            let gm = m0 + row;
            var v = 0.0;
            if gm < p.m && gk < k_end {
                v = wt[gm * p.k_total + gk];
            }
            As[ak][row] = v;
        }
        for (var r = 0u; r < 4u; r++) {
            let kk = bk + 4u * r;
            let k = k0 + kk;
            var v = 0.0;
            if b_in && k < k_end {
                if POINTWISE {
                    v = x[x_base + k * in_plane + pos];
                } else {
                    let ic = k / ksize;
                    let tap = k % ksize;
                    let iy = iy0 + i32((tap / p.kw) * p.dh);
                    let ix = ix0 + i32((tap % p.kw) * p.dw);
                    if iy >= 0 && iy < i32(p.h) && ix >= 0 && ix < i32(p.w) {
                        v = x[x_base + ic * in_plane + u32(iy) * p.w + u32(ix)];
                    }
                }
            }
            Bs[kk][lid % BN] = v;
        }
        workgroupBarrier();
        for (var kk = 0u; kk < BK; kk++) {
            let b = vec4(Bs[kk][tx], Bs[kk][tx + 16u], Bs[kk][tx + 32u], Bs[kk][tx + 48u]);
            let r = ty * 4u;
            acc0 += As[kk][r] * b;
            acc1 += As[kk][r + 1u] * b;
            acc2 += As[kk][r + 2u] * b;
            acc3 += As[kk][r + 3u] * b;
        }
        workgroupBarrier();
    }

    let r0 = m0 + ty * 4u;
    store_row(wg.z, r0, q0 + tx, cols, out_plane, acc0);
    store_row(wg.z, r0 + 1u, q0 + tx, cols, out_plane, acc1);
    store_row(wg.z, r0 + 2u, q0 + tx, cols, out_plane, acc2);
    store_row(wg.z, r0 + 3u, q0 + tx, cols, out_plane, acc3);
}

// Output row m at columns q, q + 16, q + 32, q + 48 (the components of v).
fn store_row(slice: u32, m: u32, q: u32, cols: u32, plane: u32, v: vec4<f32>) {
    if m >= p.m {
        return;
    }
    var r = v;
    if !SPLIT {
        r = activate(v + bias[m]);
    }
    store_one(slice, m, q, cols, plane, r.x);
    store_one(slice, m, q + 16u, cols, plane, r.y);
    store_one(slice, m, q + 32u, cols, plane, r.z);
    store_one(slice, m, q + 48u, cols, plane, r.w);
}

fn store_one(slice: u32, m: u32, c: u32, cols: u32, plane: u32, v: f32) {
    if c >= cols {
        return;
    }
    if SPLIT {
        y[(slice * p.m + m) * cols + c] = v;
    } else {
        y[(c / plane) * p.m * plane + m * plane + c % plane] = v;
    }
}
