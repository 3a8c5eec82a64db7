// Q6_K: 256 elements in 210 bytes: 128 bytes ql (low 4 bits), 64 bytes qh (high 2 bits),
// 16 int8 scales, f16 d. Half h (128 elements) uses ql[64h..], qh[32h..], scales[8h..]; within
// it, for l < 32: element l from ql[l] low / qh[l] bits 0-1, l+32 from ql[l+32] low / bits 2-3,
// l+64 from ql[l] high / bits 4-5, l+96 from ql[l+32] high / bits 6-7; scale index l/16 + 2k.
// Value d * scale * (q - 32). The block is 2-byte aligned only.
const UNIT_ELEMS: u32 = 256u;
const UNIT_BYTES: u32 = 210u;
const SUB_STEPS: u32 = 8u;
const SUB_ELEMS: u32 = 32u;

fn q6_scale(b: u32, i: u32) -> f32 {
    return f32(bitcast<i32>(w_u8(b + 192u + i) << 24u) >> 24u);
}

// Sub-block s (32 elements): half h = s / 4, quarter = s % 4; element l takes the low (quarter
// < 2) or high nibble of ql[64h + l + 32 (quarter & 1)] and bits 2*quarter of qh[32h + l];
// elements l < 16 use scale 8h + 2*quarter, the others the next one.
fn sub_dot(b: u32, s: u32, xv: u32, k0: u32, ks: u32) -> f32 {
    let h = s >> 2u;
    let quarter = s & 3u;
    let ql = b + 64u * h + 32u * (quarter & 1u);
    let qh = b + 128u + 32u * h;
    let nib = 4u * (quarter >> 1u);
    var lo = vec2<f32>(0.0);
    var hi = vec2<f32>(0.0);
    for (var k = k0; k < 8u; k += ks) {
        let l4 = bytes4(w_u32(ql + 4u * k) >> nib) & vec4<u32>(0xFu);
        let h4 = (bytes4(w_u32(qh + 4u * k)) >> vec4<u32>(2u * quarter)) & vec4<u32>(3u);
        let xk = xin(xv + k);
        let v = vec2<f32>(dot(vec4<f32>(l4 | (h4 << vec4<u32>(4u))), xk), dot(xk, vec4<f32>(1.0)));
        if k < 4u {
            lo += v;
        } else {
            hi += v;
        }
    }
    let sc = b + 8u * h + 2u * quarter;
    let d = w_f16(b + 208u);
    return d * (q6_scale(sc, 0u) * (lo.x - 32.0 * lo.y) + q6_scale(sc, 1u) * (hi.x - 32.0 * hi.y));
}

fn dequant_elem(b: u32, e: u32) -> f32 {
    let h = e / 128u;
    let r = e & 127u;
    let quarter = r / 32u;
    let l = r & 31u;
    let lbyte = w_u8(b + 64u * h + l + 32u * (quarter & 1u));
    let low = (lbyte >> (4u * (quarter >> 1u))) & 0xFu;
    let high = (w_u8(b + 128u + 32u * h + l) >> (2u * quarter)) & 3u;
    let q = f32(low | (high << 4u)) - 32.0;
    let scale = w_f16(b + 208u) * q6_scale(b + 8u * h, l / 16u + 2u * quarter);
    return scale * q;
}
