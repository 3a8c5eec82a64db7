//! The continuously batched engine the scheduler drives: [`LlmEngine`] implements
//! [`gpuport_scheduler::Engine`] over a [`Batch`]. Jobs join the running batch at a step
//! boundary (their prompts prefilled in chunks in the same forwards as the decoding rows),
//! leave when they stop, and their pages return to the pool.
//!
//! - **One step** ([`Engine::step`]) is one GPU submit: while any admitted prompt still has
//!   rows to run, a mixed forward — the next chunk of each prompt (up to
//!   [`EngineShape::prefill_rows`] rows in all, oldest job first) beside one decode row of
//!   every decoding job; otherwise `decode_steps` decode steps of every decoding job
//!   ([`Batch::decode`]). So a job admitted at a boundary produces its first token within
//!   `⌈prompt / prefill_rows⌉` steps while the others keep decoding.
//! - **Pages are reserved at admission**: a job is admitted only when the pool can back its
//!   whole prompt and `max_tokens` beside every running job's reservation and every retained
//!   sequence's pages, so a running job never runs out of pages and never harms a neighbour
//!   (every page in use belongs to some open sequence's table, and no table outgrows its
//!   reservation, so the sum bounds them — shared pages are counted twice, never missed);
//!   otherwise [`Refusal::Busy`] (it waits for pages to free) — or, when nothing runs and it
//!   still does not fit, [`Refusal::Invalid`].
//! - **Prefix sharing**: a new prompt forks the open sequence (running or retained) with the
//!   longest common prefix of at least [`MIN_SHARED`] tokens, sharing its KV pages
//!   (copy-on-write of a partly filled last page); N requests with one system prompt prefill
//!   it once. Finished and evicted sequences are retained (up to [`EngineShape::retained`])
//!   for the next request to share, and closed oldest first when their slot or pages are
//!   needed.
//! - **Per sequence**: its own sampling parameters and seed; stop tokens end it inside a
//!   submit ([`crate::DecodeItem::stop`]); stop strings are matched across token boundaries
//!   on the decoded text and excluded from it (text that could still begin one is held
//!   back); greedy ids equal its solo run ([`Batch`]'s guarantee).
//!
//! ```no_run
//! use gpuport_llm::{EngineShape, GenJob, LlmLoader, Sampling, Tokenizer};
//! use gpuport_runtime::gguf::Gguf;
//! use gpuport_scheduler::{Config, Priority, Request, Scheduler};
//!
//! let path = "models/SmolLM2-135M-Instruct.Q4_1.gguf";
//! let tok = Tokenizer::from_gguf(&Gguf::open(path.as_ref())?)?;
//! let loader = LlmLoader::for_file("smollm2", path.into(), EngineShape::new(16, 1024));
//! let scheduler = Scheduler::new(loader, Config::default())?;
//! scheduler.load("smollm2")?;
//! let job = GenJob {
//!     prompt: tok.encode("The capital of France is", true, true),
//!     max_tokens: 16,
//!     sampling: Sampling::GREEDY,
//!     stop_tokens: gpuport_llm::stop_tokens(&tok),
//!     stop_text: vec!["\n".into()],
//! };
//! let request = Request::new(job).priority(Priority::Interactive).session("ghost-text");
//! let ticket = scheduler.complete(request, |chunk| print!("{}", chunk.text))?;
//! let outcome = ticket.wait();
//! println!("\n{:?}", outcome.output.map(|o| o.finish));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use gpuport_kernels::quant::GgmlType;
use gpuport_runtime::{Gpu, GpuOptions};
use gpuport_scheduler::{
    Engine, EngineFailure, EngineLoader, JobId, LoadFailure, Progress, Refusal,
};

use super::batch::{Batch, BatchShape, DecodeItem, DecodeTicket, Precompiled, PrefillItem};
use super::error::LlmError;
use super::kv_cache::{DEFAULT_PAGE, SeqId};
use super::loader::{self, Source};
use super::session::Sampling;
use super::tokenizer::{Tokenizer, Utf8Stream};

/// Prompts share an open sequence's pages when they have at least this many tokens in common.
pub const MIN_SHARED: usize = 16;

/// Prompt tokens a forked sequence always runs itself: the last, whose logits give the first
/// reply token. (That one row takes the one-row GEMV path where the prompt's first run took
/// the GEMM: both compute with the same int8-rounded inputs where the GEMV takes them,
/// [`crate::Model`]'s `int8_input`, so the reply is the same.)
pub const UNSHARED_TAIL: usize = 1;

/// What to generate.
#[derive(Debug, Clone, PartialEq)]
pub struct GenJob {
    /// The prompt's token ids (at least one).
    pub prompt: Vec<u32>,
    /// Most tokens to generate (at least one).
    pub max_tokens: usize,
    /// Sampling parameters and seed.
    pub sampling: Sampling,
    /// Token ids that end generation (returned as the last id; their text is not emitted).
    pub stop_tokens: Vec<u32>,
    /// Strings that end generation, matched across token boundaries and excluded.
    pub stop_text: Vec<String>,
}

/// A streamed piece of a job's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenChunk {
    /// New token ids.
    pub ids: Vec<u32>,
    /// New text (held back while it could begin a stop string).
    pub text: String,
}

/// How a job ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    /// A stop token or stop string.
    Stop,
    /// `max_tokens`, or the context was full.
    Length,
    /// Evicted by the scheduler (cancelled, preempted, superseded); the output is partial.
    Evicted,
}

/// A job's result.
#[derive(Debug, Clone, PartialEq)]
pub struct GenOutput {
    /// Every generated id (a stop token included).
    pub ids: Vec<u32>,
    /// The generated text (a stop string and what followed it excluded).
    pub text: String,
    /// Prompt tokens.
    pub prompt_tokens: usize,
    /// Prompt tokens whose keys and values came from another sequence's pages.
    pub cached_tokens: usize,
    /// How it ended.
    pub finish: Finish,
    /// Admission to the first token, milliseconds.
    pub prefill_ms: f64,
    /// First token to the end, milliseconds.
    pub decode_ms: f64,
}

/// The size of an engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineShape {
    /// Jobs it runs at once.
    pub slots: usize,
    /// Positions one sequence holds (prompt + generated).
    pub context: usize,
    /// KV pages of [`DEFAULT_PAGE`] positions shared by every sequence.
    pub pages: usize,
    /// Prompt rows one step runs at most (beside the decoding rows).
    pub prefill_rows: usize,
    /// Finished sequences kept open for prefix sharing.
    pub retained: usize,
    /// The KV pool's element type (f32 or f16); `None`: the loader's default
    /// ([`crate::kv_cache::default_kv_type`]).
    pub kv_type: Option<GgmlType>,
    /// Compile every kernel variant the engine's forwards can run when it loads on a GPU
    /// ([`LlmEngine::precompile`]), so no request meets a compile; on by default. A CPU
    /// adapter skips it: llvmpipe generates much of its code at first dispatch anyway, and
    /// the pipelines' creation took SmolLM2's 16 × 4,096 engine on lavapipe from 2.8–3.2 s
    /// to 5.0–9.5 s to ready (`gpuport serve`), where a compile mid-stream costs tens of
    /// milliseconds beside steps of hundreds.
    pub precompile: bool,
}

impl EngineShape {
    /// The [`BatchShape`] an engine of this shape runs on `gpu`: a slot for every job and
    /// retained sequence, its pages, and forwards of `prefill_rows` rows (at least `slots`:
    /// a decode step of every job is one forward) — on a CPU adapter at most
    /// [`crate::prefill::prefill_batch`] rows, as a session's prompt batches there: past the
    /// few-row kernels a float projection took the f32 tiled GEMM, 2.3× slower a row on
    /// lavapipe (SmolLM2's down projection, 186 against 79 ms for 512 rows).
    pub fn batch_shape(&self, gpu: &Gpu) -> BatchShape {
        let rows = if gpu.is_cpu() {
            self.prefill_rows.min(crate::prefill::prefill_batch(gpu))
        } else {
            self.prefill_rows
        };
        BatchShape {
            slots: self.slots + self.retained,
            seq_capacity: self.context,
            pages: self.pages,
            max_rows: rows.max(self.slots).max(1),
        }
    }

    /// `slots` jobs of up to `context` positions, every one fully backed, prompts in chunks
    /// of 256 rows, as many finished sequences retained as there are slots.
    pub fn new(slots: usize, context: usize) -> EngineShape {
        EngineShape {
            slots,
            context,
            pages: slots * context.div_ceil(DEFAULT_PAGE),
            prefill_rows: 256,
            retained: slots,
            kv_type: None,
            precompile: true,
        }
    }
}

/// One admitted job's state.
struct Running {
    job: GenJob,
    seq: SeqId,
    /// Pages reserved for it: its prompt and `max_tokens`.
    reserved: usize,
    /// Prompt tokens in the pool.
    fed: usize,
    /// Decode steps in flight for it.
    inflight: usize,
    cached_tokens: usize,
    ids: Vec<u32>,
    utf8: Utf8Stream,
    /// Decoded text; `sent` bytes of it were emitted.
    text: String,
    sent: usize,
    admitted: Instant,
    first_token: Option<Instant>,
    /// Set once it is done.
    finish: Option<Finish>,
}

/// A batched engine: one model, one KV pool, many sequences.
pub struct LlmEngine {
    batch: Batch<'static>,
    tokenizer: Arc<Tokenizer>,
    shape: EngineShape,
    jobs: HashMap<JobId, Running>,
    /// Admission order (prompt chunks go oldest first).
    order: Vec<JobId>,
    /// Finished sequences kept for sharing, oldest first.
    retained: VecDeque<SeqId>,
    /// The decode submitted at the last step, not yet finished.
    inflight: Option<InFlight>,
    /// Progress taken outside a step (when the batch changed), reported at the next one.
    stash: Vec<Progress<GenChunk, GenOutput>>,
    /// A failure met outside a step, reported at the next one.
    failure: Option<EngineFailure>,
}

fn invalid(field: &str, reason: String) -> Refusal {
    Refusal::Invalid {
        field: Some(field.into()),
        reason,
    }
}

impl LlmEngine {
    /// An engine over `batch` (its shape must hold `shape.slots + shape.retained` sequences)
    /// with `tokenizer` for the text.
    pub fn new(batch: Batch<'static>, tokenizer: Arc<Tokenizer>, shape: EngineShape) -> LlmEngine {
        LlmEngine {
            batch,
            tokenizer,
            shape,
            jobs: HashMap::new(),
            order: Vec::new(),
            retained: VecDeque::new(),
            inflight: None,
            stash: Vec::new(),
            failure: None,
        }
    }

    /// Compiles every pipeline the engine's forwards can run ([`Batch::precompile`]): the
    /// loader does it at start ([`EngineShape::precompile`]), so that a long request's first
    /// steps (the row tables' split path, a tensor-core tile for a large chunk) do not stall
    /// every stream in the batch on a compile.
    pub fn precompile(&mut self) -> Result<Precompiled, LlmError> {
        self.batch.precompile()
    }

    /// The batch underneath (page accounting, the model).
    pub fn batch(&self) -> &Batch<'static> {
        &self.batch
    }

    /// Sequences retained for prefix sharing.
    pub fn retained(&self) -> usize {
        self.retained.len()
    }

    /// Closes every retained sequence (their pages go back to the pool).
    pub fn drop_retained(&mut self) {
        while let Some(seq) = self.retained.pop_front() {
            let _ = self.batch.close(seq);
        }
    }

    fn pages_for(positions: usize) -> usize {
        positions.div_ceil(DEFAULT_PAGE)
    }

    fn reserved(&self) -> usize {
        self.jobs.values().map(|r| r.reserved).sum()
    }

    /// The open sequence sharing the longest prefix (≥ [`MIN_SHARED`]) with `prompt`, leaving
    /// its last [`UNSHARED_TAIL`] tokens to run.
    fn best_prefix(&self, prompt: &[u32]) -> Option<(SeqId, usize)> {
        let open = self
            .jobs
            .values()
            .map(|r| r.seq)
            .chain(self.retained.iter().copied());
        let mut best: Option<(SeqId, usize)> = None;
        for seq in open {
            let cached = self.batch.cached(seq).ok()?;
            let n = cached
                .iter()
                .zip(&prompt[..prompt.len().saturating_sub(UNSHARED_TAIL)])
                .take_while(|(a, b)| a == b)
                .count();
            if n >= MIN_SHARED && best.is_none_or(|(_, m)| n > m) {
                best = Some((seq, n));
            }
        }
        best
    }

    fn check(&self, job: &GenJob) -> Result<(), Refusal> {
        let vocab = self.batch.model().cfg.vocab;
        if job.prompt.is_empty() {
            return Err(invalid("prompt", "the prompt has no tokens".into()));
        }
        if let Some(bad) = job.prompt.iter().find(|t| **t as usize >= vocab) {
            return Err(invalid(
                "prompt",
                format!("token id {bad} is outside the vocabulary of {vocab}"),
            ));
        }
        if job.max_tokens == 0 {
            return Err(invalid("max_tokens", "at least one token".into()));
        }
        let need = job.prompt.len() + job.max_tokens;
        if need > self.shape.context {
            return Err(invalid(
                "max_tokens",
                format!(
                    "the prompt's {} tokens and max_tokens {} need {need} positions, the \
                     context holds {}",
                    job.prompt.len(),
                    job.max_tokens,
                    self.shape.context
                ),
            ));
        }
        job.sampling
            .check()
            .map_err(|e| invalid("sampling", e.to_string()))
    }

    /// Makes room for `pages` more reserved pages and one more open sequence, closing
    /// retained sequences (all but `keep`) oldest first; whether it fits.
    fn make_room(&mut self, pages: usize, keep: Option<SeqId>) -> bool {
        let total = self.batch.pool().total_pages();
        loop {
            let retained_pages: usize = self
                .retained
                .iter()
                .filter_map(|s| self.batch.pool().page_table(*s).ok())
                .map(<[u32]>::len)
                .sum();
            let fits_pages = self.reserved() + pages + retained_pages <= total;
            let fits_slot = self.jobs.len() + self.retained.len() < self.batch.shape().slots;
            if fits_pages && fits_slot {
                return true;
            }
            let Some(at) = self.retained.iter().position(|s| Some(*s) != keep) else {
                return false;
            };
            if let Some(seq) = self.retained.remove(at) {
                let _ = self.batch.close(seq);
            }
        }
    }

    /// Ends job `id`: its sequence is retained for sharing (or closed when none may be).
    fn retire(&mut self, id: JobId) -> Option<Running> {
        let r = self.jobs.remove(&id)?;
        self.order.retain(|o| *o != id);
        if self.shape.retained == 0 {
            let _ = self.batch.close(r.seq);
        } else {
            if self.retained.len() >= self.shape.retained
                && let Some(old) = self.retained.pop_front()
            {
                let _ = self.batch.close(old);
            }
            self.retained.push_back(r.seq);
        }
        Some(r)
    }

    fn output(r: Running, finish: Finish) -> GenOutput {
        let now = Instant::now();
        let first = r.first_token.unwrap_or(now);
        GenOutput {
            ids: r.ids,
            text: r.text,
            prompt_tokens: r.job.prompt.len(),
            cached_tokens: r.cached_tokens,
            finish,
            prefill_ms: (first - r.admitted).as_secs_f64() * 1e3,
            decode_ms: (now - first).as_secs_f64() * 1e3,
        }
    }

    /// Takes new ids for job `id`: appends them, ends it at a stop string or at its token
    /// budget, and returns the chunk to stream.
    fn take(&mut self, id: JobId, new: &[u32], stopped: bool) -> Option<GenChunk> {
        let tokenizer = Arc::clone(&self.tokenizer);
        let context = self.shape.context;
        let r = self.jobs.get_mut(&id)?;
        if r.first_token.is_none() {
            r.first_token = Some(Instant::now());
        }
        let room = r.job.max_tokens - r.ids.len();
        let mut new = &new[..new.len().min(room)];
        let mut finish = None;
        if let Some(at) = new.iter().position(|t| r.job.stop_tokens.contains(t)) {
            new = &new[..=at];
            finish = Some(Finish::Stop);
        } else if stopped {
            finish = Some(Finish::Stop);
        }
        let mut bytes = Vec::new();
        for t in new {
            if !r.job.stop_tokens.contains(t) {
                tokenizer.piece(*t, false, &mut bytes);
            }
        }
        r.ids.extend_from_slice(new);
        let searched_from = r.text.len();
        r.text.push_str(&r.utf8.push(&bytes));
        // A stop string may start in text already held back: search from the longest stop
        // string's length before the new text.
        let longest = r.job.stop_text.iter().map(String::len).max().unwrap_or(0);
        let mut from = searched_from.saturating_sub(longest);
        while !r.text.is_char_boundary(from) {
            from -= 1;
        }
        let hit = r
            .job
            .stop_text
            .iter()
            .filter(|s| !s.is_empty())
            .filter_map(|s| r.text[from..].find(s.as_str()).map(|i| from + i))
            .min();
        if let Some(at) = hit {
            r.text.truncate(at);
            finish = Some(Finish::Stop);
        }
        let full = r.job.prompt.len() + r.ids.len() >= context;
        if finish.is_none() && (r.ids.len() >= r.job.max_tokens || full) {
            finish = Some(Finish::Length);
        }
        if finish.is_some() {
            r.text.push_str(&r.utf8.finish());
            r.finish = finish;
        }
        // Hold back a tail that could still begin a stop string.
        let mut end = r.text.len();
        if r.finish.is_none() {
            for s in &r.job.stop_text {
                for k in (1..s.len()).rev() {
                    if s.is_char_boundary(k) && r.text.ends_with(&s[..k]) {
                        end = end.min(r.text.len() - k);
                        break;
                    }
                }
            }
        }
        let text = r.text[r.sent..end.max(r.sent)].to_string();
        r.sent = r.sent.max(end);
        (!new.is_empty() || !text.is_empty()).then(|| GenChunk {
            ids: new.to_vec(),
            text,
        })
    }

    /// A mixed forward: the next chunk of every prompt still running (oldest first, within
    /// the row budget) beside one decode row of every decoding job.
    fn prefill_step(&mut self) -> Result<Vec<(JobId, Vec<u32>)>, EngineFailure> {
        let mut budget = self.shape.prefill_rows.max(1);
        let mut plan: Vec<(JobId, usize, bool)> = Vec::new();
        for id in &self.order {
            let r = &self.jobs[id];
            if r.fed < r.job.prompt.len() {
                if budget == 0 {
                    continue;
                }
                let n = (r.job.prompt.len() - r.fed).min(budget);
                budget -= n;
                plan.push((*id, n, r.fed + n == r.job.prompt.len()));
            } else if r.finish.is_none() {
                plan.push((*id, 0, true));
            }
        }
        let items: Vec<PrefillItem<'_>> = plan
            .iter()
            .map(|(id, n, sample)| {
                let r = &self.jobs[id];
                PrefillItem {
                    seq: r.seq,
                    tokens: &r.job.prompt[r.fed..r.fed + n],
                    sample: sample.then_some(r.job.sampling),
                }
            })
            .collect();
        let sampled = self
            .batch
            .prefill(&items)
            .map_err(|e| EngineFailure::new(e.to_string()))?;
        let mut out = Vec::new();
        for ((id, n, _), first) in plan.into_iter().zip(sampled) {
            if let Some(r) = self.jobs.get_mut(&id) {
                r.fed += n;
            }
            if let Some(t) = first {
                out.push((id, vec![t]));
            }
        }
        Ok(out)
    }

    /// Submits `steps` decode steps of every decoding job that still needs tokens beyond
    /// what decodes in flight will bring (fewer steps when a sequence would fill its
    /// context); `None` when no job does.
    fn submit_decode(&mut self, steps: u32) -> Result<Option<InFlight>, EngineFailure> {
        let ids: Vec<JobId> = self
            .order
            .iter()
            .copied()
            .filter(|id| {
                let r = &self.jobs[id];
                r.finish.is_none() && r.ids.len() + r.inflight < r.job.max_tokens
            })
            .collect();
        if ids.is_empty() {
            return Ok(None);
        }
        let mut k = steps.max(1) as usize;
        for id in &ids {
            let r = &self.jobs[id];
            let held = r.job.prompt.len() + r.ids.len() + r.inflight;
            // The pending token and k - 1 sampled ones go into the pool: stay inside it. (A job
            // nearer its max_tokens than k runs on and `take` drops the surplus: cheaper than
            // a shorter submit for every job.)
            k = k.min(self.shape.context.saturating_sub(held).max(1));
        }
        let items: Vec<DecodeItem<'_>> = ids
            .iter()
            .map(|id| {
                let r = &self.jobs[id];
                DecodeItem {
                    seq: r.seq,
                    sample: r.job.sampling,
                    stop: &r.job.stop_tokens,
                }
            })
            .collect();
        let ticket = self
            .batch
            .decode_submit(&items, k)
            .map_err(|e| EngineFailure::new(e.to_string()))?;
        for id in &ids {
            if let Some(r) = self.jobs.get_mut(id) {
                r.inflight += k;
            }
        }
        Ok(Some(InFlight {
            ticket,
            jobs: ids,
            steps: k,
        }))
    }

    /// Waits for a submitted decode and takes its ids into its jobs.
    fn finish_decode(
        &mut self,
        f: InFlight,
    ) -> Result<Vec<Progress<GenChunk, GenOutput>>, EngineFailure> {
        let decoded = self
            .batch
            .decode_finish(f.ticket)
            .map_err(|e| EngineFailure::new(e.to_string()))?;
        let mut produced = Vec::with_capacity(f.jobs.len());
        for (id, d) in f.jobs.into_iter().zip(decoded) {
            if let Some(r) = self.jobs.get_mut(&id) {
                r.inflight -= f.steps.min(r.inflight);
                produced.push((id, d.ids, d.stopped));
            }
        }
        Ok(self.apply(produced))
    }

    /// Takes produced ids into their jobs: the chunks to stream, and the jobs that finished
    /// (retired).
    fn apply(
        &mut self,
        produced: Vec<(JobId, Vec<u32>, bool)>,
    ) -> Vec<Progress<GenChunk, GenOutput>> {
        let mut progress = Vec::new();
        for (id, ids, stopped) in produced {
            if self.jobs.get(&id).is_some_and(|r| r.finish.is_some()) {
                continue;
            }
            if let Some(chunk) = self.take(id, &ids, stopped) {
                progress.push(Progress::Chunk(id, chunk));
            }
            let finish = self.jobs.get(&id).and_then(|r| r.finish);
            if let Some(finish) = finish
                && let Some(r) = self.retire(id)
            {
                progress.push(Progress::Finished(id, Self::output(r, finish)));
            }
        }
        progress
    }

    /// Finishes the decode in flight, if any; its progress waits for the next step.
    fn sync(&mut self) -> Result<(), EngineFailure> {
        if let Some(f) = self.inflight.take() {
            let progress = self.finish_decode(f)?;
            self.stash.extend(progress);
        }
        Ok(())
    }
}

/// A decode submitted and not yet finished.
struct InFlight {
    ticket: DecodeTicket,
    jobs: Vec<JobId>,
    steps: usize,
}

impl Engine for LlmEngine {
    type Job = GenJob;
    type Chunk = GenChunk;
    type Output = GenOutput;

    fn slots(&self) -> usize {
        self.shape.slots
    }

    fn admit(&mut self, id: JobId, job: GenJob) -> Result<(), (GenJob, Refusal)> {
        // The batch changes: finish the decode in flight first (its progress is reported at
        // the next step; a failure there too).
        if let Err(e) = self.sync() {
            self.failure = Some(e);
        }
        if let Err(e) = self.check(&job) {
            return Err((job, e));
        }
        let reserved = Self::pages_for(job.prompt.len() + job.max_tokens);
        // Keep the sequence to share from if that fits; else admit without sharing rather
        // than wait.
        let keep = self.best_prefix(&job.prompt).map(|(s, _)| s);
        let fits =
            (keep.is_some() && self.make_room(reserved, keep)) || self.make_room(reserved, None);
        if !fits {
            if self.jobs.is_empty() {
                let reason = format!(
                    "the prompt and max_tokens need {reserved} KV pages, the pool has {}",
                    self.batch.pool().total_pages()
                );
                return Err((job, invalid("max_tokens", reason)));
            }
            return Err((job, Refusal::Busy));
        }
        // The source may have been closed to make room: look again.
        let shared = self.best_prefix(&job.prompt);
        let opened = match shared {
            Some((src, n)) => self.batch.fork(src, n).map(|s| (s, n)),
            None => self.batch.open().map(|s| (s, 0)),
        };
        let (seq, cached) = match opened {
            Ok(x) => x,
            Err(e) => return Err((job, invalid("prompt", e.to_string()))),
        };
        if let Some(at) = shared.and_then(|(src, _)| self.retained.iter().position(|s| *s == src))
            && let Some(src) = self.retained.remove(at)
        {
            // Freshly used: to the back of the line.
            self.retained.push_back(src);
        }
        self.jobs.insert(
            id,
            Running {
                job,
                seq,
                reserved,
                fed: cached,
                inflight: 0,
                cached_tokens: cached,
                ids: Vec::new(),
                utf8: Utf8Stream::new(),
                text: String::new(),
                sent: 0,
                admitted: Instant::now(),
                first_token: None,
                finish: None,
            },
        );
        self.order.push(id);
        Ok(())
    }

    fn step(
        &mut self,
        decode_steps: u32,
    ) -> Result<Vec<Progress<GenChunk, GenOutput>>, EngineFailure> {
        if let Some(f) = self.failure.take() {
            return Err(f);
        }
        let prompts_left = self.jobs.values().any(|r| r.fed < r.job.prompt.len());
        if prompts_left {
            self.sync()?;
            let mut progress = std::mem::take(&mut self.stash);
            let produced = self
                .prefill_step()?
                .into_iter()
                .map(|(id, ids)| (id, ids, false))
                .collect();
            progress.extend(self.apply(produced));
            return Ok(progress);
        }
        // Steady decode, pipelined: submit the next decode (it continues from the ids the one
        // in flight samples, on the GPU), then wait for the one in flight and report it, so
        // the CPU records while the GPU runs.
        let mut progress = std::mem::take(&mut self.stash);
        let next = self.submit_decode(decode_steps)?;
        if let Some(prev) = self.inflight.take() {
            progress.extend(self.finish_decode(prev)?);
        }
        self.inflight = next;
        Ok(progress)
    }

    fn kv_pages(&self) -> Option<(usize, usize)> {
        let pool = self.batch.pool();
        Some((pool.total_pages() - pool.free_pages(), pool.total_pages()))
    }

    fn evict(&mut self, id: JobId) -> GenOutput {
        if let Err(e) = self.sync() {
            self.failure = Some(e);
        }
        // Its progress not yet reported goes with it (the output holds every id and the
        // text); finished in the decode just taken: its whole output.
        self.stash
            .retain(|p| !matches!(p, Progress::Chunk(c, _) if *c == id));
        if let Some(at) = self
            .stash
            .iter()
            .position(|p| matches!(p, Progress::Finished(f, _) if *f == id))
            && let Progress::Finished(_, out) = self.stash.remove(at)
        {
            return out;
        }
        match self.retire(id) {
            Some(mut r) => {
                r.text.push_str(&r.utf8.finish());
                Self::output(r, Finish::Evicted)
            }
            None => GenOutput {
                ids: Vec::new(),
                text: String::new(),
                prompt_tokens: 0,
                cached_tokens: 0,
                finish: Finish::Evicted,
                prefill_ms: 0.0,
                decode_ms: 0.0,
            },
        }
    }
}

/// Loads [`LlmEngine`]s: one GPU device and one copy of the weights each.
pub struct LlmLoader {
    models: Vec<(String, Source)>,
    shape: EngineShape,
    gpu: GpuOptions,
}

impl LlmLoader {
    /// A loader for `models` (id, resolved source), each engine of `shape`.
    pub fn new(models: Vec<(String, Source)>, shape: EngineShape) -> LlmLoader {
        LlmLoader {
            models,
            shape,
            gpu: GpuOptions::default(),
        }
    }

    /// Each engine's device opened with `gpu` (the default adapter and paths otherwise; e.g.
    /// `tensor_cores: Some(false)` for batches whose sequences compute their solo runs'
    /// numbers, [`GpuOptions::tensor_cores`]).
    pub fn with_gpu(mut self, gpu: GpuOptions) -> LlmLoader {
        self.gpu = gpu;
        self
    }

    /// A loader of one GGUF file by the id `id`.
    pub fn for_file(id: &str, path: PathBuf, shape: EngineShape) -> LlmLoader {
        let source = Source {
            gguf: path,
            context: None,
            defaults: Default::default(),
        };
        LlmLoader::new(vec![(id.to_string(), source)], shape)
    }

    /// The model ids it knows, in order.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.models.iter().map(|(id, _)| id.as_str())
    }
}

impl EngineLoader for LlmLoader {
    type Engine = LlmEngine;

    fn load(&self, model: &str) -> Result<LlmEngine, LoadFailure> {
        let Some((_, source)) = self.models.iter().find(|(id, _)| id == model) else {
            return Err(LoadFailure::UnknownModel);
        };
        let shape = self.shape;
        let sizes = (Some(shape.context), shape.kv_type);
        let loaded = loader::load(source, &self.gpu, sizes, false, &|_| {})
            .map_err(|e| LoadFailure::Failed(e.to_string()))?;
        let batch_shape = shape.batch_shape(&loaded.gpu);
        let cpu = loaded.gpu.is_cpu();
        let batch = Batch::shared(Arc::new(loaded.gpu), Arc::new(loaded.model), batch_shape)
            .map_err(|e| LoadFailure::Failed(e.to_string()))?;
        let mut engine = LlmEngine::new(batch, Arc::new(loaded.tokenizer), shape);
        if shape.precompile && !cpu {
            engine
                .precompile()
                .map_err(|e| LoadFailure::Failed(format!("compiling the kernels: {e}")))?;
        }
        Ok(engine)
    }
}
