// The 6-bit scale and min of sub-block j (0..8) of a Q4_K/Q5_K block whose 12 scale bytes start
// at byte s (4-aligned): bytes 0..4 hold scales (low 6 bits), 4..8 mins (low 6 bits), 8..12 the
// 4 low bits of scale/min 4..8; the top 2 bits of bytes 0..8 are the high bits of 4..8.
fn k_scale_min(s: u32, j: u32) -> vec2<f32> {
    return k_scale_min_words(w[s >> 2u], w[(s >> 2u) + 1u], w[(s >> 2u) + 2u], j);
}

// `k_scale_min` from the three scale words: a (bytes 0..4), m (4..8), hi (8..12). Both forms
// are computed and one selected: a branch here would keep the driver from issuing the next
// step's loads before this one's are used.
fn k_scale_min_words(a: u32, m: u32, hi: u32, j: u32) -> vec2<f32> {
    let sh = 8u * (j & 3u);
    let am = vec2<u32>(a >> sh, m >> sh);
    let h = (hi >> sh) & 0xFFu;
    let high = vec2<u32>(h & 0xFu, h >> 4u) | (((am >> vec2<u32>(6u)) & vec2<u32>(3u)) << vec2<u32>(4u));
    return vec2<f32>(select(high, am & vec2<u32>(63u), j < 4u));
}
