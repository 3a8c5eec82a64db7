// Q5_1 (24 bytes: f16 d, f16 m, u32 qh, 16 bytes of nibbles; Q5_0's bits; value d q + m): a
// unit is a block, 4-aligned: six word loads. Quants 0..31 are int8 as they stand; the min
// term uses the input block's word 9 as for Q4_1.
const LANE_UNITS: u32 = 1u;

@group(0) @binding(1) var<storage, read> w: array<u32>;

//!include q8dot/qh5.wgsl
//!include q8dot/one_block.wgsl

// The block's quants (elements 0..16, 16..32) and (d, m).
struct UnitW {
    lo: vec4<u32>,
    hi: vec4<u32>,
    dm: vec2<f32>,
}

// Block u of the row.
fn unit_weights(row_start: u32, u: u32) -> UnitW {
    let i = (row_start >> 2u) + 6u * u;
    let qh = w[i + 1u];
    let q = vec4<u32>(w[i + 2u], w[i + 3u], w[i + 4u], w[i + 5u]);
    let m = vec4<u32>(0x0F0F0F0Fu);
    let lo = (q & m) | qh_bytes(qh, 0u, 4u);
    let hi = ((q >> vec4<u32>(4u)) & m) | qh_bytes(qh, 16u, 4u);
    return UnitW(lo, hi, unpack2x16float(w[i]));
}

fn unit_apply(q: UnitW, x: UnitX) -> f32 {
    let sum = dot16(q.lo, x.a.q0) + dot16(q.hi, x.a.q1);
    return q.dm.x * f32(sum) * x.a.ds.x + q.dm.y * x.a.ds.y;
}
