// Q4_K: 256 elements in 144 bytes: f16 d, f16 dmin, 12 scale bytes, 128 bytes of nibbles.
// Chunk c (64 elements) uses bytes 32c..32c+32: low nibbles are sub-block 2c, high nibbles
// sub-block 2c+1. Value d*scale*q - dmin*min.
const UNIT_ELEMS: u32 = 256u;
const UNIT_BYTES: u32 = 144u;
const SUB_STEPS: u32 = 8u;
const XB: u32 = 0u;
const SUB_ELEMS: u32 = 32u;

//!include quant/kquant_scales.wgsl

// Sub-block s (32 elements): chunk s / 2, low nibbles when s is even, high when odd.
fn step_dot(b: u32, s: u32, k: u32, xa: vec4<f32>, xb: vec4<f32>) -> f32 {
    let q = w[(b >> 2u) + 4u + 8u * (s >> 1u) + k] >> (4u * (s & 1u));
    let dd = unpack2x16float(w[b >> 2u]);
    let sm = k_scale_min(b + 4u, s);
    return dd.x * sm.x * dot(vec4<f32>(bytes4(q) & vec4<u32>(0xFu)), xa) - dd.y * sm.y * dot(xa, vec4<f32>(1.0));
}

// Step k of sub-block s dequantized (d * scale * q - dmin * min, one fma per element as the
// CPU reference rounds it).
fn step_weights(b: u32, s: u32, k: u32) -> StepW {
    let h = vec4<u32>(w[b >> 2u], w[(b >> 2u) + 1u], w[(b >> 2u) + 2u], w[(b >> 2u) + 3u]);
    return step_weights_head(h, w[(b >> 2u) + 4u + 8u * (s >> 1u) + k], s);
}

// `step_weights` from the block's head words (d|dmin, then the scale words) and the step's
// quant word.
fn step_weights_head(h: vec4<u32>, qword: u32, s: u32) -> StepW {
    let dd = unpack2x16float(h.x);
    let sm = k_scale_min_words(h.y, h.z, h.w, s);
    let q = bytes4(qword >> (4u * (s & 1u))) & vec4<u32>(0xFu);
    let v = fma(vec4<f32>(dd.x * sm.x), small_f32(q, 0.0), vec4<f32>(-(dd.y * sm.y)));
    return StepW(v, vec4<f32>(0.0));
}

fn dequant_elem(b: u32, e: u32) -> f32 {
    let sub = e / 32u;
    let c = e / 64u;
    let byte = w_u8(b + 16u + 32u * c + (e & 31u));
    let q = (byte >> ((sub & 1u) * 4u)) & 0xFu;
    let dd = unpack2x16float(w[b >> 2u]);
    let sm = k_scale_min(b + 4u, sub);
    return fma(dd.x * sm.x, f32(q), -(dd.y * sm.y));
}
