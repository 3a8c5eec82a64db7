// The tensor-core GEMM's weight step (gemm_coop.wgsl) for types without a faster form: the
// quant snippet's `step_weights`.
fn coop_step(b: u32, s: u32, k: u32) -> StepW {
    return step_weights(b, s, k);
}
