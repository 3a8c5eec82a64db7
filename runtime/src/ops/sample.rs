//! The GPU sampler launch (`gpuport_kernels::sample`).

use gpuport_kernels::sample;

use super::{elems, launch};
use crate::device::Gpu;
use crate::error::GpuError;
use crate::recorder::Recorder;
use crate::tensor::Tensor;

/// One token sampled from `logits` (modified in place by the penalty): the id goes to
/// `tokens[p.out_index]` and `out[0]`, with the count of tokens that kept a probability in
/// `out[1]`; `probs` is `[vocab]` f32 scratch, `part` the stages' partials and state
/// ([`gpuport_kernels::sample::scratch_words`] u32); the ids to penalize are
/// `tokens[p.recent_start..][..p.n_recent]`. Records the chain of stages `p` needs
/// ([`gpuport_kernels::sample::stages`]: 2 dispatches greedy, 12 with top-p, 20 with top-k
/// too, one more with a penalty).
#[derive(Clone, Copy)]
pub struct Sample<'a> {
    /// The sampling parameters (vocabulary, where the id goes, the penalty window, seed).
    pub p: sample::SampleParams,
    /// The logits (`[vocab]` f32; the penalty modifies them).
    pub logits: &'a Tensor,
    /// `[vocab]` f32 scratch.
    pub probs: &'a Tensor,
    /// The token buffer: penalized ids are read from it and the sampled id written to it.
    pub tokens: &'a Tensor,
    /// The id and the kept count (at least 2 u32).
    pub out: &'a Tensor,
    /// The stages' partials and state.
    pub part: &'a Tensor,
}

/// Records a [`Sample`].
pub fn sample(gpu: &Gpu, rec: &mut Recorder<'_>, call: Sample<'_>) -> Result<(), GpuError> {
    let Sample {
        p,
        logits,
        probs,
        tokens,
        out,
        part,
    } = call;
    let v = p.vocab as usize;
    let slices = v.div_ceil(sample::SLICE) as u32;
    if elems(logits) != v
        || elems(probs) < v
        || elems(part) < sample::scratch_words(v)
        || elems(tokens) < p.recent_start as usize + p.n_recent as usize
        || elems(tokens) <= p.out_index as usize
        || elems(out) < 2
        || v == 0
        || slices > gpu.limits().max_compute_workgroups_per_dimension
    {
        return Err(GpuError::Shape(format!(
            "sampling {p:?} with logits {:?}, scratch {:?} and tokens {:?}",
            logits.shape, part.shape, tokens.shape
        )));
    }
    for (stage, round) in sample::stages(&p) {
        let groups = if stage.per_slice() { slices } else { 1 };
        let params = sample::SampleParams { round, ..p };
        launch(
            gpu,
            rec,
            &sample::spec(stage),
            &params,
            &[logits, probs, tokens, out, part],
            (groups, 1),
        )?;
    }
    Ok(())
}
