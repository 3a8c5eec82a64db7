// The uniform block of the attention kernels: both passes of split decode attention and the
// two prefill passes (preparation, causal attention).
struct Params {
    heads: u32,
    kv_heads: u32,
    head_dim: u32,
    n_keys: u32,    // cache positions attended to; the last one is the new token's
    max_ctx: u32,
    window: u32,    // 0: attend to every key
    scale: f32,
    cap: f32,       // 0: no soft cap
    blocks: u32,    // key blocks per head (grid y of the first pass)
    q_src: u32,     // element offsets of the new token's q, k, v in `qkv`
    k_src: u32,
    v_src: u32,
    rot_dims: u32,  // RoPE: rotated elements per head (even, at most head_dim)
    rope_base: f32,
    freq_scale: f32,
    norm: u32,      // per-head q/k RMSNorm: 0 none, 1 by w, 2 by (1 + w)
    eps: f32,
    tokens: u32,    // prefill: tokens in the batch, at positions n_keys - tokens ..
    qkv_stride: u32,// prefill: elements between consecutive tokens' rows of `qkv`
    page: u32,      // positions per page of the paged KV cache (a multiple of 64)
    row_table: u32, // prefill passes: 1 = token t's position and page-table base are
                    // rows[4 (rows_first + t)], rows[4 (rows_first + t) + 1] (rows of several
                    // sequences in one batch); 0 = position n_keys - tokens + t, base 0
    rows_first: u32,
    split_keys: u32,// prefill causal pass with a row table: keys per split (workgroup z takes
                    // keys z * split_keys .. of its row and writes a partial for
                    // attn_combine.wgsl, `blocks` splits per row); 0: no split
    group: u32,     // per-row causal pass: query heads per workgroup (a divisor of heads /
                    // kv_heads; attention::row_group)
}

// Floats per (head, key block) in `part`: the block's value sum (head_dim), then m and l, then
// two unused so that every block starts on a vec4 (the GEMV that folds the combine in reads
// `part` as vec4s; `attention::part_stride` on the Rust side).
fn part_stride() -> u32 {
    return p.head_dim + 4u;
}
