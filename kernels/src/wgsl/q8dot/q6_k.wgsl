// Q6_K (210 bytes per 256 elements: 128 bytes ql, 64 bytes qh, 16 int8 scales, f16 d; half h
// of 128 elements uses ql[64h..], qh[32h..], scales[8h..], and element 32 k + l of it, k < 4,
// takes nibble k / 2 of ql[64h + 32 (k % 2) + l], bits 2k of qh[32h + l], scale
// 8h + 2k + l / 16; value d * scale * (q - 32)): a unit is 32 bytes of ql, whose two nibbles
// are quarters j and j + 2 of a half (64 elements), with the half's 32 qh bytes.
//
// The offset is folded into the quants: a 6-bit q placed in the top of a byte, its top bit
// flipped (the flip held in qh: q6_words), is the int8 4 (q - 32) (q * 4 - 128), with the
// same masks and shifts that would put q at the bottom; d / 4 undoes the factor exactly.
// That keeps one dot4I8Packed per four elements (subtracting 32 * sum(qx) instead would need
// a second one per word: the scales are per 16 elements, the input block's sum per 32). The
// scale multiplies stay integer (at most 2 * 127 * 16 * 128 * 127).
//
// The GPU holds Q6_K in groups of eight blocks with each field in a plane
// (quant/q6_k_groups.wgsl), so a unit's ql and qh runs are two 16-byte loads each, its
// block's scales one and its d one (a vec4 of the group's eight): six loads where GGUF's
// 2-aligned blocks took 21 words, two-word joins half the time.
const LANE_UNITS: u32 = 4u;

@group(0) @binding(1) var<storage, read> w: array<vec4<u32>>;

//!include quant/q6_k_groups.wgsl
//!include q8dot/two_blocks.wgsl

// The int8 words 4 (q - 32) of 16 elements: the ql nibbles already at bits 2..6 of each
// byte, the qh words shifted so that the pair wanted is at bits 6..8. The GPU holds qh with
// each pair's high bit flipped (quant/q6_k_groups.wgsl), so the pair placed there makes the
// byte 4 q ^ 0x80 = 4 (q - 32) as it stands: a mask and an OR a word, no flip.
fn q6_words(l: vec4<u32>, h: vec4<u32>) -> vec4<u32> {
    return (l & vec4<u32>(0x3C3C3C3Cu)) | (h & vec4<u32>(0xC0C0C0C0u));
}

// Quarter j's int8 words (a0 elements 0..16, a1 16..32), quarter j + 2's (b0, b1), their
// four scales and d.
struct UnitW {
    a0: vec4<u32>,
    a1: vec4<u32>,
    b0: vec4<u32>,
    b1: vec4<u32>,
    s: vec4<i32>,
    d: f32,
}

// Unit u = 4b + 2h + j meets input blocks 8b + 4h + j = 2u - j and that + 2.
fn unit_input(u: u32, xb: u32) -> UnitX {
    let xa = 2u * u - (u & 1u);
    return UnitX(x_block(xb, xa), x_block(xb, xa + 2u));
}

// Unit u of the row: block u / 4, half (u / 2) % 2, ql half j = u % 2. The row starts on a
// whole block of a range that starts on a group, so its blocks are numbered through the range
// by one division a row (hoisted out of the unit loop) and found by shifts (`q6_block_at`):
// no division a unit.
fn unit_weights(row_start: u32, u: u32) -> UnitW {
    let h = (u >> 1u) & 1u;
    let j = u & 1u;
    let n = row_start / 210u + (u >> 2u);
    let q = q6_block_at(n);
    // Every field but d starts on 16 bytes.
    let l = (q.ql >> 4u) + 4u * h + 2u * j;
    let hq = (q.qh >> 4u) + 2u * h;
    let ql0 = w[l];
    let ql1 = w[l + 1u];
    let qh0 = w[hq];
    let qh1 = w[hq + 1u];
    let sc = w[q.scales >> 4u];
    let dw = w[q.d >> 4u];
    // The block's place in its group.
    let k = n & 7u;
    // Quarter j: low nibbles, qh bits 2j moved to 6..8; quarter j + 2: high nibbles, bits
    // 2j + 4.
    let lo = vec4<u32>(2u);
    let ha = vec4<u32>(6u - 2u * j);
    let hb = vec4<u32>(2u - 2u * j);
    // Scales 8h + 2j, + 1 (quarter j: word 2h, 2j bytes in) and 8h + 2j + 4, + 5 (quarter
    // j + 2: word 2h + 1). Words picked by selects, not a dynamic index into the vector
    // (which a compiler may lower through memory).
    let upper = h == 1u;
    let sa = unpack4xI8(select(sc.x, sc.z, upper) >> (16u * j));
    let sb = unpack4xI8(select(sc.y, sc.w, upper) >> (16u * j));
    // d: half k % 2 of word k / 2 of the group's d plane (by selects as the scales).
    let odd = (k & 2u) != 0u;
    let dword = select(select(dw.x, dw.y, odd), select(dw.z, dw.w, odd), k > 3u);
    let d = unpack2x16float(dword >> (16u * (k & 1u))).x;
    return UnitW(
        q6_words(ql0 << lo, qh0 << ha),
        q6_words(ql1 << lo, qh1 << ha),
        q6_words(ql0 >> lo, qh0 << hb),
        q6_words(ql1 >> lo, qh1 << hb),
        vec4<i32>(sa.x, sa.y, sb.x, sb.y),
        d,
    );
}

fn unit_apply(q: UnitW, x: UnitX) -> f32 {
    let ia = q.s.x * dot16(q.a0, x.a.q0) + q.s.y * dot16(q.a1, x.a.q1);
    let ib = q.s.z * dot16(q.b0, x.b.q0) + q.s.w * dot16(q.b1, x.b.q1);
    return 0.25 * q.d * (f32(ia) * x.a.ds.x + f32(ib) * x.b.ds.x);
}
