// Q5_K: 256 elements in 176 bytes: f16 d, f16 dmin, 12 scale bytes, 32 bytes qh, 128 bytes of
// nibbles. As Q4_K, plus bit `sub` of qh[l] as the 5th bit of element 32*sub + l.
const UNIT_ELEMS: u32 = 256u;
const UNIT_BYTES: u32 = 176u;

//!include quant/kquant_scales.wgsl

fn unit_dot(b: u32, xv: u32) -> f32 {
    let dd = unpack2x16float(w[b >> 2u]);
    let hw = (b >> 2u) + 4u;
    let qw = (b >> 2u) + 12u;
    var s = 0.0;
    for (var c = 0u; c < 4u; c++) {
        var sq0 = 0.0;
        var sq1 = 0.0;
        var sx0 = 0.0;
        var sx1 = 0.0;
        for (var k = 0u; k < 8u; k++) {
            let q = w[qw + 8u * c + k];
            let h = bytes4(w[hw + k]);
            let xa = x[xv + 16u * c + k];
            let xb = x[xv + 16u * c + 8u + k];
            let lo = (bytes4(q) & vec4<u32>(0xFu)) | (((h >> vec4<u32>(2u * c)) & vec4<u32>(1u)) << vec4<u32>(4u));
            let hi = (bytes4(q >> 4u) & vec4<u32>(0xFu)) | (((h >> vec4<u32>(2u * c + 1u)) & vec4<u32>(1u)) << vec4<u32>(4u));
            sq0 += dot(vec4<f32>(lo), xa);
            sq1 += dot(vec4<f32>(hi), xb);
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
    let l = e & 31u;
    let byte = w_u8(b + 48u + 32u * (e / 64u) + l);
    let q = ((byte >> ((sub & 1u) * 4u)) & 0xFu) | (((w_u8(b + 16u + l) >> sub) & 1u) << 4u);
    let dd = unpack2x16float(w[b >> 2u]);
    let sm = k_scale_min(b + 4u, sub);
    return fma(dd.x * sm.x, f32(q), -(dd.y * sm.y));
}
