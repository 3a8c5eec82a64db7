// The uniform block shared by both passes of split decode attention.
struct Params {
    heads: u32,
    kv_heads: u32,
    head_dim: u32,
    n_keys: u32,
    max_ctx: u32,
    window: u32,   // 0: attend to every key
    scale: f32,
    cap: f32,      // 0: no soft cap
    blocks: u32,   // key blocks per head (grid y of the first pass)
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}
