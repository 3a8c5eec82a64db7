// What the tiled prefill passes (attn_tiles.wgsl, attn_coop.wgsl) share: the causal mask and
// score, a tile's query rows, and its output rows. The including kernel declares HD, HD4, BR
// and the bindings of attn_causal_io.wgsl.

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

// Vec4 d of row r of the tile of rows t0.. (`rows` of them) of query head h; zeros past the
// batch.
fn tile_query(t0: u32, rows: u32, h: u32, r: u32, d: u32) -> vec4<f32> {
    var val = vec4<f32>(0.0);
    if r < rows {
        val = q[((t0 + r) * p.heads + h) * HD4 + d];
    }
    return val;
}

// A thread's outputs O / l: rows rp (a) and rp + BR / 2 (b) of the tile of rows t0.. of head
// h, vec4 columns cp and cp + HD / 8; rows past the batch are not written.
fn store_rows(t0: u32, rows: u32, h: u32, rp: u32, cp: u32, oa: mat2x4<f32>, ob: mat2x4<f32>, la: f32, lb: f32) {
    let width = p.heads * HD4;
    if rp < rows {
        let base = (t0 + rp) * width + h * HD4;
        let inv = 1.0 / la;
        out[base + cp] = oa[0] * inv;
        out[base + cp + HD / 8u] = oa[1] * inv;
    }
    if rp + BR / 2u < rows {
        let base = (t0 + rp + BR / 2u) * width + h * HD4;
        let inv = 1.0 / lb;
        out[base + cp] = ob[0] * inv;
        out[base + cp + HD / 8u] = ob[1] * inv;
    }
}
