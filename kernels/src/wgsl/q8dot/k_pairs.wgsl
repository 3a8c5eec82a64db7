// The 6-bit scales and mins of a Q4_K/Q5_K block for the int8-input GEMV.

// (sc, sc, mn, mn) of sub-blocks 2c and 2c + 1 from the block's first vec4 (f16 d and dmin,
// then the 12 scale bytes): word y holds scales 0..4 in its bytes' low 6 bits, z mins 0..4,
// w the low 4 bits of scales (low nibbles) and mins (high nibbles) 4..8, whose top 2 bits are
// the top 2 bits of y's and z's bytes. Each word yields four of a kind at once (masks
// and shifts on the packed bytes); the pair is picked after.
fn k_pairs(hd: vec4<u32>, c: u32) -> vec4<u32> {
    let low = c < 2u;
    let sc4 = select((hd.w & 0x0F0F0F0Fu) | ((hd.y >> 2u) & 0x30303030u), hd.y & 0x3F3F3F3Fu, low);
    let mn4 = select(((hd.w >> 4u) & 0x0F0F0F0Fu) | ((hd.z >> 2u) & 0x30303030u), hd.z & 0x3F3F3F3Fu, low);
    let sh = 16u * (c & 1u);
    let sc = sc4 >> sh;
    let mn = mn4 >> sh;
    return vec4<u32>(sc & 0xFFu, (sc >> 8u) & 0xFFu, mn & 0xFFu, (mn >> 8u) & 0xFFu);
}
