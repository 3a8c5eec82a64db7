// Q6_K: 256 elements in 210 bytes: 128 bytes ql (low 4 bits), 64 bytes qh (high 2 bits),
// 16 int8 scales, f16 d. Half h (128 elements) uses ql[64h..], qh[32h..], scales[8h..]; within
// it, for l < 32: element l from ql[l] low / qh[l] bits 0-1, l+32 from ql[l+32] low / bits 2-3,
// l+64 from ql[l] high / bits 4-5, l+96 from ql[l+32] high / bits 6-7; scale index l/16 + 2k.
// Value d * scale * (q - 32). The GPU holds the blocks in groups of eight with each field in a
// plane (q6_k_groups.wgsl): `b`, the block's GGUF offset, names it, `q6_block(b)` finds its
// fields.
const UNIT_ELEMS: u32 = 256u;
const UNIT_BYTES: u32 = 210u;
const SUB_STEPS: u32 = 8u;
const XB: u32 = 0u;
const SUB_ELEMS: u32 = 32u;

//!include quant/q6_k_groups.wgsl

fn q6_scale(q: Q6Block, i: u32) -> f32 {
    return f32(bitcast<i32>(w_u8(q.scales + i) << 24u) >> 24u);
}

// Step k (4 elements) of sub-block s of block `b`, as quants q - 32 and their scale d * sc.
// Sub-block s (32 elements): half h = s / 4, quarter = s % 4; element l takes the low (quarter
// < 2) or high nibble of ql[64h + l + 32 (quarter & 1)] and bits 2*quarter of qh[32h + l];
// elements l < 16 use scale 8h + 2*quarter, the others the next one.
fn q6_step(b: u32, s: u32, k: u32) -> StepW {
    let q = q6_block(b);
    let h = s >> 2u;
    let quarter = s & 3u;
    let l4 = bytes4(w[(q.ql + 64u * h + 32u * (quarter & 1u) + 4u * k) >> 2u] >> (4u * (quarter >> 1u))) & vec4<u32>(0xFu);
    let h4 = (bytes4(qh_bits(w[(q.qh + 32u * h + 4u * k) >> 2u])) >> vec4<u32>(2u * quarter)) & vec4<u32>(3u);
    let v = small_f32(l4 | (h4 << vec4<u32>(4u)), 32.0);
    let scale = w_f16(q.d) * q6_scale(q, 8u * h + 2u * quarter + (k >> 2u));
    return StepW(v, vec4<f32>(scale));
}

fn step_dot(b: u32, s: u32, k: u32, xa: vec4<f32>, xb: vec4<f32>) -> f32 {
    let st = q6_step(b, s, k);
    return st.b.x * dot(st.a, xa);
}

// Step k of sub-block s dequantized (the layout of step_dot above).
fn step_weights(b: u32, s: u32, k: u32) -> StepW {
    let st = q6_step(b, s, k);
    return StepW(st.b.x * st.a, vec4<f32>(0.0));
}

fn dequant_elem(b: u32, e: u32) -> f32 {
    let q = q6_block(b);
    let h = e / 128u;
    let r = e & 127u;
    let quarter = r / 32u;
    let l = r & 31u;
    let lbyte = w_u8(q.ql + 64u * h + l + 32u * (quarter & 1u));
    let low = (lbyte >> (4u * (quarter >> 1u))) & 0xFu;
    let high = (qh_bits(w_u8(q.qh + 32u * h + l)) >> (2u * quarter)) & 3u;
    let v = f32(low | (high << 4u)) - 32.0;
    let scale = w_f16(q.d) * q6_scale(q, 8u * h + l / 16u + 2u * quarter);
    return scale * v;
}
