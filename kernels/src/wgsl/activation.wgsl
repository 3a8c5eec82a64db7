// Activations shared by the elementwise kernels and the GEMV input prologue.

fn silu(v: f32) -> f32 {
    return v / (1.0 + exp(-v));
}

// tanh approximation of GELU (ggml's gelu): 0.5 v (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3))).
fn gelu_tanh(v: f32) -> f32 {
    let u = 0.7978845608028654 * (v + 0.044715 * v * v * v);
    // tanh saturates; clamping keeps exp() finite for large |u|.
    return 0.5 * v * (1.0 + tanh(clamp(u, -15.0, 15.0)));
}

// The gated activations of four gate values (`swiglu`: SwiGLU's silu, else GeGLU's gelu_tanh):
// the GEMV and GEMM input forms and q8_round.wgsl's in-place rows.
fn gate4(v: vec4<f32>, swiglu: bool) -> vec4<f32> {
    if swiglu {
        return vec4<f32>(silu(v.x), silu(v.y), silu(v.z), silu(v.w));
    }
    return vec4<f32>(gelu_tanh(v.x), gelu_tanh(v.y), gelu_tanh(v.z), gelu_tanh(v.w));
}
