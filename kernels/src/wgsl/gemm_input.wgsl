// The input rows of the GEMMs that read X as vec4s (gemm_rows.wgsl, gemm_coop.wgsl,
// gemm_x16.wgsl): element runs of token t's row formed as the kernel's XFORM says (0 X as
// bound; 3 SwiGLU silu(X[t, k]) * X[t, x_aux + k]; 4 GeGLU with gelu_tanh; the norm forms 1
// and 2 of gemm_rows.wgsl get X as bound here, and that kernel scales it), read as aligned
// vec4s from `x4` when XV4 is 1 (x_offset, x_stride and x_aux multiples of 4), else four scalar
// loads from `x`. The including kernel declares `p` (gemm_params.wgsl), `x`, `x4` (the same
// buffer as vec4s), XFORM and XV4.

//!include activation.wgsl

fn act4(v: vec4<f32>) -> vec4<f32> {
    return gate4(v, XFORM == 3u);
}

fn x_at(i: u32) -> vec4<f32> {
    if XV4 == 1u {
        return x4[i >> 2u];
    }
    return vec4<f32>(x[i], x[i + 1u], x[i + 2u], x[i + 3u]);
}

// Elements e..e+4 of token t's input row (`cols` is a multiple of 4: every unit is).
fn xin(t: u32, e: u32) -> vec4<f32> {
    let i = p.x_offset + t * p.x_stride + e;
    let v = x_at(i);
    if XFORM == 3u || XFORM == 4u {
        return act4(v) * x_at(i + p.x_aux);
    }
    return v;
}
