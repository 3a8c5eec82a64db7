// The norm forms (XFORM 1, 2) of the kernels that form an RMSNorm of their input rows
// themselves (gemm_rows.wgsl, gemm_x16.wgsl): the squares each thread sums and the weights the
// form applies. The including kernel declares `p`, XFORM, `nw` (the norm weights as vec4s)
// and includes gemm_input.wgsl (`xin`).

// The squares of elements e..e+4 of token t's row (the last token's past the end: unused).
fn square_sum(t: u32, e: u32) -> f32 {
    let v = xin(min(t, p.tokens - 1u), e);
    return dot(v, v);
}

// Elements e..e+4 of the norm weights as the form applies them: w (1) or 1 + w (2).
fn norm_scale(e: u32) -> vec4<f32> {
    let g = nw[e >> 2u];
    if XFORM == 2u {
        return g + vec4<f32>(1.0);
    }
    return g;
}
