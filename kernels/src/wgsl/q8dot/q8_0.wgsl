// Q8_0 (34 bytes: f16 d, 32 int8): a unit is a block, its quants already int8. In a row of
// 4-aligned start every other block starts 2 bytes into a word. A lane loads the nine words
// that hold its block and takes the quants either as words (odd start) or as two halves of
// neighbouring words (even start), branch-free: neighbouring lanes take neighbouring blocks,
// so they alternate.
const LANE_UNITS: u32 = 1u;

@group(0) @binding(1) var<storage, read> w: array<u32>;

//!include q8dot/half_words.wgsl
//!include q8dot/one_block.wgsl

struct UnitW {
    lo: vec4<u32>,
    hi: vec4<u32>,
    d: f32,
}

// Block u of the row. Written out word by word: a private array would be spilled to local
// memory by some compilers.
fn unit_weights(row_start: u32, u: u32) -> UnitW {
    let b = row_start + 34u * u;
    let i = b >> 2u;
    let odd = (b & 2u) != 0u;
    let w0 = w[i];
    let w1 = w[i + 1u];
    let w2 = w[i + 2u];
    let w3 = w[i + 3u];
    let w4 = w[i + 4u];
    let w5 = w[i + 5u];
    let w6 = w[i + 6u];
    let w7 = w[i + 7u];
    let w8 = w[i + 8u];
    let q0 = vec4<u32>(quant_word(w0, w1, odd), quant_word(w1, w2, odd), quant_word(w2, w3, odd), quant_word(w3, w4, odd));
    let q1 = vec4<u32>(quant_word(w4, w5, odd), quant_word(w5, w6, odd), quant_word(w6, w7, odd), quant_word(w7, w8, odd));
    let d = unpack2x16float(select(w0, w0 >> 16u, odd)).x;
    return UnitW(q0, q1, d);
}

fn unit_apply(q: UnitW, x: UnitX) -> f32 {
    let sum = dot16(q.lo, x.a.q0) + dot16(q.hi, x.a.q1);
    return f32(sum) * q.d * x.a.ds.x;
}
