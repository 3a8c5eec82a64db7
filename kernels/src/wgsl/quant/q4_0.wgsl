// Q4_0: 32 elements in 18 bytes: f16 d, 16 bytes of nibbles. Element j < 16 is the low nibble
// of byte j, element j + 16 its high nibble. Value (q - 8) * d.
const UNIT_ELEMS: u32 = 32u;
const UNIT_BYTES: u32 = 18u;
const SUB_STEPS: u32 = 4u;
const SUB_ELEMS: u32 = 32u;

fn sub_dot(b: u32, s: u32, xv: u32, k0: u32, ks: u32) -> f32 {
    var acc = 0.0;
    var xs = 0.0;
    for (var k = k0; k < 4u; k += ks) {
        let q = w_u32(b + 2u + 4u * k);
        let xa = xin(xv + k);
        let xb = xin(xv + 4u + k);
        acc += dot(vec4<f32>(bytes4(q) & vec4<u32>(0xFu)), xa) + dot(vec4<f32>(bytes4(q >> 4u) & vec4<u32>(0xFu)), xb);
        xs += dot(xa + xb, vec4<f32>(1.0));
    }
    return (acc - 8.0 * xs) * w_f16(b);
}

fn dequant_elem(b: u32, e: u32) -> f32 {
    let byte = w_u8(b + 2u + (e & 15u));
    let q = (byte >> ((e >> 4u) * 4u)) & 0xFu;
    return (f32(q) - 8.0) * w_f16(b);
}
