// Q5_1 (24 bytes: f16 d, f16 m, u32 qh, 16 bytes of nibbles; Q5_0's bits; value d q + m): a
// unit is a block, 4-aligned: six word loads. Quants 0..31 are int8 as they stand; the min
// term uses the input block's word 9 as for Q4_1.
const LANE_UNITS: u32 = 1u;

@group(0) @binding(1) var<storage, read> w: array<u32>;

//!include q8dot/qh5.wgsl

// Block u of the row.
fn unit_dot(row_start: u32, u: u32) -> f32 {
    let i = (row_start >> 2u) + 6u * u;
    let dm = unpack2x16float(w[i]);
    let qh = w[i + 1u];
    let q = vec4<u32>(w[i + 2u], w[i + 3u], w[i + 4u], w[i + 5u]);
    let m = vec4<u32>(0x0F0F0F0Fu);
    let lo = (q & m) | qh_bytes(qh, 0u, 4u);
    let hi = ((q >> vec4<u32>(4u)) & m) | qh_bytes(qh, 16u, 4u);
    let sum = dot16(lo, x_q0(u)) + dot16(hi, x_q1(u));
    let xd = x_ds(u);
    return dm.x * f32(sum) * xd.x + dm.y * xd.y;
}
