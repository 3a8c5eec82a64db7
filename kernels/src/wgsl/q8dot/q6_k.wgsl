// Q6_K (210 bytes per 256 elements: 128 bytes ql, 64 bytes qh, 16 int8 scales, f16 d; half h
// of 128 elements uses ql[64h..], qh[32h..], scales[8h..], and element 32 k + l of it, k < 4,
// takes nibble k / 2 of ql[64h + 32 (k % 2) + l], bits 2k of qh[32h + l], scale
// 8h + 2k + l / 16; value d * scale * (q - 32)): a unit is 32 bytes of ql, whose two nibbles
// are quarters j and j + 2 of a half (64 elements), with the half's 32 qh bytes.
//
// The offset is folded into the quants: a 6-bit q placed in the top of a byte, its top bit
// flipped, is the int8 4 (q - 32) (q * 4 - 128), with the same masks and shifts that would
// put q at the bottom; d / 4 undoes the factor exactly. That keeps one dot4I8Packed per four
// elements (subtracting 32 * sum(qx) instead would need a second one per word: the scales
// are per 16 elements, the input block's sum per 32). The scale multiplies stay integer (at
// most 2 * 127 * 16 * 128 * 127).
//
// Blocks are 2-byte aligned: where a row has an even number of them (every Llama shape),
// neighbouring blocks alternate between starting on a word and 2 bytes into one, and a load
// of one that starts 2 bytes in is put together from the halves of two words. The kernels'
// lanes take consecutive units, so the units are numbered in parity order (`q6_unit`): in
// each run of 16 blocks (64 units) the even blocks' units first, then the odd blocks' — the
// 32 lanes of a subgroup then take blocks of one alignment together, and the halves' shifts
// sit in a branch that the whole subgroup takes or skips (the loads stay outside it). Any
// numbering gives the same units, so the sums are the same wherever it does not hold.
const LANE_UNITS: u32 = 4u;

@group(0) @binding(1) var<storage, read> w: array<u32>;

//!include q8dot/two_blocks.wgsl

struct Words8 {
    lo: vec4<u32>,
    hi: vec4<u32>,
}

// The 32 bytes at byte `at` (2-aligned) of `w`: nine word loads, written out (a private array
// would be spilled by some compilers), all issued before the branch that joins halves where
// `at` is 2 bytes into a word (a load inside a branch would wait out its latency there).
fn load32(at: u32) -> Words8 {
    let i = at >> 2u;
    let a = vec4<u32>(w[i], w[i + 1u], w[i + 2u], w[i + 3u]);
    let b = vec4<u32>(w[i + 4u], w[i + 5u], w[i + 6u], w[i + 7u]);
    let e = w[i + 8u];
    if (at & 2u) == 0u {
        return Words8(a, b);
    }
    let s = vec4<u32>(16u);
    let a2 = (a >> s) | (vec4<u32>(a.y, a.z, a.w, b.x) << s);
    let b2 = (b >> s) | (vec4<u32>(b.y, b.z, b.w, e) << s);
    return Words8(a2, b2);
}

// Unit `u` of a row in parity order: in the run of 16 blocks (64 units) that holds it — or the
// m blocks left at a row's end — the units of the even blocks first, then the odd blocks'.
// (`q8_row_units`, from the including kernel: units in a row.)
fn q6_unit(u: u32) -> u32 {
    let g = u / 64u;
    let local = u % 64u;
    let m = min(16u, q8_row_units() / 4u - 16u * g);
    let evens = 4u * ((m + 1u) / 2u);
    let odd = select(0u, 1u, local >= evens);
    let k = local - odd * evens;
    return 64u * g + 4u * (2u * (k / 4u) + odd) + k % 4u;
}

// The 16 bits at byte `at` (2-aligned) of `w`, in the low half.
fn load16(at: u32) -> u32 {
    return w[at >> 2u] >> (8u * (at & 2u));
}

// The int8 words 4 (q - 32) of 16 elements: the ql nibbles already at bits 2..6 of each
// byte, the qh words shifted so that the pair wanted is at bits 6..8.
fn q6_words(l: vec4<u32>, h: vec4<u32>) -> vec4<u32> {
    return ((l & vec4<u32>(0x3C3C3C3Cu)) | (h & vec4<u32>(0xC0C0C0C0u))) ^ vec4<u32>(0x80808080u);
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

// Unit u (in parity order: v = q6_unit(u) = 4b + 2h + j) meets input blocks 8b + 4h + j =
// 2v - j and that + 2.
fn unit_input(u: u32, xb: u32) -> UnitX {
    let v = q6_unit(u);
    let xa = 2u * v - (v & 1u);
    return UnitX(x_block(xb, xa), x_block(xb, xa + 2u));
}

// Unit u of the row (in parity order: v = q6_unit(u)): block v / 4, half (v / 2) % 2, ql
// half j = v % 2.
fn unit_weights(row_start: u32, u: u32) -> UnitW {
    let v = q6_unit(u);
    let b = v >> 2u;
    let h = (v >> 1u) & 1u;
    let j = v & 1u;
    let at = row_start + 210u * b;
    let ql = load32(at + 64u * h + 32u * j);
    let qh = load32(at + 128u + 32u * h);
    // Quarter j: low nibbles, qh bits 2j moved to 6..8; quarter j + 2: high nibbles, bits
    // 2j + 4.
    let lo = vec4<u32>(2u);
    let ha = vec4<u32>(6u - 2u * j);
    let hb = vec4<u32>(2u - 2u * j);
    // Scales 8h + 2j, + 1 (quarter j) and 8h + 2j + 4, + 5 (quarter j + 2).
    let sat = at + 192u + 8u * h + 2u * j;
    let sa = unpack4xI8(load16(sat));
    let sb = unpack4xI8(load16(sat + 4u));
    let d = unpack2x16float(load16(at + 208u)).x;
    return UnitW(
        q6_words(ql.lo << lo, qh.lo << ha),
        q6_words(ql.hi << lo, qh.hi << ha),
        q6_words(ql.lo >> lo, qh.lo << hb),
        q6_words(ql.hi >> lo, qh.hi << hb),
        vec4<i32>(sa.x, sa.y, sb.x, sb.y),
        d,
    );
}

fn unit_apply(q: UnitW, x: UnitX) -> f32 {
    let ia = q.s.x * dot16(q.a0, x.a.q0) + q.s.y * dot16(q.a1, x.a.q1);
    let ib = q.s.z * dot16(q.b0, x.b.q0) + q.s.w * dot16(q.b1, x.b.q1);
    return 0.25 * q.d * (f32(ia) * x.a.ds.x + f32(ib) * x.b.ds.x);
}
