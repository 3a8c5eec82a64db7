// The 6-bit scale and min of sub-block j (0..8) of a Q4_K/Q5_K block whose 12 scale bytes start
// at byte s (4-aligned): bytes 0..4 hold scales (low 6 bits), 4..8 mins (low 6 bits), 8..12 the
// 4 low bits of scale/min 4..8; the top 2 bits of bytes 0..8 are the high bits of 4..8.
fn k_scale_min(s: u32, j: u32) -> vec2<f32> {
    let a = w[s >> 2u];
    let m = w[(s >> 2u) + 1u];
    let hi = w[(s >> 2u) + 2u];
    if j < 4u {
        let sh = 8u * j;
        return vec2<f32>(f32((a >> sh) & 63u), f32((m >> sh) & 63u));
    }
    let sh = 8u * (j - 4u);
    let h = (hi >> sh) & 0xFFu;
    let sc = (h & 0xFu) | ((((a >> sh) >> 6u) & 3u) << 4u);
    let mn = (h >> 4u) | ((((m >> sh) >> 6u) & 3u) << 4u);
    return vec2<f32>(f32(sc), f32(mn));
}
