// Q5_K: 256 elements in 176 bytes: f16 d, f16 dmin, 12 scale bytes, 32 bytes qh, 128 bytes of
// nibbles. As Q4_K, plus bit `sub` of qh[l] as the 5th bit of element 32*sub + l.
const UNIT_ELEMS: u32 = 256u;
const UNIT_BYTES: u32 = 176u;
const SUB_STEPS: u32 = 8u;
const XB: u32 = 0u;
const SUB_ELEMS: u32 = 32u;

//!include quant/kquant_scales.wgsl

// Sub-block s (32 elements): as Q4_K, plus bit s of qh[l] as the 5th bit.
fn step_dot(b: u32, s: u32, k: u32, xa: vec4<f32>, xb: vec4<f32>) -> f32 {
    let h = (bytes4(w[(b >> 2u) + 4u + k]) >> vec4<u32>(s)) & vec4<u32>(1u);
    let q = (bytes4(w[(b >> 2u) + 12u + 8u * (s >> 1u) + k] >> (4u * (s & 1u))) & vec4<u32>(0xFu)) | (h << vec4<u32>(4u));
    let dd = unpack2x16float(w[b >> 2u]);
    let sm = k_scale_min(b + 4u, s);
    return dd.x * sm.x * dot(vec4<f32>(q), xa) - dd.y * sm.y * dot(xa, vec4<f32>(1.0));
}

// Step k of sub-block s dequantized (as Q4_K, the 5th bits added).
fn step_weights(b: u32, s: u32, k: u32) -> StepW {
    let h = (bytes4(w[(b >> 2u) + 4u + k]) >> vec4<u32>(s)) & vec4<u32>(1u);
    let q = (bytes4(w[(b >> 2u) + 12u + 8u * (s >> 1u) + k] >> (4u * (s & 1u))) & vec4<u32>(0xFu)) | (h << vec4<u32>(4u));
    let dd = unpack2x16float(w[b >> 2u]);
    let sm = k_scale_min(b + 4u, s);
    let v = fma(vec4<f32>(dd.x * sm.x), vec4<f32>(q), vec4<f32>(-(dd.y * sm.y)));
    return StepW(v, vec4<f32>(0.0));
}

fn dequant_elem(b: u32, e: u32) -> f32 {
    let sub = e / 32u;
    let l = e & 31u;
    let byte = w_u8(b + 48u + 32u * (e / 64u) + l);
    let q = ((byte >> ((sub & 1u) * 4u)) & 0xFu) | (((w_u8(b + 16u + l) >> sub) & 1u) << 4u);
    let dd = unpack2x16float(w[b >> 2u]);
    let sm = k_scale_min(b + 4u, sub);
    return fma(dd.x * sm.x, f32(q), -(dd.y * sm.y));
}
