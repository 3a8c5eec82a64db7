// f16: a unit is 32 elements (64 bytes).
const UNIT_ELEMS: u32 = 32u;
const UNIT_BYTES: u32 = 64u;

fn sub_dot(b: u32, s: u32) -> f32 {
    let i = b >> 2u;
    var acc = 0.0;
    for (var k = 0u; k < 8u; k++) {
        let v = vec4<f32>(unpack2x16float(w[i + 2u * k]), unpack2x16float(w[i + 2u * k + 1u]));
        acc += dot(v, XS[k]);
    }
    return acc;
}

fn dequant_elem(b: u32, e: u32) -> f32 {
    return w_f16(b + 2u * e);
}
