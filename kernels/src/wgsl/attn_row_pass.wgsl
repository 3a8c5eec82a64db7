// What the row passes (attn_prefill.wgsl, attn_rows_sg.wgsl) share: the keys a workgroup of
// row t walks, and where its output goes.

// Row t's position and page-table base (`batch_row`) and the keys [lo, hi] split z walks: all
// of [first, pos] unsplit (first = pos + 1 - window with a sliding window), or, with
// p.split_keys > 0, split z's part of them (empty when lo > hi).
struct RowKeys {
    pos: u32,
    base: u32,
    lo: u32,
    hi: u32,
}

fn row_keys(t: u32, z: u32) -> RowKeys {
    let at = batch_row(t);
    let pos = at.x;
    var first = 0u;
    if p.window > 0u && pos + 1u > p.window {
        first = pos + 1u - p.window;
    }
    var lo = first;
    var hi = pos;
    if p.split_keys > 0u {
        lo = max(first, z * p.split_keys);
        hi = min(pos, z * p.split_keys + p.split_keys - 1u);
    }
    return RowKeys(pos, at.y, lo, hi);
}

// The output for query head h of row t at vec4 column c: o / l into [tokens, heads · head_dim], or, split (p.split_keys > 0),
// split z's partial — o unnormalized, then (m, l, 0, 0) — at ((t · heads + h) · blocks + z) ·
// (HD4 + 1), the layout attn_combine.wgsl adds up over (row, head) pairs. A split with no keys
// writes m = -3e38, l = 0, o = 0, which the combine weighs as zero.
fn store_row_out(o: vec4<f32>, m: f32, l: f32, t: u32, h: u32, c: u32, z: u32) {
    if p.split_keys > 0u {
        let at = ((t * p.heads + h) * p.blocks + z) * (HD4 + 1u);
        out[at + c] = o;
        if c == 0u {
            out[at + HD4] = vec4<f32>(m, l, 0.0, 0.0);
        }
    } else {
        out[(t * p.heads + h) * HD4 + c] = o / l;
    }
}
