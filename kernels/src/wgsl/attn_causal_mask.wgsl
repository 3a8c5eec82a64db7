// The causal mask and score of the tiled prefill passes (attn_tiles.wgsl, attn_coop.wgsl).

// Row r's first key (a sliding window moves it) and position.
fn first_key(pos: u32) -> u32 {
    if p.window > 0u && pos + 1u > p.window {
        return pos + 1u - p.window;
    }
    return 0u;
}

// Key j's score for the row at position `pos`: scaled and optionally soft-capped, or -3e38
// (no weight) outside the row's keys [first, pos] (rows past the batch: positions past the
// last key, whose outputs are not written).
fn score(dot_: f32, pos: u32, j: u32) -> f32 {
    if j > pos || j < first_key(pos) || j >= p.n_keys {
        return -3.0e38;
    }
    var sc = dot_ * p.scale;
    if p.cap > 0.0 {
        sc = p.cap * tanh(clamp(sc / p.cap, -15.0, 15.0));
    }
    return sc;
}
