// Q4_0: 32 elements in 18 bytes: f16 d, 16 bytes of nibbles. Element j < 16 is the low nibble
// of byte j, element j + 16 its high nibble. Value (q - 8) * d.
const UNIT_ELEMS: u32 = 32u;
const UNIT_BYTES: u32 = 18u;
const SUB_STEPS: u32 = 4u;
const XB: u32 = 4u;
const SUB_ELEMS: u32 = 32u;

// Step k: elements 4k..4k+4 (low nibbles of bytes 4k..) and 16+4k.. (high nibbles).
fn step_dot(b: u32, s: u32, k: u32, xa: vec4<f32>, xb: vec4<f32>) -> f32 {
    let q = w_u32(b + 2u + 4u * k);
    let acc = dot(vec4<f32>(bytes4(q) & vec4<u32>(0xFu)), xa) + dot(vec4<f32>(bytes4(q >> 4u) & vec4<u32>(0xFu)), xb);
    return (acc - 8.0 * dot(xa + xb, vec4<f32>(1.0))) * w_f16(b);
}

// Step k dequantized: the low nibbles of bytes 4k.. (elements 4k..) in `a`, their high nibbles
// (elements 16+4k..) in `b`.
fn step_weights(b: u32, s: u32, k: u32) -> StepW {
    let q = w_u32(b + 2u + 4u * k);
    let d = w_f16(b);
    let lo = vec4<f32>(bytes4(q) & vec4<u32>(0xFu));
    let hi = vec4<f32>(bytes4(q >> 4u) & vec4<u32>(0xFu));
    return StepW((lo - 8.0) * d, (hi - 8.0) * d);
}

fn dequant_elem(b: u32, e: u32) -> f32 {
    let byte = w_u8(b + 2u + (e & 15u));
    let q = (byte >> ((e >> 4u) * 4u)) & 0xFu;
    return (f32(q) - 8.0) * w_f16(b);
}
