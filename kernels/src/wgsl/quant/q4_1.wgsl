// Q4_1: 32 elements in 20 bytes: f16 d, f16 m, 16 bytes of nibbles (Q4_0's order).
// Value q * d + m.
const UNIT_ELEMS: u32 = 32u;
const UNIT_BYTES: u32 = 20u;
const SUB_STEPS: u32 = 4u;
const XB: u32 = 4u;
const SUB_ELEMS: u32 = 32u;

// Step k: elements 4k..4k+4 (low nibbles of bytes 4k..) and 16+4k.. (high nibbles).
fn step_dot(b: u32, s: u32, k: u32, xa: vec4<f32>, xb: vec4<f32>) -> f32 {
    let q = w[(b >> 2u) + 1u + k];
    let acc = dot(vec4<f32>(bytes4(q) & vec4<u32>(0xFu)), xa) + dot(vec4<f32>(bytes4(q >> 4u) & vec4<u32>(0xFu)), xb);
    let dm = unpack2x16float(w[b >> 2u]);
    return acc * dm.x + dot(xa + xb, vec4<f32>(1.0)) * dm.y;
}

// Step k dequantized: low nibbles (elements 4k..) in `a`, high nibbles (16+4k..) in `b`.
fn step_weights(b: u32, s: u32, k: u32) -> StepW {
    let q = w[(b >> 2u) + 1u + k];
    let dm = unpack2x16float(w[b >> 2u]);
    let d = vec4<f32>(dm.x);
    let m = vec4<f32>(dm.y);
    let lo = vec4<f32>(bytes4(q) & vec4<u32>(0xFu));
    let hi = vec4<f32>(bytes4(q >> 4u) & vec4<u32>(0xFu));
    return StepW(fma(lo, d, m), fma(hi, d, m));
}

fn dequant_elem(b: u32, e: u32) -> f32 {
    let byte = w_u8(b + 4u + (e & 15u));
    let q = (byte >> ((e >> 4u) * 4u)) & 0xFu;
    return fma(f32(q), w_f16(b), w_f16(b + 2u));
}
