// The tensor-core GEMM's weights (gemm_coop.wgsl) for types without a form of their own: the
// quant snippet's `step_weights`, a step at a time, decoded when fetched.
fn coop_step(b: u32, s: u32, k: u32) -> StepW {
    return step_weights(b, s, k);
}

alias WShare = StepShare;

fn coop_fetch_weights(c: u32, n0: u32, lid: u32) -> WShare {
    return fetch_steps(c, n0, lid);
}

fn coop_publish_weights(r: WShare, c: u32, wbase: u32, lid: u32, keep: bool) {
    publish_steps(r, c, wbase, lid, keep);
}
