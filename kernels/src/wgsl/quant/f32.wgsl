// f32: a unit is 32 elements (128 bytes).
const UNIT_ELEMS: u32 = 32u;
const UNIT_BYTES: u32 = 128u;

fn sub_dot(b: u32, s: u32) -> f32 {
    let i = b >> 2u;
    var acc = 0.0;
    for (var k = 0u; k < 8u; k++) {
        let j = i + 4u * k;
        acc += dot(bitcast<vec4<f32>>(vec4<u32>(w[j], w[j + 1u], w[j + 2u], w[j + 3u])), XS[k]);
    }
    return acc;
}

fn dequant_elem(b: u32, e: u32) -> f32 {
    return bitcast<f32>(w[(b >> 2u) + e]);
}
