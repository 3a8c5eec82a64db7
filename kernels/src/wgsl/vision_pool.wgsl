// 2-D max or average pooling, NCHW f32 (global average pooling is the window of the whole
// plane). MAX 1: the largest tap inside the input; MAX 0: the mean of the taps inside the
// input, or with INCLUDE_PAD of those inside the padded extent [-pad_begin, size + pad_end).

struct Params {
    planes: u32, h: u32, w: u32, oh: u32,
    ow: u32, kh: u32, kw: u32, sh: u32,
    sw: u32, dh: u32, dw: u32, ph: u32,
    pw: u32, eh: u32, ew: u32, grid_x: u32,
}

override WG: u32 = 256u;
override MAX: u32 = 1u;
override INCLUDE_PAD: u32 = 0u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wg.x + wg.y * p.grid_x) * WG + lid;
    if i >= p.planes * p.oh * p.ow {
        return;
    }
    let ox = i % p.ow;
    let oy = (i / p.ow) % p.oh;
    let plane = (i / (p.ow * p.oh)) * p.h * p.w;
    var best = -3.402823e38;
    var sum = 0.0;
    var count = 0u;
    for (var ky = 0u; ky < p.kh; ky++) {
        let iy = i32(oy * p.sh + ky * p.dh) - i32(p.ph);
        for (var kx = 0u; kx < p.kw; kx++) {
            let ix = i32(ox * p.sw + kx * p.dw) - i32(p.pw);
            let inside = iy >= 0 && iy < i32(p.h) && ix >= 0 && ix < i32(p.w);
            if inside {
                let v = x[plane + u32(iy) * p.w + u32(ix)];
                best = max(best, v);
                sum += v;
                count += 1u;
            } else if INCLUDE_PAD == 1u && iy < i32(p.h + p.eh) && ix < i32(p.w + p.ew) {
                count += 1u;
            }
        }
    }
    if MAX == 1u {
        y[i] = best;
    } else {
        y[i] = sum / f32(max(count, 1u));
    }
}
