// f32: a unit is 4 elements (16 bytes).
const UNIT_ELEMS: u32 = 4u;
const UNIT_BYTES: u32 = 16u;

fn unit_dot(b: u32, xv: u32) -> f32 {
    let i = b >> 2u;
    let v = bitcast<vec4<f32>>(vec4<u32>(w[i], w[i + 1u], w[i + 2u], w[i + 3u]));
    return dot(v, x[xv]);
}

fn dequant_elem(b: u32, e: u32) -> f32 {
    return bitcast<f32>(w[(b >> 2u) + e]);
}
