// Q8_0: 32 elements in 34 bytes: f16 d, 32 int8. Value q * d.
const UNIT_ELEMS: u32 = 32u;
const UNIT_BYTES: u32 = 34u;
const SUB_STEPS: u32 = 8u;
const XB: u32 = 0u;
const SUB_ELEMS: u32 = 32u;

fn step_dot(b: u32, s: u32, k: u32, xa: vec4<f32>, xb: vec4<f32>) -> f32 {
    return dot(vec4<f32>(sbytes4(w_u32(b + 2u + 4u * k))), xa) * w_f16(b);
}

fn step_weights(b: u32, s: u32, k: u32) -> StepW {
    return StepW(vec4<f32>(sbytes4(w_u32(b + 2u + 4u * k))) * w_f16(b), vec4<f32>(0.0));
}

fn dequant_elem(b: u32, e: u32) -> f32 {
    let q = bitcast<i32>(w_u8(b + 2u + e) << 24u) >> 24u;
    return f32(q) * w_f16(b);
}
