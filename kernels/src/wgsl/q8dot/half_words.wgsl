// Blocks whose size is 2 mod 4 bytes (Q4_0 18, Q5_0 22, Q8_0 34) start on a word or 2 bytes
// into one, alternately along a row. A block's 4-byte fields after its f16 d are then either
// whole words (`odd`: the block starts 2 bytes in) or two halves of neighbouring words; taking
// them branch-free keeps neighbouring lanes, which alternate, together.

// Field word i after the block's d, from the block's words i and i + 1.
fn quant_word(a: u32, b: u32, odd: bool) -> u32 {
    return select((a >> 16u) | (b << 16u), b, odd);
}
