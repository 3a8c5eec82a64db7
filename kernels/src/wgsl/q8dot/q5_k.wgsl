// Q5_K (176 bytes per 256 elements: Q4_K's header, 32 bytes qh, 128 bytes of nibbles; bit s
// of qh[l] is the 5th bit of element 32 s + l): a unit is a chunk of nibbles as for Q4_K,
// 64 elements, with the 32 qh bytes every chunk of the block shares (blocks are 11 vec4s).
// The 5th bits go to bit 4 of each byte: quants 0..31, int8 as they stand.
const LANE_UNITS: u32 = 4u;

@group(0) @binding(1) var<storage, read> w: array<vec4<u32>>;

//!include q8dot/k_unit.wgsl

// Chunk c = u % 4 of block u / 4 of the row (sub-blocks 2c, 2c + 1: qh bits 2c, 2c + 1).
fn unit_weights(row_start: u32, u: u32) -> UnitW {
    let b = u >> 2u;
    let c = u & 3u;
    let at = (row_start >> 4u) + 11u * b;
    let hd = w[at];
    let h0 = w[at + 1u] >> vec4<u32>(2u * c);
    let h1 = w[at + 2u] >> vec4<u32>(2u * c);
    let q0 = w[at + 3u + 2u * c];
    let q1 = w[at + 4u + 2u * c];
    let m = vec4<u32>(0x0F0F0F0Fu);
    let b4 = vec4<u32>(0x10101010u);
    let s = vec4<u32>(4u);
    let a0 = (q0 & m) | ((h0 << s) & b4);
    let a1 = (q1 & m) | ((h1 << s) & b4);
    let b0 = ((q0 >> s) & m) | ((h0 << vec4<u32>(3u)) & b4);
    let b1 = ((q1 >> s) & m) | ((h1 << vec4<u32>(3u)) & b4);
    return UnitW(a0, a1, b0, b1, k_pairs(hd, c), unpack2x16float(hd.x));
}
