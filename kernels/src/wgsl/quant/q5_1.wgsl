// Q5_1: 32 elements in 24 bytes: f16 d, f16 m, u32 qh, 16 bytes of nibbles. Value q * d + m.
const UNIT_ELEMS: u32 = 32u;
const UNIT_BYTES: u32 = 24u;
const SUB_STEPS: u32 = 4u;
const XB: u32 = 4u;
const SUB_ELEMS: u32 = 32u;

// Step k: elements 4k..4k+4 and 16+4k.. (Q4_0's nibbles, 5th bits from qh).
fn step_dot(b: u32, s: u32, k: u32, xa: vec4<f32>, xb: vec4<f32>) -> f32 {
    let qh = w[(b >> 2u) + 1u];
    let q = w[(b >> 2u) + 2u + k];
    let hl = (vec4<u32>(qh >> (4u * k)) >> vec4<u32>(0u, 1u, 2u, 3u)) & vec4<u32>(1u);
    let hh = (vec4<u32>(qh >> (16u + 4u * k)) >> vec4<u32>(0u, 1u, 2u, 3u)) & vec4<u32>(1u);
    let acc = dot(vec4<f32>((bytes4(q) & vec4<u32>(0xFu)) | (hl << vec4<u32>(4u))), xa)
        + dot(vec4<f32>((bytes4(q >> 4u) & vec4<u32>(0xFu)) | (hh << vec4<u32>(4u))), xb);
    let dm = unpack2x16float(w[b >> 2u]);
    return acc * dm.x + dot(xa + xb, vec4<f32>(1.0)) * dm.y;
}

// Step k dequantized: elements 4k.. in `a`, 16+4k.. in `b` (nibbles with their 5th bits).
fn step_weights(b: u32, s: u32, k: u32) -> StepW {
    let qh = w[(b >> 2u) + 1u];
    let q = w[(b >> 2u) + 2u + k];
    let dm = unpack2x16float(w[b >> 2u]);
    let d = vec4<f32>(dm.x);
    let m = vec4<f32>(dm.y);
    let hl = (vec4<u32>(qh >> (4u * k)) >> vec4<u32>(0u, 1u, 2u, 3u)) & vec4<u32>(1u);
    let hh = (vec4<u32>(qh >> (16u + 4u * k)) >> vec4<u32>(0u, 1u, 2u, 3u)) & vec4<u32>(1u);
    let lo = vec4<f32>((bytes4(q) & vec4<u32>(0xFu)) | (hl << vec4<u32>(4u)));
    let hi = vec4<f32>((bytes4(q >> 4u) & vec4<u32>(0xFu)) | (hh << vec4<u32>(4u)));
    return StepW(fma(lo, d, m), fma(hi, d, m));
}

fn dequant_elem(b: u32, e: u32) -> f32 {
    let byte = w_u8(b + 8u + (e & 15u));
    let q = ((byte >> ((e >> 4u) * 4u)) & 0xFu) | (((w[(b >> 2u) + 1u] >> e) & 1u) << 4u);
    return fma(f32(q), w_f16(b), w_f16(b + 2u));
}
