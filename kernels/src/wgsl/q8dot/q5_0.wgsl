// Q5_0 (22 bytes: f16 d, u32 qh, 16 bytes of nibbles in Q4_0's order; bit e of qh is the 5th
// bit of element e; value d (q - 16)): a unit is a block. The offset is folded into the
// quants as for Q4_0: q placed at bits 3..8 of a byte, the top bit flipped, is the int8
// 8 (q - 16); d / 8 undoes the factor. Blocks start on a word or 2 bytes into one,
// alternately: six word loads, the words taken as Q8_0's quants are.
const LANE_UNITS: u32 = 1u;

@group(0) @binding(1) var<storage, read> w: array<u32>;

//!include q8dot/qh5.wgsl
//!include q8dot/half_words.wgsl
//!include q8dot/one_block.wgsl

// The block's int8 words (elements 0..16, 16..32) and d / 8.
struct UnitW {
    lo: vec4<u32>,
    hi: vec4<u32>,
    d: f32,
}

// Block u of the row.
fn unit_weights(row_start: u32, u: u32) -> UnitW {
    let at = row_start + 22u * u;
    let i = at >> 2u;
    let odd = (at & 2u) != 0u;
    let w0 = w[i];
    let w1 = w[i + 1u];
    let w2 = w[i + 2u];
    let w3 = w[i + 3u];
    let w4 = w[i + 4u];
    let w5 = w[i + 5u];
    let d = unpack2x16float(select(w0, w0 >> 16u, odd)).x;
    let qh = quant_word(w0, w1, odd);
    let q = vec4<u32>(quant_word(w1, w2, odd), quant_word(w2, w3, odd), quant_word(w3, w4, odd), quant_word(w4, w5, odd));
    let nib = vec4<u32>(0x78787878u);
    let flip = vec4<u32>(0x80808080u);
    let lo = ((q << vec4<u32>(3u)) & nib) | qh_bytes(qh, 0u, 7u);
    let hi = ((q >> vec4<u32>(1u)) & nib) | qh_bytes(qh, 16u, 7u);
    return UnitW(lo ^ flip, hi ^ flip, 0.125 * d);
}

fn unit_apply(q: UnitW, x: UnitX) -> f32 {
    let sum = dot16(q.lo, x.a.q0) + dot16(q.hi, x.a.q1);
    return f32(sum) * q.d * x.a.ds.x;
}
