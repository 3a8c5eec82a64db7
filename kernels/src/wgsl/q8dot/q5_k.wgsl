// Q5_K (176 bytes per 256 elements: Q4_K's header, 32 bytes qh, 128 bytes of nibbles; bit s
// of qh[l] is the 5th bit of element 32 s + l): a unit is a chunk of nibbles as for Q4_K,
// 64 elements, with the 32 qh bytes every chunk of the block shares (blocks are 11 vec4s).
// The 5th bits go to bit 4 of each byte: quants 0..31, int8 as they stand.
const LANE_UNITS: u32 = 4u;

@group(0) @binding(1) var<storage, read> w: array<vec4<u32>>;

//!include q8dot/k_pairs.wgsl

// Chunk c = u % 4 of block u / 4 of the row (sub-blocks 2c, 2c + 1: qh bits 2c, 2c + 1).
fn unit_dot(row_start: u32, u: u32) -> f32 {
    let b = u >> 2u;
    let c = u & 3u;
    let at = (row_start >> 4u) + 11u * b;
    let hd = w[at];
    let h0 = w[at + 1u] >> vec4<u32>(2u * c);
    let h1 = w[at + 2u] >> vec4<u32>(2u * c);
    let q0 = w[at + 3u + 2u * c];
    let q1 = w[at + 4u + 2u * c];
    let sm = k_pairs(hd, c);
    let dd = unpack2x16float(hd.x);
    let m = vec4<u32>(0x0F0F0F0Fu);
    let b4 = vec4<u32>(0x10101010u);
    let xa = 8u * b + 2u * c;
    let sa = dot16((q0 & m) | ((h0 << vec4<u32>(4u)) & b4), x_q0(xa))
        + dot16((q1 & m) | ((h1 << vec4<u32>(4u)) & b4), x_q1(xa));
    let sb = dot16(((q0 >> vec4<u32>(4u)) & m) | ((h0 << vec4<u32>(3u)) & b4), x_q0(xa + 1u))
        + dot16(((q1 >> vec4<u32>(4u)) & m) | ((h1 << vec4<u32>(3u)) & b4), x_q1(xa + 1u));
    let da = x_ds(xa);
    let db = x_ds(xa + 1u);
    let scaled = f32(i32(sm.x) * sa) * da.x + f32(i32(sm.y) * sb) * db.x;
    let mins = f32(sm.z) * da.y + f32(sm.w) * db.y;
    return dd.x * scaled - dd.y * mins;
}
