//! A generation session: the KV cache, the GPU token sequence, and the decode loop — K steps
//! recorded per submit with sampling on the GPU, one readback per K, stop tokens honoured
//! exactly, and the cache kept across calls so a prompt that extends the previous one (the
//! next chat turn) prefills only what is new.

use gpuport_kernels::sample::{self, SampleParams};

use super::error::LlmError;
use super::kv_cache::{DEFAULT_PAGE, KvCache};
use super::model::{Model, Rows, Scratch};
use super::prefill::BatchScratch;
use gpuport_runtime::device::Gpu;
use gpuport_runtime::ops;
use gpuport_runtime::recorder::Recorder;
use gpuport_runtime::tensor::{PendingReadback, Tensor};

/// How the next token is chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sampling {
    /// Temperature; ≤ 0 is greedy.
    pub temperature: f32,
    /// Keep the k most likely (0 = off).
    pub top_k: u32,
    /// Nucleus mass (≥ 1 = off).
    pub top_p: f32,
    /// Repetition penalty (1 = off), over the last `penalty_last_n` tokens.
    pub repeat_penalty: f32,
    /// Tokens the penalty looks back over.
    pub penalty_last_n: u32,
    /// RNG seed.
    pub seed: u64,
}

impl Sampling {
    /// Greedy decoding.
    pub const GREEDY: Sampling = Sampling {
        temperature: 0.0,
        top_k: 0,
        top_p: 1.0,
        repeat_penalty: 1.0,
        penalty_last_n: 64,
        seed: 0,
    };

    /// Greedy without a penalty: the token is an argmax of the logits (no sampler stages).
    pub(crate) fn is_argmax(&self) -> bool {
        self.temperature <= 0.0 && self.repeat_penalty == 1.0
    }

    pub(crate) fn check(&self) -> Result<(), LlmError> {
        let bad = |what: String| Err(LlmError::Request(what));
        if !self.temperature.is_finite() {
            return bad(format!("temperature {}", self.temperature));
        }
        if !self.top_p.is_finite() || self.top_p <= 0.0 {
            return bad(format!("top_p {} (must be in (0, 1], 1 = off)", self.top_p));
        }
        if !self.repeat_penalty.is_finite() || self.repeat_penalty <= 0.0 {
            return bad(format!(
                "repeat_penalty {} (must be > 0)",
                self.repeat_penalty
            ));
        }
        Ok(())
    }
}

/// What one sampling step binds: the logits row, the sampler's scratch, and the token buffer
/// the sampled id goes to (and the penalty's recent ids come from).
pub(crate) struct SamplerTensors<'a> {
    pub(crate) logits: &'a Tensor,
    pub(crate) probs: &'a Tensor,
    pub(crate) part: &'a Tensor,
    pub(crate) argmax_part: &'a Tensor,
    pub(crate) sampled: &'a Tensor,
    pub(crate) tokens: &'a Tensor,
}

/// Records the choice of the token after position `pos` of a sequence whose position 0 is
/// element `base` of `t.tokens`, from `t.logits`, into `tokens[base + pos + 1]`: an argmax when
/// greedy without a penalty, else the sampler's stages (its random stream is keyed by the seed
/// and the position, so a sequence draws the same wherever its tokens live).
pub(crate) fn record_sample(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    t: SamplerTensors<'_>,
    (base, pos): (usize, usize),
    s: &Sampling,
) -> Result<(), LlmError> {
    let n_recent = (s.penalty_last_n as usize).min(pos + 1);
    let out_index = base + pos + 1;
    if s.is_argmax() {
        // Greedy without a penalty is an argmax over the whole GPU.
        let call = ops::Argmax {
            x: t.logits,
            part: t.argmax_part,
            tokens: t.tokens,
            out_index,
            out: t.sampled,
        };
        ops::argmax(gpu, rec, call)?;
        return Ok(());
    }
    let p = SampleParams {
        vocab: t.logits.shape.iter().product::<usize>() as u32,
        top_k: s.top_k,
        n_recent: if s.repeat_penalty == 1.0 {
            0
        } else {
            n_recent as u32
        },
        draw: sample::draw_word(s.seed, pos as u32),
        temperature: s.temperature,
        top_p: s.top_p,
        penalty: s.repeat_penalty,
        recent_start: (base + pos + 1 - n_recent) as u32,
        out_index: out_index as u32,
        round: 0,
    };
    let call = ops::Sample {
        p,
        logits: t.logits,
        probs: t.probs,
        tokens: t.tokens,
        out: t.sampled,
        part: t.part,
    };
    ops::sample(gpu, rec, call)?;
    Ok(())
}

/// Why generation stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// A stop token was produced (it is the last token returned).
    Stop,
    /// `max_tokens` were produced.
    Length,
    /// The context is full.
    ContextFull,
    /// The caller's callback asked to stop.
    Cancelled,
}

/// One generation request.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// The whole sequence so far (previous turns included); the cache reuses its longest
    /// prefix shared with the last call.
    pub prompt: &'a [u32],
    /// Most tokens to produce.
    pub max_tokens: usize,
    /// Token ids that end generation.
    pub stop: &'a [u32],
    /// Sampling.
    pub sampling: Sampling,
}

/// What a generation did.
#[derive(Debug, Clone, PartialEq)]
pub struct Generated {
    /// Tokens produced, the stop token included.
    pub tokens: Vec<u32>,
    /// Why it ended.
    pub reason: StopReason,
    /// Prompt tokens whose keys and values were reused from the cache.
    pub reused: usize,
    /// Prompt tokens run through the model.
    pub prefilled: usize,
    /// Submits issued.
    pub submits: usize,
    /// The steady decode rate, when it could be measured: see [`DecodeTiming`].
    pub decode: Option<DecodeTiming>,
}

/// The decode rate as measured: tokens delivered by the decode batches over the wall time from
/// the moment the first decode batch starts to the last batch's readback. On a GPU that batch
/// is queued behind the prefill and starts when the first token's readback completes; a CPU
/// adapter (lavapipe) runs a submit inside `queue.submit`, so there the first decode batch is
/// submitted after the first token arrives and the interval starts at that submit. An earlier
/// count that started at a pipelined readback on lavapipe turned an 8-token reply into "55,042
/// tok/s", and a 12-token one into 4,520. A reply of the first token alone has no decode rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DecodeTiming {
    /// Tokens counted.
    pub tokens: usize,
    /// Seconds they took.
    pub seconds: f64,
}

impl DecodeTiming {
    /// Tokens per second.
    pub fn tokens_per_s(&self) -> f64 {
        self.tokens as f64 / self.seconds.max(1e-9)
    }
}

/// A session on a model. Not thread-safe; one request at a time.
pub struct Session<'m> {
    gpu: &'m Gpu,
    model: &'m Model,
    kv: KvCache,
    scratch: Scratch,
    /// Activations of a prefill batch, made at the first prompt of more than one new token.
    batch: Option<BatchScratch>,
    /// The tokens whose keys and values are in the cache, by position.
    cached: Vec<u32>,
    /// Decode steps recorded per submit.
    pub steps_per_submit: usize,
    /// Prompts in batches (`Some(true)`), token by token (`Some(false)`), or as suits the
    /// adapter (`None`: [`super::prefill::batched_prefill_default`]).
    pub batched_prefill: Option<bool>,
    /// Timestamp every submit's pass (needs TIMESTAMP_QUERY) and add it to `gpu_seconds`.
    pub profile: bool,
    /// GPU time of the submits so far, when profiling.
    pub gpu_seconds: f64,
    /// Timestamp every dispatch (needs TIMESTAMP_QUERY_INSIDE_PASSES); the last submit's
    /// (kernel, nanoseconds) land in `dispatch_profile`.
    pub profile_dispatches: bool,
    /// Per-dispatch times of the last submit, when `profile_dispatches`.
    pub dispatch_profile: Vec<(String, f64)>,
}

/// Decode steps per submit unless set. Measured on the H200 (docs/performance.md, v3/v4): with
/// batches pipelined, K = 4 already reaches the GPU-bound rate and K = 1 loses 35%; 8 leaves
/// margin for slower CPUs while a stop token wastes at most 7 speculative steps.
pub const DEFAULT_STEPS_PER_SUBMIT: usize = 8;

impl<'m> Session<'m> {
    /// A session with a cache of `ctx` positions.
    pub fn new(gpu: &'m Gpu, model: &'m Model, ctx: usize) -> Result<Session<'m>, LlmError> {
        if ctx == 0 {
            return Err(LlmError::Request("a context of 0 positions".into()));
        }
        Ok(Session {
            gpu,
            model,
            kv: KvCache::new(gpu, &model.cfg, ctx, (DEFAULT_PAGE, model.kv_type()))?,
            scratch: Scratch::new(gpu, &model.cfg, ctx)?,
            batch: None,
            cached: Vec::new(),
            steps_per_submit: DEFAULT_STEPS_PER_SUBMIT,
            batched_prefill: None,
            profile: false,
            gpu_seconds: 0.0,
            profile_dispatches: false,
            dispatch_profile: Vec::new(),
        })
    }

    /// Positions the cache holds.
    pub fn context(&self) -> usize {
        self.kv.capacity()
    }

    /// Forgets the cache (its pages go back to the free list).
    pub fn reset(&mut self) {
        self.cached.clear();
        self.kv.truncate(0);
    }

    /// Runs `prompt` (reusing the cache) and returns the logits of the token after it.
    pub fn logits(&mut self, prompt: &[u32]) -> Result<Vec<f32>, LlmError> {
        let out = (|| {
            let mut rec = self.recorder()?;
            self.prefill(&mut rec, prompt)?;
            self.submit(&mut rec)?;
            Ok(self.gpu.readback_f32(&self.scratch.logits)?)
        })();
        self.forget_on_failure(&out);
        out
    }

    /// After a failure past the request checks, the cache holds positions nothing (or
    /// something half-recorded) filled: forget it all.
    fn forget_on_failure<T>(&mut self, out: &Result<T, LlmError>) {
        if matches!(out, Err(e) if !matches!(e, LlmError::Request(_))) {
            self.cached.clear();
        }
        self.kv.truncate(self.cached.len());
    }

    fn recorder(&self) -> Result<Recorder<'m>, LlmError> {
        Ok(if self.profile_dispatches {
            Recorder::profiling_dispatches(self.gpu)?
        } else if self.profile {
            Recorder::profiling(self.gpu)?
        } else {
            Recorder::new(self.gpu)
        })
    }

    fn submit(&mut self, rec: &mut Recorder<'_>) -> Result<(), LlmError> {
        rec.submit()?;
        self.gpu_seconds += rec.pass_times_ns().iter().sum::<f64>() * 1e-9;
        if self.profile_dispatches {
            self.dispatch_profile = rec.dispatch_times_ns().to_vec();
        }
        Ok(())
    }

    /// Records the prompt's uncached suffix; the logits of its last token end in
    /// `scratch.logits`. Returns (reused, prefilled).
    fn prefill(
        &mut self,
        rec: &mut Recorder<'_>,
        prompt: &[u32],
    ) -> Result<(usize, usize), LlmError> {
        if prompt.is_empty() {
            return Err(LlmError::Request("an empty prompt".into()));
        }
        if prompt.len() > self.kv.capacity() {
            return Err(LlmError::Request(format!(
                "the prompt has {} tokens, the context holds {}",
                prompt.len(),
                self.kv.capacity()
            )));
        }
        let vocab = self.model.cfg.vocab as u32;
        if let Some(bad) = prompt.iter().find(|t| **t >= vocab) {
            return Err(LlmError::Request(format!(
                "token id {bad} is outside the vocabulary of {vocab}"
            )));
        }
        let shared = self
            .cached
            .iter()
            .zip(prompt)
            .take_while(|(a, b)| a == b)
            .count();
        // The last prompt token always runs: its logits pick the first new token.
        let start = shared.min(prompt.len() - 1);
        self.gpu.queue.write_buffer(
            &self.scratch.tokens.buffer,
            4 * start as u64,
            bytemuck::cast_slice(&prompt[start..]),
        );
        self.cached.truncate(start);
        self.kv.truncate(start);
        self.kv.extend(self.gpu, prompt.len() - start)?;
        let ids = Rows::Ids(&self.scratch.tokens);
        let scratch = (&self.scratch, &mut self.batch, self.batched_prefill);
        let n = prompt.len() - start;
        self.model
            .record_prompt(self.gpu, rec, ids, scratch, &self.kv, start, n)?;
        self.cached.extend_from_slice(&prompt[start..]);
        Ok((start, prompt.len() - start))
    }

    fn record_sample(
        &self,
        rec: &mut Recorder<'_>,
        pos: usize,
        s: &Sampling,
    ) -> Result<(), LlmError> {
        let sc = &self.scratch;
        let on = SamplerTensors {
            logits: &sc.logits,
            probs: &sc.probs,
            part: &sc.sample_part,
            argmax_part: &sc.argmax_part,
            sampled: &sc.sampled,
            tokens: &sc.tokens,
        };
        record_sample(self.gpu, rec, on, (0, pos), s)
    }

    /// Records, from the token at position `run_from` (sampled, not yet run), up to
    /// `budget` sampling steps, each running the newest token and sampling the next. Returns
    /// `None` when no step fits; else the recording and its step count, for
    /// [`Session::submit_steps`].
    fn record_steps(
        &mut self,
        run_from: usize,
        budget: usize,
        sampling: &Sampling,
    ) -> Result<Option<(Recorder<'m>, usize)>, LlmError> {
        let ctx = self.kv.capacity();
        let steps = budget
            .min(self.steps_per_submit.max(1))
            .min(ctx - run_from.min(ctx));
        if steps == 0 {
            return Ok(None);
        }
        // Positions past the accepted ones are backed speculatively; `generate` truncates
        // the cache to what it accepted.
        let need = (run_from + steps).saturating_sub(self.kv.len());
        self.kv.extend(self.gpu, need)?;
        let mut rec = self.recorder()?;
        let kv = self.kv.seq_kv();
        for p in run_from..run_from + steps {
            let ids = Rows::Ids(&self.scratch.tokens);
            self.model
                .record_token(self.gpu, &mut rec, &self.scratch, ids, &kv, p, true)?;
            self.record_sample(&mut rec, p, sampling)?;
        }
        Ok(Some((rec, steps)))
    }

    /// Submits steps recorded by [`Session::record_steps`] from `run_from`, with the readback
    /// of the ids they sample.
    fn submit_steps(
        &mut self,
        (mut rec, steps): (Recorder<'m>, usize),
        run_from: usize,
    ) -> Result<Batch, LlmError> {
        self.submit(&mut rec)?;
        self.read_sampled(run_from + 1, steps)
    }

    /// Whether this adapter may execute a submit inside `queue.submit` (a CPU adapter).
    fn gpu_runs_in_submit(&self) -> bool {
        self.gpu.is_cpu()
    }

    /// Starts the readback of the ids sampled at positions `first..first + count`.
    fn read_sampled(&self, first: usize, count: usize) -> Result<Batch, LlmError> {
        let view = self.scratch.tokens.view(first, count);
        Ok(Batch {
            first,
            count,
            readback: self.gpu.start_readback(&view)?,
        })
    }

    /// Generates after `req.prompt`, calling `on_token` with each accepted token as its batch
    /// arrives (return `false` to stop early).
    ///
    /// Batches are pipelined: while the ids of batch n are read back, batch n + 1 (which
    /// continues from n's last sampled id on the GPU) is already submitted, so the CPU's
    /// recording overlaps the GPU's work. Tokens sampled past a stop are discarded, and the
    /// cache keeps only accepted tokens.
    pub fn generate(
        &mut self,
        req: &Request<'_>,
        on_token: impl FnMut(u32) -> bool,
    ) -> Result<Generated, LlmError> {
        let out = self.generate_unsynced(req, on_token);
        // The cache keeps exactly the accepted tokens (whatever ran speculatively past a stop,
        // or before an error, is dropped).
        self.forget_on_failure(&out);
        out
    }

    fn generate_unsynced(
        &mut self,
        req: &Request<'_>,
        mut on_token: impl FnMut(u32) -> bool,
    ) -> Result<Generated, LlmError> {
        req.sampling.check()?;
        let ctx = self.kv.capacity();
        let mut rec = self.recorder()?;
        let (reused, prefilled) = self.prefill(&mut rec, req.prompt)?;
        let mut out = Generated {
            tokens: Vec::new(),
            reason: StopReason::Length,
            reused,
            prefilled,
            submits: 0,
            decode: None,
        };
        if req.max_tokens == 0 {
            self.submit(&mut rec)?;
            out.submits = 1;
            return Ok(out);
        }
        // The first submit carries the prefill and one sample only, so the first token
        // arrives as early as possible.
        let last = req.prompt.len() - 1;
        self.record_sample(&mut rec, last, &req.sampling)?;
        self.submit(&mut rec)?;
        out.submits += 1;
        let mut inflight = self.read_sampled(last + 1, 1)?;
        // When the first decode batch was submitted (DecodeTiming), and the tokens delivered
        // since.
        let mut decode_from: Option<std::time::Instant> = None;
        let mut decode_tokens = 0usize;
        loop {
            // The next batch starts from the in-flight batch's last sampled token.
            let run_from = inflight.first + inflight.count - 1;
            let budget = req.max_tokens - out.tokens.len() - inflight.count;
            let mut recorded = self.record_steps(run_from, budget, &req.sampling)?;
            let first = decode_from.is_none();
            // The next batch goes in before this one is read (pipelined) — for the first
            // decode batch too on a GPU, where it then queues behind the prefill. A CPU adapter
            // may run a submit inside `queue.submit`: there the first decode batch waits until
            // the first token is delivered (below), which keeps it out of the time to first
            // token and out of the first readback's wait.
            let early = !first || !self.gpu_runs_in_submit();
            let mut next = match recorded.take() {
                Some(r) if early => Some(self.submit_steps(r, run_from)?),
                other => {
                    recorded = other;
                    None
                }
            };
            let ids: Vec<u32> =
                bytemuck::pod_collect_to_vec(&self.gpu.finish_readback(inflight.readback)?);
            if let Some(from) = decode_from {
                decode_tokens += ids.len();
                out.decode = Some(DecodeTiming {
                    tokens: decode_tokens,
                    seconds: from.elapsed().as_secs_f64(),
                });
            } else if early {
                // The first token is here and the first decode batch runs from now on.
                decode_from = Some(std::time::Instant::now());
            }
            let mut stopped = None;
            for (j, &id) in ids.iter().enumerate() {
                out.tokens.push(id);
                let keep_going = on_token(id);
                let position = inflight.first + j;
                stopped = if req.stop.contains(&id) {
                    Some((j, StopReason::Stop))
                } else if !keep_going {
                    Some((j, StopReason::Cancelled))
                } else if out.tokens.len() == req.max_tokens {
                    Some((j, StopReason::Length))
                } else if position >= ctx {
                    // Running this token would need a cache position past the end.
                    Some((j, StopReason::ContextFull))
                } else {
                    None
                };
                if stopped.is_some() {
                    break;
                }
            }
            if first && !early && stopped.is_none() {
                // The adapter is idle now: the decode interval starts with this submit.
                decode_from = Some(std::time::Instant::now());
                next = recorded
                    .take()
                    .map(|r| self.submit_steps(r, run_from))
                    .transpose()?;
            }
            out.submits += usize::from(next.is_some());
            // Within the batch every sampled token but the last was run; the last is run by
            // the next batch when there is one.
            let ran = inflight.count - 1 + usize::from(next.is_some());
            let accepted = stopped.map_or(inflight.count, |(j, _)| j + 1);
            self.cached.extend_from_slice(&ids[..accepted.min(ran)]);
            if let Some((_, reason)) = stopped {
                out.reason = reason;
                // A speculative next batch only wrote past the accepted tokens; its readback
                // is dropped unread.
                drop(next);
                return Ok(out);
            }
            match next {
                Some(n) => inflight = n,
                None => {
                    out.reason = if run_from >= ctx {
                        StopReason::ContextFull
                    } else {
                        StopReason::Length
                    };
                    return Ok(out);
                }
            }
        }
    }
}

/// Sampled ids on their way back: positions `first..first + count` of the sequence.
struct Batch {
    first: usize,
    count: usize,
    readback: PendingReadback,
}
