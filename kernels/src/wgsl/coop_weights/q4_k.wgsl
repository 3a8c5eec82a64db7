// The tensor-core GEMM's Q4_K weight step (gemm_coop.wgsl): the block's 16-byte head (d|dmin,
// then the 12 scale bytes) as one vec4 load from `w4` (blocks are 144 bytes, so 16-aligned
// wherever a matrix starts on a binding), then `step_weights_head`. Four scalar loads became
// one (docs/performance.md, v33: the Llama-8B gate|up at 64 rows 10% faster on the H200).
fn coop_step(b: u32, s: u32, k: u32) -> StepW {
    return step_weights_head(w4[b >> 4u], w[(b >> 2u) + 4u + 8u * (s >> 1u) + k], s);
}
