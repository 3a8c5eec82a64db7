// Q4_K: 256 elements in 144 bytes: f16 d, f16 dmin, 12 scale bytes, 128 bytes of nibbles.
// Chunk c (64 elements) uses bytes 32c..32c+32: low nibbles are sub-block 2c, high nibbles
// sub-block 2c+1. Value d*scale*q - dmin*min.
const UNIT_ELEMS: u32 = 256u;
const UNIT_BYTES: u32 = 144u;

//!include quant/kquant_scales.wgsl

fn unit_dot(b: u32, xv: u32) -> f32 {
    let dd = unpack2x16float(w[b >> 2u]);
    let qw = (b >> 2u) + 4u;
    var s = 0.0;
    for (var c = 0u; c < 4u; c++) {
        var sq0 = 0.0;
        var sq1 = 0.0;
        var sx0 = 0.0;
        var sx1 = 0.0;
        for (var k = 0u; k < 8u; k++) {
            let q = w[qw + 8u * c + k];
            let xa = x[xv + 16u * c + k];
            let xb = x[xv + 16u * c + 8u + k];
            sq0 += dot(vec4<f32>(bytes4(q) & vec4<u32>(0xFu)), xa);
            sq1 += dot(vec4<f32>(bytes4(q >> 4u) & vec4<u32>(0xFu)), xb);
            sx0 += dot(xa, vec4<f32>(1.0));
            sx1 += dot(xb, vec4<f32>(1.0));
        }
        let a = k_scale_min(b + 4u, 2u * c);
        let z = k_scale_min(b + 4u, 2u * c + 1u);
        s += dd.x * (a.x * sq0 + z.x * sq1) - dd.y * (a.y * sx0 + z.y * sx1);
    }
    return s;
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
