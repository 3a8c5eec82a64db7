// Byte-level readers over the packed weight words `w` (array<u32>). GGUF blocks are byte
// aligned (Q4_0 is 18 bytes), so a block may start on any even byte; every field read here is
// at least 2-byte aligned.

fn w_u16(off: u32) -> u32 {
    return (w[off >> 2u] >> ((off & 2u) * 8u)) & 0xFFFFu;
}

fn w_f16(off: u32) -> f32 {
    return unpack2x16float(w_u16(off)).x;
}

fn w_u8(off: u32) -> u32 {
    return (w[off >> 2u] >> ((off & 3u) * 8u)) & 0xFFu;
}

// A 32-bit word starting at a 2-aligned byte offset. Branch-free: blocks of 18, 22 or 34
// bytes alternate between aligned and unaligned starts, so neighbouring lanes would otherwise
// diverge. The second word is clamped to the binding (its bits are shifted out when aligned).
fn w_u32(off: u32) -> u32 {
    let i = off >> 2u;
    let sh = (off & 3u) * 8u;
    let next = w[min(i + 1u, arrayLength(&w) - 1u)];
    return (w[i] >> sh) | ((next << (31u - sh)) << 1u);
}

// The four bytes of `v` as lanes, zero-extended.
fn bytes4(v: u32) -> vec4<u32> {
    return vec4<u32>(v, v >> 8u, v >> 16u, v >> 24u) & vec4<u32>(0xFFu);
}

// INT_BITS 1: `small_f32` through the bits (gemm::CoopDecode::Bits); 0: by conversion.
override INT_BITS: u32 = 0u;

// The f32 values of `n` (each below 2^23) less `less` (a small integer), exactly either way.
// INT_BITS 1: `n | 0x4B000000` is the f32 2^23 + n, so one OR and one subtraction (of
// 2^23 + less) where a conversion runs on NVIDIA's conversion units at a quarter of the
// arithmetic's rate or less (docs/design/coop-gemm.md, "Decoding").
fn small_f32(n: vec4<u32>, less: f32) -> vec4<f32> {
    if INT_BITS == 1u {
        return bitcast<vec4<f32>>(n | vec4<u32>(0x4B000000u)) - vec4<f32>(8388608.0 + less);
    }
    return vec4<f32>(n) - vec4<f32>(less);
}

// The four bytes of `v` as lanes, sign-extended.
fn sbytes4(v: u32) -> vec4<i32> {
    let s = bitcast<i32>(v);
    return vec4<i32>((s << 24u) >> 24u, (s << 16u) >> 24u, (s << 8u) >> 24u, s >> 24u);
}

// One step of a quant snippet dequantized (`step_weights(b, s, k)`, the weights `step_dot`
// multiplies): `a` the 4 values for the step's first 4 x values, `b` the 4 for the x values XB
// vec4s further on (zero where XB is 0). A kernel that multiplies one weight step into several
// input rows decodes it once through this.
struct StepW {
    a: vec4<f32>,
    b: vec4<f32>,
}
