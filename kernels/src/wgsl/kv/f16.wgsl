// The KV cache's element type, f16 (the attention kernels include `kv`; kv/f32.wgsl is the
// other): a cache word is four consecutive values of a key or value row packed as halves in
// two u32s — half the bytes of f32, as llama.cpp's default cache. Packed by hand rather than
// as `array<vec4<f16>>` so that it runs on every adapter: `pack2x16float` and
// `unpack2x16float` are core WGSL, `shader-f16` is not. Values are clamped to f16's finite
// range before packing (WGSL leaves an out-of-range pack indeterminate).
alias KvWord = vec2<u32>;

// A cache word's four values.
fn kv_load(w: KvWord) -> vec4<f32> {
    return vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y));
}

// Four values as a cache word.
fn kv_word(x: vec4<f32>) -> KvWord {
    let c = clamp(x, vec4<f32>(-65504.0), vec4<f32>(65504.0));
    return vec2<u32>(pack2x16float(c.xy), pack2x16float(c.zw));
}

// A value as the cache holds it (what a later read of it returns).
fn kv_round(x: f32) -> f32 {
    return unpack2x16float(pack2x16float(vec2<f32>(clamp(x, -65504.0, 65504.0), 0.0))).x;
}
