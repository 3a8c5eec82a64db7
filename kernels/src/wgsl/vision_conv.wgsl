// 2-D convolution, NCHW f32, with groups (depthwise included), strides, dilations and
// leading pads, bias and a fused activation: ACT 0 none, 1 clamp(lo, hi) (ReLU, ReLU6, Clip),
// 2 SiLU (x * sigmoid(x)). One invocation per output position and OCT output channels (of one
// group: OCT divides the channels per group), each input element loaded once for all OCT.
// `total` counts invocations.

// The head is ConvShape (kernels/src/vision.rs), as in vision_conv_gemm.wgsl.
struct Params {
    n: u32, c: u32, h: u32, w: u32,
    m: u32, oh: u32, ow: u32, groups: u32,
    kh: u32, kw: u32, sh: u32, sw: u32,
    dh: u32, dw: u32, ph: u32, pw: u32,
    total: u32, grid_x: u32, lo: f32, hi: f32,
}

override WG: u32 = 256u;
override ACT: u32 = 0u;
override OCT: u32 = 1u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> wt: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wg.x + wg.y * p.grid_x) * WG + lid;
    if i >= p.total {
        return;
    }
    let blocks = p.m / OCT;
    let ox = i % p.ow;
    let oy = (i / p.ow) % p.oh;
    let oc0 = ((i / (p.ow * p.oh)) % blocks) * OCT;
    let nb = i / (p.ow * p.oh * blocks);
    let cg = p.c / p.groups;
    let g = oc0 / (p.m / p.groups);
    let ksize = p.kh * p.kw;
    // One vec4 of accumulators (component j: channel oc0 + j), never a private array indexed
    // by a loop variable: some drivers put those in local memory (NVIDIA's did, 5x slower).
    var acc = vec4(bias[oc0], 0.0, 0.0, 0.0);
    let wstride = cg * ksize;
    if OCT == 4u {
        acc = vec4(bias[oc0], bias[oc0 + 1u], bias[oc0 + 2u], bias[oc0 + 3u]);
    }
    for (var ic = 0u; ic < cg; ic++) {
        let plane = ((nb * p.c + g * cg + ic) * p.h) * p.w;
        let wbase = (oc0 * cg + ic) * ksize;
        for (var ky = 0u; ky < p.kh; ky++) {
            let iy = i32(oy * p.sh + ky * p.dh) - i32(p.ph);
            if iy < 0 || iy >= i32(p.h) {
                continue;
            }
            for (var kx = 0u; kx < p.kw; kx++) {
                let ix = i32(ox * p.sw + kx * p.dw) - i32(p.pw);
                if ix < 0 || ix >= i32(p.w) {
                    continue;
                }
                let xv = x[plane + u32(iy) * p.w + u32(ix)];
                let tap = wbase + ky * p.kw + kx;
                if OCT == 4u {
                    acc += xv * vec4(wt[tap], wt[tap + wstride], wt[tap + 2u * wstride],
                                     wt[tap + 3u * wstride]);
                } else {
                    acc.x += xv * wt[tap];
                }
            }
        }
    }
    switch ACT {
        case 1u: { acc = clamp(acc, vec4(p.lo), vec4(p.hi)); }
        case 2u: { acc = acc / (1.0 + exp(-acc)); }
        default: {}
    }
    let out = ((nb * p.m + oc0) * p.oh + oy) * p.ow + ox;
    let cstride = p.oh * p.ow;
    y[out] = acc.x;
    if OCT == 4u {
        y[out + cstride] = acc.y;
        y[out + 2u * cstride] = acc.z;
        y[out + 3u * cstride] = acc.w;
    }
}
