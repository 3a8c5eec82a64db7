// Q4_1: 32 elements in 20 bytes: f16 d, f16 m, 16 bytes of nibbles (Q4_0's order).
// Value q * d + m.
const UNIT_ELEMS: u32 = 32u;
const UNIT_BYTES: u32 = 20u;
const SUB_ELEMS: u32 = 32u;

fn sub_dot(b: u32, s: u32, xv: u32, xsum: vec2<f32>) -> f32 {
    let i = b >> 2u;
    var acc = 0.0;
    for (var k = 0u; k < 4u; k++) {
        let q = w[i + 1u + k];
        acc += dot(vec4<f32>(bytes4(q) & vec4<u32>(0xFu)), xin(xv + k));
        acc += dot(vec4<f32>(bytes4(q >> 4u) & vec4<u32>(0xFu)), xin(xv + 4u + k));
    }
    let dm = unpack2x16float(w[i]);
    return acc * dm.x + (xsum.x + xsum.y) * dm.y;
}

fn dequant_elem(b: u32, e: u32) -> f32 {
    let byte = w_u8(b + 4u + (e & 15u));
    let q = (byte >> ((e >> 4u) * 4u)) & 0xFu;
    return fma(f32(q), w_f16(b), w_f16(b + 2u));
}
