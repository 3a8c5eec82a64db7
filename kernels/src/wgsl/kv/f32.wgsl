// The KV cache's element type, f32 (the attention kernels include `kv`; kv/f16.wgsl is the
// other): a cache word is a vec4 of four consecutive values of a key or value row.
alias KvWord = vec4<f32>;

// A cache word's four values.
fn kv_load(w: KvWord) -> vec4<f32> {
    return w;
}

// Four values as a cache word.
fn kv_word(x: vec4<f32>) -> KvWord {
    return x;
}

// A value as the cache holds it (what a later read of it returns).
fn kv_round(x: f32) -> f32 {
    return x;
}
