// Q6_K as the GPU holds it (quant.rs, `gpu_layout`): the GGUF blocks (128 bytes ql, 64 qh, 16
// int8 scales, f16 d) in groups of eight, numbered through the whole tensor, each group's
// fields in planes — the eight blocks' ql, then their qh, scales and d (1,680 bytes, a
// multiple of 16). Kernels keep a block's GGUF byte offset b (from the start of the bound
// range, which starts on a group): block n = b / 210 is block n % 8 of group n / 8. Every
// field's run starts on 16 bytes but d's (2k bytes into its plane). Every qh byte is held XOR
// 0xAA (`quant::Q6K_QH_FLIP`): each 2-bit field's high bit flipped, so the int8 kernels read
// 4 (q - 32) without a flip of their own (q8dot/q6_k.wgsl); `qh_bits` gives GGUF's back.

// Byte offsets of one block's fields.
struct Q6Block {
    ql: u32,
    qh: u32,
    scales: u32,
    d: u32,
}

// Block n of the range (its GGUF offset 210 n): block k = n % 8 of group n / 8.
fn q6_block_at(n: u32) -> Q6Block {
    let g = 1680u * (n >> 3u);
    let k = n & 7u;
    return Q6Block(g + 128u * k, g + 1024u + 64u * k, g + 1536u + 16u * k, g + 1664u + 2u * k);
}

// The block at GGUF offset `b` (a multiple of 210).
fn q6_block(b: u32) -> Q6Block {
    return q6_block_at(b / 210u);
}

// Four qh bytes as GGUF holds them, from the flipped form the GPU holds (above).
fn qh_bits(held: u32) -> u32 {
    return held ^ 0xAAAAAAAAu;
}
