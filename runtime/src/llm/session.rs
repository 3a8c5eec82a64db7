//! A generation session: the KV cache, the GPU token sequence, and the decode loop — K steps
//! recorded per submit with sampling on the GPU, one readback per K, stop tokens honoured
//! exactly, and the cache kept across calls so a prompt that extends the previous one (the
//! next chat turn) prefills only what is new.

use gpuport_kernels::sample::SampleParams;

use super::error::LlmError;
use super::model::{KvCache, Model, Scratch};
use crate::device::Gpu;
use crate::ops;
use crate::recorder::Recorder;
use crate::tensor::Tensor;

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

    fn check(&self) -> Result<(), LlmError> {
        let bad = |what: String| Err(LlmError::Request(what));
        if !self.temperature.is_finite() {
            return bad(format!("temperature {}", self.temperature));
        }
        if self.top_p.is_nan() || self.top_p <= 0.0 || !self.top_p.is_finite() {
            return bad(format!("top_p {} (must be in (0, 1], 1 = off)", self.top_p));
        }
        if self.repeat_penalty.is_nan()
            || self.repeat_penalty <= 0.0
            || !self.repeat_penalty.is_finite()
        {
            return bad(format!(
                "repeat_penalty {} (must be > 0)",
                self.repeat_penalty
            ));
        }
        Ok(())
    }
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
#[derive(Debug, Clone, PartialEq, Eq)]
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
}

/// A session on a model. Not thread-safe; one request at a time.
pub struct Session<'m> {
    gpu: &'m Gpu,
    model: &'m Model,
    kv: KvCache,
    scratch: Scratch,
    /// The tokens whose keys and values are in the cache, by position.
    cached: Vec<u32>,
    /// Decode steps recorded per submit.
    pub steps_per_submit: usize,
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

/// Decode steps per submit unless set: see docs/performance.md for the measurement.
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
            kv: KvCache::new(gpu, &model.cfg, ctx)?,
            scratch: Scratch::new(gpu, &model.cfg, ctx)?,
            cached: Vec::new(),
            steps_per_submit: DEFAULT_STEPS_PER_SUBMIT,
            profile: false,
            gpu_seconds: 0.0,
            profile_dispatches: false,
            dispatch_profile: Vec::new(),
        })
    }

    /// Positions the cache holds.
    pub fn context(&self) -> usize {
        self.kv.ctx
    }

    /// Forgets the cache.
    pub fn reset(&mut self) {
        self.cached.clear();
    }

    /// Runs `prompt` (reusing the cache) and returns the logits of the token after it.
    pub fn logits(&mut self, prompt: &[u32]) -> Result<Vec<f32>, LlmError> {
        let mut rec = self.recorder()?;
        self.prefill(&mut rec, prompt)?;
        self.submit(&mut rec)?;
        Ok(self.gpu.readback_f32(&self.scratch.logits)?)
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
        if prompt.len() > self.kv.ctx {
            return Err(LlmError::Request(format!(
                "the prompt has {} tokens, the context holds {}",
                prompt.len(),
                self.kv.ctx
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
        for pos in start..prompt.len() {
            let last = pos + 1 == prompt.len();
            self.model
                .record_token(self.gpu, rec, &self.scratch, &self.kv, pos, last)?;
            self.cached.push(prompt[pos]);
        }
        Ok((start, prompt.len() - start))
    }

    fn record_sample(
        &self,
        rec: &mut Recorder<'_>,
        pos: usize,
        s: &Sampling,
    ) -> Result<(), LlmError> {
        let n_recent = (s.penalty_last_n as usize).min(pos + 1);
        let p = SampleParams {
            vocab: self.model.cfg.vocab as u32,
            top_k: s.top_k,
            n_recent: if s.repeat_penalty == 1.0 {
                0
            } else {
                n_recent as u32
            },
            step: pos as u32,
            temperature: s.temperature,
            top_p: s.top_p,
            penalty: s.repeat_penalty,
            seed_lo: s.seed as u32,
            seed_hi: (s.seed >> 32) as u32,
            recent_start: (pos + 1 - n_recent) as u32,
            out_index: pos as u32 + 1,
            pad: 0,
        };
        let sc = &self.scratch;
        if s.temperature <= 0.0 && s.repeat_penalty == 1.0 {
            // Greedy without a penalty is an argmax over the whole GPU.
            let t = [&sc.logits, &sc.argmax_part, &sc.tokens, &sc.sampled];
            ops::argmax(self.gpu, rec, t, pos + 1)?;
        } else {
            let t = [&sc.logits, &sc.probs, &sc.tokens, &sc.sampled];
            ops::sample(self.gpu, rec, p, t)?;
        }
        Ok(())
    }

    /// Generates after `req.prompt`, calling `on_token` with each accepted token as its batch
    /// arrives (return `false` to stop early).
    pub fn generate(
        &mut self,
        req: &Request<'_>,
        mut on_token: impl FnMut(u32) -> bool,
    ) -> Result<Generated, LlmError> {
        req.sampling.check()?;
        let ctx = self.kv.ctx;
        let mut rec = self.recorder()?;
        let (reused, prefilled) = self.prefill(&mut rec, req.prompt)?;
        let mut out = Generated {
            tokens: Vec::new(),
            reason: StopReason::Length,
            reused,
            prefilled,
            submits: 0,
        };
        if req.max_tokens == 0 {
            self.submit(&mut rec)?;
            out.submits = 1;
            return Ok(out);
        }
        // `pos` is the position of the last token in the sequence: its logits are current.
        let mut pos = req.prompt.len() - 1;
        self.record_sample(&mut rec, pos, &req.sampling)?;
        let mut pending = 1; // tokens sampled but not yet read back
        // The first submit carries the prefill and one sample only, so the first token
        // arrives as early as possible; later submits carry `steps_per_submit` steps.
        let mut first = true;
        loop {
            // Record lookahead steps: each runs the newest sampled token and samples the next.
            let budget = req.max_tokens - out.tokens.len();
            let batch = if first {
                1
            } else {
                self.steps_per_submit.max(1)
            };
            first = false;
            while pending < batch.min(budget) && pos + pending < ctx {
                let p = pos + pending;
                self.model
                    .record_token(self.gpu, &mut rec, &self.scratch, &self.kv, p, true)?;
                self.record_sample(&mut rec, p, &req.sampling)?;
                pending += 1;
            }
            self.submit(&mut rec)?;
            out.submits += 1;
            let view = Tensor {
                offset: 4 * (pos as u64 + 1),
                bytes: 4 * pending as u64,
                shape: vec![pending],
                ..self.scratch.tokens.clone()
            };
            let ids: Vec<u32> = bytemuck::pod_collect_to_vec(&self.gpu.readback(&view)?);
            // Positions pos + 1 .. pos + pending - 1 were run (their KV are valid when their
            // tokens are accepted); the last sampled token has not been run.
            let mut stopped = None;
            for (j, &id) in ids.iter().take(pending).enumerate() {
                out.tokens.push(id);
                let keep_going = on_token(id);
                if req.stop.contains(&id) {
                    stopped = Some((j, StopReason::Stop));
                } else if !keep_going {
                    stopped = Some((j, StopReason::Cancelled));
                } else if out.tokens.len() == req.max_tokens {
                    stopped = Some((j, StopReason::Length));
                } else if pos + 1 + j >= ctx {
                    stopped = Some((j, StopReason::ContextFull));
                }
                if stopped.is_some() {
                    break;
                }
            }
            // Accepted tokens that were also run are cached.
            let accepted = stopped.map_or(pending, |(j, _)| j + 1);
            let ran = accepted.min(pending - 1);
            self.cached.extend_from_slice(&ids[..ran]);
            if let Some((_, reason)) = stopped {
                out.reason = reason;
                return Ok(out);
            }
            pos += pending;
            rec = self.recorder()?;
            // The newest token has to run before the next sample.
            self.model
                .record_token(self.gpu, &mut rec, &self.scratch, &self.kv, pos, true)?;
            self.cached.push(ids[ids.len() - 1]);
            self.record_sample(&mut rec, pos, &req.sampling)?;
            pending = 1;
        }
    }
}
