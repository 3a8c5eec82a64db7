// Q6_K: 256 elements in 210 bytes: 128 bytes ql (low 4 bits), 64 bytes qh (high 2 bits),
// 16 int8 scales, f16 d. Half h (128 elements) uses ql[64h..], qh[32h..], scales[8h..]; within
// it, for l < 32: element l from ql[l] low / qh[l] bits 0-1, l+32 from ql[l+32] low / bits 2-3,
// l+64 from ql[l] high / bits 4-5, l+96 from ql[l+32] high / bits 6-7; scale index l/16 + 2k.
// Value d * scale * (q - 32). The block is 2-byte aligned only.
const UNIT_ELEMS: u32 = 256u;
const UNIT_BYTES: u32 = 210u;

fn q6_scale(b: u32, i: u32) -> f32 {
    return f32(bitcast<i32>(w_u8(b + 192u + i) << 24u) >> 24u);
}

fn unit_dot(b: u32, xv: u32) -> f32 {
    let d = w_f16(b + 208u);
    var s = 0.0;
    for (var h = 0u; h < 2u; h++) {
        let ql = b + 64u * h;
        let qh = b + 128u + 32u * h;
        var part = vec4<f32>(0.0);
        var part2 = vec4<f32>(0.0);
        for (var k = 0u; k < 8u; k++) {
            let l0 = w_u32(ql + 4u * k);
            let l1 = w_u32(ql + 32u + 4u * k);
            let hh = bytes4(w_u32(qh + 4u * k));
            let q1 = vec4<f32>((bytes4(l0) & vec4<u32>(0xFu)) | ((hh & vec4<u32>(3u)) << vec4<u32>(4u))) - 32.0;
            let q2 = vec4<f32>((bytes4(l1) & vec4<u32>(0xFu)) | (((hh >> vec4<u32>(2u)) & vec4<u32>(3u)) << vec4<u32>(4u))) - 32.0;
            let q3 = vec4<f32>((bytes4(l0 >> 4u) & vec4<u32>(0xFu)) | (((hh >> vec4<u32>(4u)) & vec4<u32>(3u)) << vec4<u32>(4u))) - 32.0;
            let q4 = vec4<f32>((bytes4(l1 >> 4u) & vec4<u32>(0xFu)) | (((hh >> vec4<u32>(6u)) & vec4<u32>(3u)) << vec4<u32>(4u))) - 32.0;
            let base = xv + 32u * h + k;
            let dots = vec4<f32>(dot(q1, x[base]), dot(q2, x[base + 8u]), dot(q3, x[base + 16u]), dot(q4, x[base + 24u]));
            // Scale index l/16 = k/4 (first 16 lanes) plus 2 per quarter.
            if k < 4u {
                part += dots;
            } else {
                part2 += dots;
            }
        }
        let sc = b + 8u * h;
        let s0 = vec4<f32>(q6_scale(sc, 0u), q6_scale(sc, 2u), q6_scale(sc, 4u), q6_scale(sc, 6u));
        let s1 = vec4<f32>(q6_scale(sc, 1u), q6_scale(sc, 3u), q6_scale(sc, 5u), q6_scale(sc, 7u));
        s += dot(part, s0) + dot(part2, s1);
    }
    return s * d;
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
