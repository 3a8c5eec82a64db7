// The int8 input blocks as the q8dot snippets read them (gemv.wgsl's INPUT_ONLY 2 layout, 3
// vec4s per 32 values: the quants of elements 0..16 and 16..32, then (d, d * sum(q), 0, 0)).
// The including kernel declares `xq: array<vec4<u32>>`; a vector whose block 0 is at vec4 `xb`
// has block b at xq[xb + 3b ..]. A snippet splits a unit's dot product into unit_weights (the
// row's int8 words and scales, decoded once), unit_input (the input blocks the unit meets) and
// unit_apply (the integer dot products and the scales), so a kernel with several input rows
// (gemm_rows_q8.wgsl) decodes each weight unit once for all of them.

struct XBlock {
    q0: vec4<u32>,
    q1: vec4<u32>,
    ds: vec2<f32>,
}

fn x_block(xb: u32, b: u32) -> XBlock {
    let at = xb + 3u * b;
    return XBlock(xq[at], xq[at + 1u], bitcast<vec2<f32>>(xq[at + 2u].xy));
}

// The integer dot product of 16 packed int8 weights with 16 input quants.
fn dot16(q: vec4<u32>, x: vec4<u32>) -> i32 {
    return dot4I8Packed(q.x, x.x) + dot4I8Packed(q.y, x.y) + dot4I8Packed(q.z, x.z) + dot4I8Packed(q.w, x.w);
}
