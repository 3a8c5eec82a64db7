// A Q4_K / Q5_K unit: chunk c of a block, sub-blocks 2c and 2c + 1 (64 elements, input blocks
// 2u and 2u + 1), as int8 words with the pair's 6-bit scales and mins and the block's d and
// dmin. A sub-block sums to d * sc * dx * sum(q * qx) - dmin * m * (dx * sum(qx)), the last
// factor the input block's word 9, so the min costs one multiply-add per 32 elements.

//!include q8dot/k_pairs.wgsl
//!include q8dot/two_blocks.wgsl

// Sub-block 2c's quants (a0 elements 0..16, a1 16..32), 2c + 1's (b0, b1), (sc, sc, mn, mn)
// of the pair, (d, dmin).
struct UnitW {
    a0: vec4<u32>,
    a1: vec4<u32>,
    b0: vec4<u32>,
    b1: vec4<u32>,
    sm: vec4<u32>,
    dd: vec2<f32>,
}

fn unit_input(u: u32, xb: u32) -> UnitX {
    return UnitX(x_block(xb, 2u * u), x_block(xb, 2u * u + 1u));
}

// sc * sum stays integer (at most 63 * 32 * 31 * 127).
fn unit_apply(q: UnitW, x: UnitX) -> f32 {
    let sa = dot16(q.a0, x.a.q0) + dot16(q.a1, x.a.q1);
    let sb = dot16(q.b0, x.b.q0) + dot16(q.b1, x.b.q1);
    let scaled = f32(i32(q.sm.x) * sa) * x.a.ds.x + f32(i32(q.sm.y) * sb) * x.b.ds.x;
    let mins = f32(q.sm.z) * x.a.ds.y + f32(q.sm.w) * x.b.ds.y;
    return q.dd.x * scaled - q.dd.y * mins;
}
