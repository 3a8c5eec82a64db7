// Q4_K (144 bytes per 256 elements: f16 d, f16 dmin, 12 bytes of 6-bit scales and mins, 128
// bytes of nibbles; chunk c of 32 bytes holds sub-block 2c in its low nibbles, 2c + 1 in its
// high ones): a unit is a chunk, 64 elements, two 16-byte loads (blocks are 9 vec4s, so
// whole-vec4 loads). Nibbles are int8 as they stand (0..15); a sub-block sums to
// d * sc * dx * sum(q * qx) - dmin * m * (dx * sum(qx)), the last factor the input block's
// word 9, so the min costs one multiply-add per 32 elements.
const LANE_UNITS: u32 = 4u;

@group(0) @binding(1) var<storage, read> w: array<vec4<u32>>;

//!include q8dot/k_pairs.wgsl

// Chunk c = u % 4 of block u / 4 of the row. sc * sum stays integer (at most 63 * 32 * 15 *
// 127).
fn unit_dot(row_start: u32, u: u32) -> f32 {
    let b = u >> 2u;
    let c = u & 3u;
    let at = (row_start >> 4u) + 9u * b;
    let hd = w[at];
    let q0 = w[at + 1u + 2u * c];
    let q1 = w[at + 2u + 2u * c];
    let sm = k_pairs(hd, c);
    let dd = unpack2x16float(hd.x);
    let m = vec4<u32>(0x0F0F0F0Fu);
    let xa = 8u * b + 2u * c;
    let sa = dot16(q0 & m, x_q0(xa)) + dot16(q1 & m, x_q1(xa));
    let sb = dot16((q0 >> vec4<u32>(4u)) & m, x_q0(xa + 1u)) + dot16((q1 >> vec4<u32>(4u)) & m, x_q1(xa + 1u));
    let da = x_ds(xa);
    let db = x_ds(xa + 1u);
    let scaled = f32(i32(sm.x) * sa) * da.x + f32(i32(sm.y) * sb) * db.x;
    let mins = f32(sm.z) * da.y + f32(sm.w) * db.y;
    return dd.x * scaled - dd.y * mins;
}
