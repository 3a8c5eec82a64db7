// The KV cache's element type, f16 (the attention kernels include `kv`; kv/f32.wgsl is the
// other): a cache word is four consecutive values of a key or value row packed as halves in
// two u32s — half the bytes of f32, as llama.cpp's default cache. Packed by hand rather than
// as `array<vec4<f16>>` so that it runs on every adapter: `pack2x16float` and
// `unpack2x16float` are core WGSL, `shader-f16` is not. Values are rounded and clamped to
// f16's finite range before packing (WGSL leaves an out-of-range pack indeterminate).
alias KvWord = vec2<u32>;

// `x` rounded to the nearest f16 (ties to even), clamped to f16's finite range: by integer
// operations on its bits, and below f16's normal range (step 2^-24) by exact scaling, not as
// `unpack2x16float(pack2x16float(x))`: NVIDIA's compiler folds that pair to `x` (the H100's
// decode then summed a new value unrounded while the cache held it rounded, v37), and WGSL
// lets `pack2x16float` round either way. f16 subnormals are kept (as `half` and llama.cpp
// keep them); a driver that flushed them in `pack2x16float` would store 0 where this returns
// a value below 6.1e-5.
fn f16_round(x: f32) -> f32 {
    let c = clamp(x, -65504.0, 65504.0);
    let tiny = round(c * 16777216.0) * (1.0 / 16777216.0);
    let b = bitcast<u32>(c);
    let r = (b + 0xFFFu + ((b >> 13u) & 1u)) & 0xFFFFE000u;
    return select(bitcast<f32>(r), tiny, abs(c) < 6.103515625e-5);
}

// A cache word's four values.
fn kv_load(w: KvWord) -> vec4<f32> {
    return vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y));
}

// Four values as a cache word: each rounded by `f16_round` first, so the pack is exact
// whichever way an adapter's `pack2x16float` rounds.
fn kv_word(x: vec4<f32>) -> KvWord {
    let r = vec4<f32>(f16_round(x.x), f16_round(x.y), f16_round(x.z), f16_round(x.w));
    return vec2<u32>(pack2x16float(r.xy), pack2x16float(r.zw));
}

// A value as the cache holds it (what a later read of it returns).
fn kv_round(x: f32) -> f32 {
    return f16_round(x);
}
