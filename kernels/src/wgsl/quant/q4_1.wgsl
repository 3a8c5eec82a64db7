// Q4_1: 32 elements in 20 bytes: f16 d, f16 m, 16 bytes of nibbles (Q4_0's order).
// Value q * d + m.
const UNIT_ELEMS: u32 = 32u;
const UNIT_BYTES: u32 = 20u;

fn unit_dot(b: u32, xv: u32) -> f32 {
    var sq = 0.0;
    var sx = 0.0;
    for (var k = 0u; k < 4u; k++) {
        let q = w[(b >> 2u) + 1u + k];
        let lo = vec4<f32>(bytes4(q) & vec4<u32>(0xFu));
        let hi = vec4<f32>(bytes4(q >> 4u) & vec4<u32>(0xFu));
        let xa = x[xv + k];
        let xb = x[xv + 4u + k];
        sq += dot(lo, xa) + dot(hi, xb);
        sx += dot(xa + xb, vec4<f32>(1.0));
    }
    let dm = unpack2x16float(w[b >> 2u]);
    return sq * dm.x + sx * dm.y;
}

fn dequant_elem(b: u32, e: u32) -> f32 {
    let byte = w_u8(b + 4u + (e & 15u));
    let q = (byte >> ((e >> 4u) * 4u)) & 0xFu;
    return fma(f32(q), w_f16(b), w_f16(b + 2u));
}
