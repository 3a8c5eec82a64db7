// f32: a unit is 4 elements (16 bytes), so adjacent lanes read adjacent 16-byte words.
const UNIT_ELEMS: u32 = 4u;
const UNIT_BYTES: u32 = 16u;
const SUB_STEPS: u32 = 1u;
const XB: u32 = 0u;
const SUB_ELEMS: u32 = 4u;

fn step_dot(b: u32, s: u32, k: u32, xa: vec4<f32>, xb: vec4<f32>) -> f32 {
    let i = b >> 2u;
    return dot(bitcast<vec4<f32>>(vec4<u32>(w[i], w[i + 1u], w[i + 2u], w[i + 3u])), xa);
}

fn step_weights(b: u32, s: u32, k: u32) -> StepW {
    let i = b >> 2u;
    return StepW(bitcast<vec4<f32>>(vec4<u32>(w[i], w[i + 1u], w[i + 2u], w[i + 3u])), vec4<f32>(0.0));
}

fn dequant_elem(b: u32, e: u32) -> f32 {
    return bitcast<f32>(w[(b >> 2u) + e]);
}
