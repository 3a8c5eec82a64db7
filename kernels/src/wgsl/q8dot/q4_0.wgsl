// Q4_0 (18 bytes: f16 d, 16 bytes of nibbles; element j < 16 the low nibble of byte j,
// j + 16 its high one; value d (q - 8)): a unit is a block. The offset is folded into the
// quants: a nibble placed in the top of a byte, its top bit flipped, is the int8 16 (q - 8),
// for the mask and shift that would put it at the bottom; d / 16 undoes the factor exactly.
// Blocks start on a word or 2 bytes into one, alternately: five word loads, the quants taken
// as Q8_0's are (branch-free, neighbouring lanes differ).
const LANE_UNITS: u32 = 1u;

@group(0) @binding(1) var<storage, read> w: array<u32>;

//!include q8dot/half_words.wgsl
//!include q8dot/one_block.wgsl

// The block's int8 words (elements 0..16, 16..32) and d / 16.
struct UnitW {
    lo: vec4<u32>,
    hi: vec4<u32>,
    d: f32,
}

// Block u of the row.
fn unit_weights(row_start: u32, u: u32) -> UnitW {
    let at = row_start + 18u * u;
    let i = at >> 2u;
    let odd = (at & 2u) != 0u;
    let w0 = w[i];
    let w1 = w[i + 1u];
    let w2 = w[i + 2u];
    let w3 = w[i + 3u];
    let w4 = w[i + 4u];
    let q = vec4<u32>(quant_word(w0, w1, odd), quant_word(w1, w2, odd), quant_word(w2, w3, odd), quant_word(w3, w4, odd));
    let d = unpack2x16float(select(w0, w0 >> 16u, odd)).x;
    let hi = vec4<u32>(0xF0F0F0F0u);
    let flip = vec4<u32>(0x80808080u);
    return UnitW(((q << vec4<u32>(4u)) & hi) ^ flip, (q & hi) ^ flip, 0.0625 * d);
}

fn unit_apply(q: UnitW, x: UnitX) -> f32 {
    let sum = dot16(q.lo, x.a.q0) + dot16(q.hi, x.a.q1);
    return f32(sum) * q.d * x.a.ds.x;
}
