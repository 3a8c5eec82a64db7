// Q4_K (144 bytes per 256 elements: f16 d, f16 dmin, 12 bytes of 6-bit scales and mins, 128
// bytes of nibbles; chunk c of 32 bytes holds sub-block 2c in its low nibbles, 2c + 1 in its
// high ones): a unit is a chunk, 64 elements, two 16-byte loads (blocks are 9 vec4s, so
// whole-vec4 loads). Nibbles are int8 as they stand (0..15).
const LANE_UNITS: u32 = 4u;

@group(0) @binding(1) var<storage, read> w: array<vec4<u32>>;

//!include q8dot/k_unit.wgsl

// Chunk c = u % 4 of block u / 4 of the row.
fn unit_weights(row_start: u32, u: u32) -> UnitW {
    let b = u >> 2u;
    let c = u & 3u;
    let at = (row_start >> 4u) + 9u * b;
    let hd = w[at];
    let q0 = w[at + 1u + 2u * c];
    let q1 = w[at + 2u + 2u * c];
    let m = vec4<u32>(0x0F0F0F0Fu);
    let s = vec4<u32>(4u);
    return UnitW(q0 & m, q1 & m, (q0 >> s) & m, (q1 >> s) & m, k_pairs(hd, c), unpack2x16float(hd.x));
}
