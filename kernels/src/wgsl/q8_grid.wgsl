// The int8 grid of a 32-element block, shared by everything that quantizes activations to it
// (q8_round.wgsl, which rounds GEMM inputs onto the same values, and the writers of the blocks
// the int8-input GEMV reads) so all see identical numbers.
//
// A block as gemv_q8.wgsl reads it: 12 words — the 32 quants packed four to a word
// (pack4xI8Clamp), the scale d, d times the quants' sum (f32 bits), two zero words. Written by
// gemv.wgsl (INPUT_ONLY 2), norm.wgsl, q8_round.wgsl and attn_combine.wgsl (BLOCKS 1), each
// storing into its own binding (WGSL passes no storage pointers to a shared function), each
// from values it holds differently (registers, workgroup memory, spread over eight threads).

// The block's scale: its largest magnitude over 127.
fn q8_scale(amax: f32) -> f32 {
    return amax / 127.0;
}

// The quants of four values of a block of scale `d`: v / d rounded half away from zero,
// exactly (adding 0.5 first would round 0.49999997 up).
fn q8_quants(v: vec4<f32>, d: f32) -> vec4<i32> {
    let inv = select(0.0, 1.0 / d, d > 0.0);
    let s = v * inv;
    let f = floor(abs(s));
    return vec4<i32>(sign(s) * (f + select(vec4<f32>(0.0), vec4<f32>(1.0), abs(s) - f >= vec4<f32>(0.5))));
}
