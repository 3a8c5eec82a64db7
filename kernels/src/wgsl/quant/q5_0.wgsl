// Q5_0: 32 elements in 22 bytes: f16 d, u32 qh (bit j = 5th bit of element j), 16 bytes of
// nibbles (Q4_0's order). Value (q - 16) * d.
const UNIT_ELEMS: u32 = 32u;
const UNIT_BYTES: u32 = 22u;
const SUB_STEPS: u32 = 4u;
const XB: u32 = 4u;
const SUB_ELEMS: u32 = 32u;

// Step k: elements 4k..4k+4 and 16+4k.. (Q4_0's nibbles, 5th bits from qh).
fn step_dot(b: u32, s: u32, k: u32, xa: vec4<f32>, xb: vec4<f32>) -> f32 {
    let qh = w_u32(b + 2u);
    let q = w_u32(b + 6u + 4u * k);
    let hl = (vec4<u32>(qh >> (4u * k)) >> vec4<u32>(0u, 1u, 2u, 3u)) & vec4<u32>(1u);
    let hh = (vec4<u32>(qh >> (16u + 4u * k)) >> vec4<u32>(0u, 1u, 2u, 3u)) & vec4<u32>(1u);
    let acc = dot(vec4<f32>((bytes4(q) & vec4<u32>(0xFu)) | (hl << vec4<u32>(4u))), xa)
        + dot(vec4<f32>((bytes4(q >> 4u) & vec4<u32>(0xFu)) | (hh << vec4<u32>(4u))), xb);
    return (acc - 16.0 * dot(xa + xb, vec4<f32>(1.0))) * w_f16(b);
}

// Step k dequantized: elements 4k.. in `a`, 16+4k.. in `b` (nibbles with their 5th bits).
fn step_weights(b: u32, s: u32, k: u32) -> StepW {
    let qh = w_u32(b + 2u);
    let q = w_u32(b + 6u + 4u * k);
    let d = w_f16(b);
    let hl = (vec4<u32>(qh >> (4u * k)) >> vec4<u32>(0u, 1u, 2u, 3u)) & vec4<u32>(1u);
    let hh = (vec4<u32>(qh >> (16u + 4u * k)) >> vec4<u32>(0u, 1u, 2u, 3u)) & vec4<u32>(1u);
    let lo = vec4<f32>((bytes4(q) & vec4<u32>(0xFu)) | (hl << vec4<u32>(4u)));
    let hi = vec4<f32>((bytes4(q >> 4u) & vec4<u32>(0xFu)) | (hh << vec4<u32>(4u)));
    return StepW((lo - 16.0) * d, (hi - 16.0) * d);
}

fn dequant_elem(b: u32, e: u32) -> f32 {
    let byte = w_u8(b + 6u + (e & 15u));
    let q = ((byte >> ((e >> 4u) * 4u)) & 0xFu) | (((w_u32(b + 2u) >> e) & 1u) << 4u);
    return (f32(q) - 16.0) * w_f16(b);
}
