// The 5th bits of Q5_0/Q5_1 for the int8-input GEMV.

// Bits `at`..`at` + 16 of qh (bit e belongs to element e of the block) spread one per byte,
// to bit `to` of byte k of word n for bit at + 4n + k: a nibble times a constant with one
// bit per byte copies bit k to byte k, the shifted copies never overlapping (no carries),
// where shifting each bit apart would take four shifts and masks per word.
fn qh_bytes(qh: u32, at: u32, to: u32) -> vec4<u32> {
    let n = (vec4<u32>(qh >> at) >> vec4<u32>(0u, 4u, 8u, 12u)) & vec4<u32>(0xFu);
    return (n * vec4<u32>(0x00204081u << to)) & vec4<u32>(0x01010101u << to);
}
