// The output of the row passes (attn_prefill.wgsl, attn_rows_sg.wgsl) for query head h of row
// t at vec4 column c: o / l into [tokens, heads · head_dim], or, split (p.split_keys > 0),
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
