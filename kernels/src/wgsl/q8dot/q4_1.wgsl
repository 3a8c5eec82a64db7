// Q4_1 (20 bytes: f16 d, f16 m, 16 bytes of nibbles in Q4_0's order; value d q + m): a unit
// is a block, 4-aligned: five word loads. Nibbles are int8 as they stand; the block sums to
// d * dx * sum(q * qx) + m * (dx * sum(qx)), the last factor the input block's word 9.
const LANE_UNITS: u32 = 1u;

@group(0) @binding(1) var<storage, read> w: array<u32>;

// Block u of the row.
fn unit_dot(row_start: u32, u: u32) -> f32 {
    let i = (row_start >> 2u) + 5u * u;
    let dm = unpack2x16float(w[i]);
    let q = vec4<u32>(w[i + 1u], w[i + 2u], w[i + 3u], w[i + 4u]);
    let m = vec4<u32>(0x0F0F0F0Fu);
    let sum = dot16(q & m, x_q0(u)) + dot16((q >> vec4<u32>(4u)) & m, x_q1(u));
    let xd = x_ds(u);
    return dm.x * f32(sum) * xd.x + dm.y * xd.y;
}
