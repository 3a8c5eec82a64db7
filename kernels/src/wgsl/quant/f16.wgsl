// f16: a unit is 8 elements (16 bytes), so adjacent lanes read adjacent 16-byte words.
const UNIT_ELEMS: u32 = 8u;
const UNIT_BYTES: u32 = 16u;
const SUB_STEPS: u32 = 1u;
const XB: u32 = 1u;
const SUB_ELEMS: u32 = 8u;

fn step_dot(b: u32, s: u32, k: u32, xa: vec4<f32>, xb: vec4<f32>) -> f32 {
    let i = b >> 2u;
    let a = vec4<f32>(unpack2x16float(w[i]), unpack2x16float(w[i + 1u]));
    let c = vec4<f32>(unpack2x16float(w[i + 2u]), unpack2x16float(w[i + 3u]));
    return dot(a, xa) + dot(c, xb);
}

// The unit's 8 values: the first 4 in `a`, the next 4 (XB = 1 vec4 on) in `b`.
fn step_weights(b: u32, s: u32, k: u32) -> StepW {
    let i = b >> 2u;
    return StepW(
        vec4<f32>(unpack2x16float(w[i]), unpack2x16float(w[i + 1u])),
        vec4<f32>(unpack2x16float(w[i + 2u]), unpack2x16float(w[i + 3u])),
    );
}

fn dequant_elem(b: u32, e: u32) -> f32 {
    return w_f16(b + 2u * e);
}
