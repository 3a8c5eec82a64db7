// Q4_1 (20 bytes: f16 d, f16 m, 16 bytes of nibbles in Q4_0's order; value d q + m): a unit
// is a block, 4-aligned: five word loads. Nibbles are int8 as they stand; the block sums to
// d * dx * sum(q * qx) + m * (dx * sum(qx)), the last factor the input block's word 9.
const LANE_UNITS: u32 = 1u;

@group(0) @binding(1) var<storage, read> w: array<u32>;

//!include q8dot/one_block.wgsl

// The block's quants (elements 0..16, 16..32) and (d, m).
struct UnitW {
    lo: vec4<u32>,
    hi: vec4<u32>,
    dm: vec2<f32>,
}

// Block u of the row.
fn unit_weights(row_start: u32, u: u32) -> UnitW {
    let i = (row_start >> 2u) + 5u * u;
    let q = vec4<u32>(w[i + 1u], w[i + 2u], w[i + 3u], w[i + 4u]);
    let m = vec4<u32>(0x0F0F0F0Fu);
    return UnitW(q & m, (q >> vec4<u32>(4u)) & m, unpack2x16float(w[i]));
}

fn unit_apply(q: UnitW, x: UnitX) -> f32 {
    let sum = dot16(q.lo, x.a.q0) + dot16(q.hi, x.a.q1);
    return q.dm.x * f32(sum) * x.a.ds.x + q.dm.y * x.a.ds.y;
}
