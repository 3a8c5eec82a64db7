//! Many sequences through one forward pass. A [`Batch`] holds a [`KvPool`] shared by up to
//! `slots` sequences, one GPU token buffer in which each sequence owns a stretch (prompt ids
//! written by the CPU, sampled ids by the GPU), and the activations of a batch of rows. A row
//! is (sequence, position): decode of N sequences is N rows at their own positions, a prompt
//! chunk is many rows of one sequence, and one forward may mix both (chunked prefill beside
//! decode). Attention reads each row's own page table through the row table
//! (`attn_rows.wgsl`); every other block is row-wise.
//!
//! Multi-step decode records K forwards per submit, each sampling every row's next token on
//! the GPU into its sequence's stretch (each row with its own sampling parameters and seed)
//! for the next forward to embed; the ids come back in one readback per submit.
//!
//! What is guaranteed: a sequence's greedy ids equal those of the same sequence decoded alone
//! in a [`crate::Session`] or in a batch of any size, wherever its pages and tokens live. A
//! forward of one row runs the single-sequence path itself (GEMVs, split-K decode attention
//! over the sequence's own page table), so a batch of one has the session's logits bit for
//! bit and its speed; a forward of many rows uses the GEMM kernels and matches to the
//! tolerance of a different summation (both checked against an f64 CPU forward pass in
//! `tests/llm_tiny.rs`).
//!
//! Stop tokens are per sequence ([`DecodeItem::stop`]): a sequence that samples one ends
//! there within the submit; the steps it ran past it are dropped from the pool.
//!
//! One submit reads back only the ids it sampled (gathered side by side on the GPU).
//!
//! ```no_run
//! use gpuport_runtime::gguf::Gguf;
//! use gpuport_llm::{Batch, BatchShape, DecodeItem, Model, PrefillItem, Sampling, Tokenizer};
//! use gpuport_runtime::{Gpu, GpuOptions};
//!
//! let gpu = Gpu::new(&GpuOptions::default())?;
//! let g = Gguf::open("models/SmolLM2-135M-Instruct.Q4_1.gguf".as_ref())?;
//! let tok = Tokenizer::from_gguf(&g)?;
//! let model = Model::load(&gpu, &g, 1024)?;
//! let shape = BatchShape { slots: 8, seq_capacity: 1024, pages: 64, max_rows: 256 };
//! let mut batch = Batch::new(&gpu, &model, shape)?;
//! let system = tok.encode("You are terse.", true, true);
//! let root = batch.open()?;
//! batch.prefill(&[PrefillItem { seq: root, tokens: &system, sample: None }])?;
//! let questions = ["Capital of France?", "Two plus two?"];
//! let seqs: Vec<_> = questions.iter().map(|_| batch.fork(root, system.len())).collect::<Result<_, _>>()?;
//! let asks: Vec<Vec<u32>> = questions.iter().map(|q| tok.encode(q, false, true)).collect();
//! let items: Vec<PrefillItem> = seqs.iter().zip(&asks).map(|(s, q)| PrefillItem {
//!     seq: *s, tokens: q, sample: Some(Sampling::GREEDY),
//! }).collect();
//! let first = batch.prefill(&items)?;
//! let stop = gpuport_llm::stop_tokens(&tok);
//! let decoding: Vec<DecodeItem> = seqs.iter().map(|s| DecodeItem {
//!     seq: *s, sample: Sampling::GREEDY, stop: &stop,
//! }).collect();
//! let steps = batch.decode(&decoding, 16)?;
//! for (first, rest) in first.into_iter().zip(steps) {
//!     let ids: Vec<u32> = first.into_iter().chain(rest.ids).collect();
//!     println!("{}", String::from_utf8_lossy(&tok.decode(&ids, false)));
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::HashMap;
use std::sync::Arc;

use super::error::LlmError;
use super::kv_cache::{KvPool, SeqId};
use super::model::{Model, Rows, Scratch};
use super::prefill::{BatchRows, BatchScratch};
use super::session::{SamplerTensors, Sampling, record_sample};
use gpuport_kernels::rowops;
use gpuport_kernels::sample;
use gpuport_runtime::device::Gpu;
use gpuport_runtime::ops::{self, GemmCall};
use gpuport_runtime::recorder::Recorder;
use gpuport_runtime::tensor::{Elem, PendingReadback, Tensor};

/// The shape of a [`Batch`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchShape {
    /// Sequences open at once.
    pub slots: usize,
    /// Positions one sequence can hold.
    pub seq_capacity: usize,
    /// KV pages in the pool (each [`crate::kv_cache::DEFAULT_PAGE`] positions); sequences
    /// share them.
    pub pages: usize,
    /// Rows one forward pass takes (prompt chunks are split to this).
    pub max_rows: usize,
}

/// Words of the row table per row: position, page-table base, token index, 0.
const ROW_WORDS: usize = 4;

/// Logits rows are this many floats apart (256-byte aligned views).
const LOGITS_ALIGN: usize = 64;

/// One sequence's part of a [`Batch::prefill`] call.
#[derive(Debug, Clone)]
pub struct PrefillItem<'a> {
    /// The sequence.
    pub seq: SeqId,
    /// Tokens to append after the sequence's pending token (if it has one, it runs first).
    pub tokens: &'a [u32],
    /// Sample the token after the last one, with these parameters; it becomes the sequence's
    /// pending token.
    pub sample: Option<Sampling>,
}

/// One sequence's part of a [`Batch::decode`] call.
#[derive(Debug, Clone, Copy)]
pub struct DecodeItem<'a> {
    /// The sequence (it has a pending token).
    pub seq: SeqId,
    /// Its sampling parameters and seed.
    pub sample: Sampling,
    /// Tokens that end it: the first one sampled is the last id returned.
    pub stop: &'a [u32],
}

/// What [`Batch::decode`] produced for one sequence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    /// The new ids, in order; when `stopped`, the last is the stop token.
    pub ids: Vec<u32>,
    /// Whether a stop token ended it (the steps after it are discarded).
    pub stopped: bool,
}

/// A decode submitted by [`Batch::decode_submit`]; [`Batch::decode_finish`] takes its ids.
#[must_use = "a submitted decode's ids are taken by Batch::decode_finish"]
pub struct DecodeTicket {
    serial: u64,
    /// (sequence, its stop tokens) per row, in order.
    seqs: Vec<(SeqId, Vec<u32>)>,
    steps: usize,
    readback: Option<(PendingReadback, usize)>,
}

/// A sequence's host-side state.
#[derive(Debug, Clone, Default)]
struct SeqState {
    /// Tokens whose keys and values are in the pool, by position.
    cached: Vec<u32>,
    /// The sampled token after them, not yet run (with decodes in flight: the one their
    /// last finished predecessor sampled).
    pending: Option<u32>,
    /// Positions run by decodes submitted and not yet finished.
    inflight: usize,
    /// A finished decode stopped it while later ones were in flight: their ids are dropped.
    past_stop: bool,
}

/// A GPU or model a [`Batch`] borrows (`Batch<'m>`) or shares ([`Batch::shared`], a
/// `Batch<'static>` that can move to another thread, as an engine's does).
enum Held<'m, T> {
    Borrowed(&'m T),
    Shared(Arc<T>),
}

impl<T> std::ops::Deref for Held<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        match self {
            Held::Borrowed(t) => t,
            Held::Shared(t) => t,
        }
    }
}

/// Many sequences of one model on the GPU.
pub struct Batch<'m> {
    gpu: Held<'m, Gpu>,
    model: Held<'m, Model>,
    pool: KvPool,
    shape: BatchShape,
    /// The token buffer (u32, `slots × token_stride`).
    tokens: Tensor,
    token_stride: usize,
    scratch: BatchScratch,
    /// Each row's token id (u32, `max_rows`).
    ids: Tensor,
    /// The output-normed rows whose logits are wanted (`[slots, hidden]`).
    wanted: Tensor,
    /// Their logits (`[slots, logits_stride]`).
    logits: Tensor,
    logits_stride: usize,
    probs: Tensor,
    sample_part: Tensor,
    argmax_part: Tensor,
    sampled: Tensor,
    /// Row tables of the forwards of one submit (u32), then the token-buffer indices it
    /// reads back; grown as needed.
    table: Tensor,
    /// The ids a submit reads back, gathered from the token buffer (u32), grown as needed.
    readout: Tensor,
    /// The activations of a one-row forward, which runs the single-sequence (GEMV) path;
    /// its logits are row 0 of `logits`.
    single: Scratch,
    seqs: HashMap<SeqId, SeqState>,
    /// Time every dispatch of each submit (needs timestamps inside passes); the
    /// (kernel, nanoseconds) of the last submit land in `dispatch_profile`.
    pub profile_dispatches: bool,
    /// Per-dispatch times of the last submit, when `profile_dispatches`.
    pub dispatch_profile: Vec<(String, f64)>,
    /// Decodes submitted and finished (tickets finish in order).
    submitted: u64,
    finished: u64,
}

/// What [`Batch::precompile`] did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Precompiled {
    /// Forward shapes recorded.
    pub forwards: usize,
    /// Pipelines compiled (the others were compiled already, or came from the disk cache
    /// without a compile).
    pub pipelines: usize,
    /// Wall time.
    pub seconds: f64,
}

/// One forward pass of a submit: its rows and the rows whose logits are sampled.
struct Forward {
    /// (sequence, position, token index) per row.
    rows: Vec<(SeqId, usize, usize)>,
    /// Per sampled row: its index in `rows` and the sampling parameters.
    sampled: Vec<(usize, Sampling)>,
}

impl Batch<'static> {
    /// A batch runner that shares the GPU and the model (it owns its handles, so it can move
    /// to the thread that drives it).
    pub fn shared(
        gpu: Arc<Gpu>,
        model: Arc<Model>,
        shape: BatchShape,
    ) -> Result<Batch<'static>, LlmError> {
        Batch::with(Held::Shared(gpu), Held::Shared(model), shape)
    }
}

impl<'m> Batch<'m> {
    /// A batch runner of the given shape on `model`.
    pub fn new(gpu: &'m Gpu, model: &'m Model, shape: BatchShape) -> Result<Batch<'m>, LlmError> {
        Batch::with(Held::Borrowed(gpu), Held::Borrowed(model), shape)
    }

    fn with(
        gpu: Held<'m, Gpu>,
        model: Held<'m, Model>,
        shape: BatchShape,
    ) -> Result<Batch<'m>, LlmError> {
        let c = &model.cfg;
        if shape.max_rows == 0 || shape.slots == 0 || shape.seq_capacity == 0 {
            return Err(LlmError::Request(format!("a batch of shape {shape:?}")));
        }
        let page = super::kv_cache::DEFAULT_PAGE;
        let pool = KvPool::new(
            &gpu,
            c,
            (shape.slots, shape.seq_capacity),
            shape.pages,
            (page, model.kv_type()),
        )?;
        let token_stride = (shape.seq_capacity + 1).div_ceil(LOGITS_ALIGN) * LOGITS_ALIGN;
        let u32s = |n: usize, what: &str| gpu.upload(&vec![0u8; 4 * n], Elem::U32, &[n], what);
        let logits_stride = c.vocab.div_ceil(LOGITS_ALIGN) * LOGITS_ALIGN;
        let logits = gpu.zeros_f32(&[shape.slots * logits_stride], "batch logits")?;
        let mut single = Scratch::new(&gpu, c, shape.seq_capacity)?;
        single.logits = logits.view(0, c.vocab);
        Ok(Batch {
            pool,
            shape,
            tokens: u32s(shape.slots * token_stride, "batch tokens")?,
            token_stride,
            scratch: BatchScratch::new(&gpu, &model, shape.max_rows, true)?,
            ids: u32s(shape.max_rows, "batch row ids")?,
            wanted: gpu.zeros_f32(&[shape.slots * c.embd], "batch sampled rows")?,
            logits,
            logits_stride,
            probs: gpu.zeros_f32(&[c.vocab], "batch probabilities")?,
            sample_part: gpu.zeros_f32(&[sample::scratch_words(c.vocab)], "batch sampler")?,
            argmax_part: u32s(
                2 * rowops::ARGMAX_GROUPS as usize * shape.slots.max(1),
                "batch argmax partials",
            )?,
            sampled: u32s(2, "batch sampled")?,
            table: u32s(1024, "batch row tables")?,
            readout: u32s(64, "batch readout")?,
            single,
            seqs: HashMap::new(),
            profile_dispatches: false,
            dispatch_profile: Vec::new(),
            submitted: 0,
            finished: 0,
            gpu,
            model,
        })
    }

    /// The model it runs.
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// The shape it was made with.
    pub fn shape(&self) -> BatchShape {
        self.shape
    }

    /// The KV pool (page accounting).
    pub fn pool(&self) -> &KvPool {
        &self.pool
    }

    /// Opens an empty sequence.
    pub fn open(&mut self) -> Result<SeqId, LlmError> {
        let id = self.pool.open()?;
        self.seqs.insert(id, SeqState::default());
        Ok(id)
    }

    /// Opens a sequence that starts with the first `len` cached positions of `src`, sharing
    /// their KV pages (a common prompt prefix is prefilled once).
    pub fn fork(&mut self, src: SeqId, len: usize) -> Result<SeqId, LlmError> {
        let from = self.state(src)?;
        let len = len.min(from.cached.len());
        let prefix = from.cached[..len].to_vec();
        let id = self.pool.fork(&self.gpu, src, len)?;
        self.write_tokens(id, 0, &prefix);
        self.seqs.insert(
            id,
            SeqState {
                cached: prefix,
                ..SeqState::default()
            },
        );
        Ok(id)
    }

    /// Ends a sequence; its pages lose its reference.
    pub fn close(&mut self, seq: SeqId) -> Result<(), LlmError> {
        self.state(seq)?;
        self.pool.close(seq)?;
        self.seqs.remove(&seq);
        Ok(())
    }

    /// Keeps the first `len` cached positions of `seq` and drops its pending token.
    pub fn truncate(&mut self, seq: SeqId, len: usize) -> Result<(), LlmError> {
        let s = self.state_mut(seq)?;
        if s.inflight > 0 {
            return Err(LlmError::Request(format!(
                "sequence {} has a decode in flight",
                seq.0
            )));
        }
        s.cached.truncate(len);
        s.pending = None;
        let keep = s.cached.len();
        self.pool.truncate(seq, keep)?;
        Ok(())
    }

    /// The tokens whose keys and values `seq` holds.
    pub fn cached(&self, seq: SeqId) -> Result<&[u32], LlmError> {
        Ok(&self.state(seq)?.cached)
    }

    /// The sampled token after them, not yet run.
    pub fn pending(&self, seq: SeqId) -> Result<Option<u32>, LlmError> {
        Ok(self.state(seq)?.pending)
    }

    /// The logits of the sampled rows of the last forward pass of the last call, in order
    /// (for [`Batch::prefill`] in one forward: one per sampling item; for
    /// [`Batch::decode`]: the last step's, one per sequence).
    pub fn last_logits(&self, rows: usize) -> Result<Vec<Vec<f32>>, LlmError> {
        let rows = rows.min(self.shape.slots);
        let all = self.gpu.readback_f32(&self.logits)?;
        let vocab = self.model.cfg.vocab;
        Ok((0..rows)
            .map(|r| all[r * self.logits_stride..r * self.logits_stride + vocab].to_vec())
            .collect())
    }

    fn state(&self, seq: SeqId) -> Result<&SeqState, LlmError> {
        self.seqs
            .get(&seq)
            .ok_or_else(|| LlmError::Request(format!("sequence {} is not open", seq.0)))
    }

    fn state_mut(&mut self, seq: SeqId) -> Result<&mut SeqState, LlmError> {
        self.seqs
            .get_mut(&seq)
            .ok_or_else(|| LlmError::Request(format!("sequence {} is not open", seq.0)))
    }

    fn token_base(&self, seq: SeqId) -> usize {
        seq.0 as usize * self.token_stride
    }

    fn write_tokens(&self, seq: SeqId, pos: usize, ids: &[u32]) {
        if ids.is_empty() {
            return;
        }
        let at = self.token_base(seq) + pos;
        self.gpu.queue.write_buffer(
            &self.tokens.buffer,
            self.tokens.offset + 4 * at as u64,
            bytemuck::cast_slice(ids),
        );
    }

    /// Appends each item's tokens to its sequence (after its pending token), all sequences'
    /// rows in shared forward passes of up to `max_rows` rows, and samples the next token of
    /// the items that ask (returned in order, `None` for the others; it becomes the
    /// sequence's pending token). One submit, one readback.
    pub fn prefill(&mut self, items: &[PrefillItem<'_>]) -> Result<Vec<Option<u32>>, LlmError> {
        let vocab = self.model.cfg.vocab as u32;
        let mut rows = Vec::new();
        let mut sampled = Vec::new();
        let mut plans = Vec::new();
        for (i, item) in items.iter().enumerate() {
            if let Some(s) = &item.sample {
                s.check()?;
            }
            if let Some(bad) = item.tokens.iter().find(|t| **t >= vocab) {
                return Err(LlmError::Request(format!(
                    "token id {bad} is outside the vocabulary of {vocab}"
                )));
            }
            if items[..i].iter().any(|o| o.seq == item.seq) {
                return Err(LlmError::Request(format!(
                    "sequence {} appears twice in one prefill",
                    item.seq.0
                )));
            }
            let st = self.state(item.seq)?;
            if st.inflight > 0 {
                return Err(LlmError::Request(format!(
                    "sequence {} has a decode in flight",
                    item.seq.0
                )));
            }
            let mut new: Vec<u32> = st.pending.into_iter().collect();
            new.extend_from_slice(item.tokens);
            if new.is_empty() {
                return Err(LlmError::Request(format!(
                    "sequence {} has no token to run",
                    item.seq.0
                )));
            }
            let start = st.cached.len();
            if start + new.len() > self.shape.seq_capacity {
                return Err(LlmError::Request(format!(
                    "sequence {} would hold {} positions, the context holds {}",
                    item.seq.0,
                    start + new.len(),
                    self.shape.seq_capacity
                )));
            }
            let base = self.token_base(item.seq);
            for (j, _) in new.iter().enumerate() {
                rows.push((item.seq, start + j, base + start + j));
            }
            if let Some(s) = item.sample {
                sampled.push((rows.len() - 1, s, i));
            }
            plans.push((item.seq, start, new));
        }
        // Back every sequence's new positions (the pool refuses before anything is written
        // when pages run out) and write the prompt ids.
        let grow: Vec<(SeqId, usize)> = plans
            .iter()
            .map(|(seq, _, new)| (*seq, new.len()))
            .collect();
        self.extend_all(&grow)?;
        for (seq, start, new) in &plans {
            self.write_tokens(*seq, *start, new);
        }
        // Forwards of up to max_rows rows, the sampled rows each in the forward holding it.
        let mut forwards = Vec::new();
        for (f, chunk) in rows.chunks(self.shape.max_rows).enumerate() {
            let first = f * self.shape.max_rows;
            forwards.push(Forward {
                rows: chunk.to_vec(),
                sampled: sampled
                    .iter()
                    .filter(|(r, _, _)| (first..first + chunk.len()).contains(r))
                    .map(|(r, s, _)| (r - first, *s))
                    .collect(),
            });
        }
        let result = self.run(&forwards, &sampled_positions(&rows, &sampled));
        let ids = match result {
            Ok(ids) => ids,
            Err(e) => {
                self.roll_back(grow.iter().map(|(seq, _)| *seq))?;
                return Err(e);
            }
        };
        let mut out = vec![None; items.len()];
        for (seq, _, new) in plans {
            let st = self.state_mut(seq)?;
            st.cached.extend_from_slice(&new);
            st.pending = None;
        }
        for ((_, _, item), id) in sampled.iter().zip(ids) {
            out[*item] = Some(id);
            self.state_mut(items[*item].seq)?.pending = Some(id);
        }
        Ok(out)
    }

    /// `steps` decode steps of every listed sequence in one submit: each step runs each
    /// sequence's pending token and samples the next on the GPU (with that sequence's
    /// parameters and seed) for the following step. Returns each sequence's new tokens —
    /// `steps` of them, or up to and including the first of its stop tokens, after which its
    /// remaining steps are discarded (the pool keeps only the positions before the stop) —
    /// and the last id becomes its pending token. [`Batch::decode_submit`] then
    /// [`Batch::decode_finish`].
    pub fn decode(
        &mut self,
        items: &[DecodeItem<'_>],
        steps: usize,
    ) -> Result<Vec<Decoded>, LlmError> {
        let ticket = self.decode_submit(items, steps)?;
        self.decode_finish(ticket)
    }

    /// Submits a [`Batch::decode`] and returns at once: the GPU runs it while the caller
    /// records (and submits) the next one, which continues from the ids this one samples
    /// without waiting for them (they stay on the GPU). Tickets are finished in the order
    /// they were submitted.
    pub fn decode_submit(
        &mut self,
        items: &[DecodeItem<'_>],
        steps: usize,
    ) -> Result<DecodeTicket, LlmError> {
        let mut starts = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            item.sample.check()?;
            if items[..i].iter().any(|o| o.seq == item.seq) {
                return Err(LlmError::Request(format!(
                    "sequence {} appears twice in one decode",
                    item.seq.0
                )));
            }
            let st = self.state(item.seq)?;
            // With a decode in flight the pending token is the one it samples last, on the
            // GPU already.
            let pending = match (st.inflight, st.pending) {
                (0, Some(p)) => Some(p),
                (0, None) => {
                    return Err(LlmError::Request(format!(
                        "sequence {} has no sampled token to decode from",
                        item.seq.0
                    )));
                }
                _ => None,
            };
            let start = st.cached.len() + st.inflight;
            if start + steps > self.shape.seq_capacity {
                return Err(LlmError::Request(format!(
                    "sequence {} would hold {} positions, the context holds {}",
                    item.seq.0,
                    start + steps,
                    self.shape.seq_capacity
                )));
            }
            starts.push((start, pending));
        }
        let serial = self.submitted;
        let ticket = |readback| DecodeTicket {
            serial,
            seqs: items.iter().map(|i| (i.seq, i.stop.to_vec())).collect(),
            steps,
            readback,
        };
        if steps == 0 || items.is_empty() {
            self.submitted += 1;
            return Ok(ticket(None));
        }
        if items.len() > self.shape.max_rows {
            return Err(LlmError::Request(format!(
                "{} sequences in one decode, a forward takes {} rows",
                items.len(),
                self.shape.max_rows
            )));
        }
        let grow: Vec<(SeqId, usize)> = items.iter().map(|i| (i.seq, steps)).collect();
        self.extend_all(&grow)?;
        for (item, (start, pending)) in items.iter().zip(&starts) {
            if let Some(p) = pending {
                self.write_tokens(item.seq, *start, &[*p]);
            }
        }
        let forwards: Vec<Forward> = (0..steps)
            .map(|k| Forward {
                rows: items
                    .iter()
                    .zip(&starts)
                    .map(|(item, (start, _))| {
                        (item.seq, start + k, self.token_base(item.seq) + start + k)
                    })
                    .collect(),
                sampled: items
                    .iter()
                    .enumerate()
                    .map(|(r, item)| (r, item.sample))
                    .collect(),
            })
            .collect();
        // Read back, per sequence, the ids after each of its steps' positions.
        let wanted: Vec<usize> = (0..steps)
            .flat_map(|k| {
                items
                    .iter()
                    .zip(&starts)
                    .map(move |(item, (start, _))| (item.seq, start + k + 1))
            })
            .map(|(seq, pos)| self.token_base(seq) + pos)
            .collect();
        let readback = match self.submit_forwards(&forwards, &wanted) {
            Ok(r) => r,
            Err(e) => {
                self.roll_back(grow.iter().map(|(seq, _)| *seq))?;
                return Err(e);
            }
        };
        for item in items {
            self.state_mut(item.seq)?.inflight += steps;
        }
        self.submitted += 1;
        Ok(ticket(readback))
    }

    /// Waits for a [`Batch::decode_submit`] and takes its ids, as [`Batch::decode`] returns
    /// them. A sequence that stopped in an earlier ticket gets no ids from a later one (its
    /// rows there ran past the stop and are dropped); a sequence closed meanwhile is skipped
    /// (an empty, stopped result).
    pub fn decode_finish(&mut self, ticket: DecodeTicket) -> Result<Vec<Decoded>, LlmError> {
        if ticket.serial != self.finished {
            return Err(LlmError::Request(format!(
                "decode {} finished before decode {}",
                ticket.serial, self.finished
            )));
        }
        self.finished += 1;
        let ids: Vec<u32> = match ticket.readback {
            Some((r, _)) => bytemuck::pod_collect_to_vec(&self.gpu.finish_readback(r)?),
            None => Vec::new(),
        };
        // `ids` is step-major: step k's id of sequence i at k * N + i.
        let (n, steps) = (ticket.seqs.len(), ticket.steps);
        let mut out = Vec::with_capacity(n);
        for (i, (seq, stops)) in ticket.seqs.iter().enumerate() {
            let dropped = Decoded {
                ids: Vec::new(),
                stopped: true,
            };
            let Some(st) = self.seqs.get_mut(seq) else {
                out.push(dropped);
                continue;
            };
            st.inflight -= steps.min(st.inflight);
            if st.past_stop {
                st.past_stop = st.inflight > 0;
                out.push(dropped);
                continue;
            }
            let mut mine: Vec<u32> = (0..steps).map(|k| ids[k * n + i]).collect();
            let stop = mine.iter().position(|t| stops.contains(t));
            if let Some(at) = stop {
                mine.truncate(at + 1);
            }
            if let Some(p) = st.pending.take() {
                st.cached.push(p);
            }
            if let Some((last, rest)) = mine.split_last() {
                st.cached.extend_from_slice(rest);
                st.pending = Some(*last);
            }
            if stop.is_some() {
                // Steps past the stop (here and in decodes still in flight) are dropped;
                // the GPU finishes writing them before any later submit reuses the pages.
                st.past_stop = st.inflight > 0;
                let keep = st.cached.len();
                self.pool.truncate(*seq, keep)?;
            }
            out.push(Decoded {
                ids: mine,
                stopped: stop.is_some(),
            });
        }
        Ok(out)
    }

    /// Backs `n` more positions of each listed sequence, or none of them (the pool refuses
    /// before anything is written when pages run out).
    fn extend_all(&mut self, grow: &[(SeqId, usize)]) -> Result<(), LlmError> {
        for (i, (seq, n)) in grow.iter().enumerate() {
            if let Err(e) = self.pool.extend(&self.gpu, *seq, *n) {
                self.roll_back(grow[..i].iter().map(|(seq, _)| *seq))?;
                return Err(e.into());
            }
        }
        Ok(())
    }

    /// Gives back the positions of `seqs` past what they hold and what decodes in flight
    /// hold for them (after a failed call).
    fn roll_back(&mut self, seqs: impl Iterator<Item = SeqId>) -> Result<(), LlmError> {
        for seq in seqs {
            let st = self.state(seq)?;
            let keep = st.cached.len() + st.inflight;
            self.pool.truncate(seq, keep)?;
        }
        Ok(())
    }

    /// Records `forwards` in one submit and reads back the token buffer at `read` (absolute
    /// indices).
    fn run(&mut self, forwards: &[Forward], read: &[usize]) -> Result<Vec<u32>, LlmError> {
        match self.submit_forwards(forwards, read)? {
            Some((r, _)) => Ok(bytemuck::pod_collect_to_vec(&self.gpu.finish_readback(r)?)),
            None => Ok(Vec::new()),
        }
    }

    /// Records `forwards` in one submit and starts the readback of the token buffer at `read`
    /// (absolute indices), gathered side by side.
    fn submit_forwards(
        &mut self,
        forwards: &[Forward],
        read: &[usize],
    ) -> Result<Option<(PendingReadback, usize)>, LlmError> {
        // Row tables of every forward, one after another: rows, then sampled row indices.
        let mut words: Vec<u32> = Vec::new();
        let mut at = Vec::with_capacity(forwards.len());
        for f in forwards {
            // Each forward's rows start on a whole row of the table (the attention kernels
            // index it by row).
            words.resize(words.len().div_ceil(ROW_WORDS) * ROW_WORDS, 0);
            let first = words.len();
            for (seq, pos, token) in &f.rows {
                words.extend([*pos as u32, self.pool.table_base(*seq), *token as u32, 0]);
            }
            let picks = words.len();
            words.extend(f.sampled.iter().map(|(r, _)| *r as u32));
            at.push((first, picks));
        }
        // Then the token-buffer indices to read back: one gather after the forwards puts
        // them side by side, and only they cross to the host.
        let read_at = words.len();
        words.extend(read.iter().map(|i| *i as u32));
        self.reserve_table(words.len())?;
        self.gpu.queue.write_buffer(
            &self.table.buffer,
            self.table.offset,
            bytemuck::cast_slice(&words),
        );
        if read.len() > self.readout.shape[0] {
            let n = read.len().next_power_of_two();
            self.readout = self
                .gpu
                .upload(&vec![0u8; 4 * n], Elem::U32, &[n], "batch readout")?;
        }
        let mut rec = if self.profile_dispatches {
            Recorder::profiling_dispatches(&self.gpu)?
        } else {
            Recorder::new(&self.gpu)
        };
        for (f, (first, picks)) in forwards.iter().zip(at) {
            self.record_forward(&mut rec, f, first, picks)?;
        }
        let readout = self.readout.view(0, read.len().max(1));
        let ids = ops::Gather {
            src: &self.tokens,
            idx: &self.table,
            idx_first: read_at,
            idx_stride: 1,
            dst: &readout,
            rows: read.len(),
            width: 1,
        };
        ops::gather(&self.gpu, &mut rec, ids)?;
        rec.submit()?;
        if self.profile_dispatches {
            self.dispatch_profile = rec.dispatch_times_ns().to_vec();
        }
        if read.is_empty() {
            return Ok(None);
        }
        Ok(Some((self.gpu.start_readback(&readout)?, read.len())))
    }

    /// Grows the row-table buffer to hold `words` words (its contents are written before each
    /// submit).
    fn reserve_table(&mut self, words: usize) -> Result<(), LlmError> {
        if words > self.table.shape[0] {
            let n = words.next_power_of_two();
            self.table = self
                .gpu
                .upload(&vec![0u8; 4 * n], Elem::U32, &[n], "batch row tables")?;
        }
        Ok(())
    }

    /// Compiles every pipeline a forward of this batch can run, so that no request meets a
    /// compile mid-stream (1–45 ms a variant on lavapipe, more on some drivers; with the
    /// disk cache each is a load): kernel variants change with the rows a forward takes
    /// (few-row, tensor-core and tiled GEMMs, split sums, the output head's rows), with the
    /// keys its rows hold (the row tables' split path and its combine, the single-sequence
    /// decode attention's splits) and with sampling (argmax, the sampler's stages).
    ///
    /// Each shape is recorded into a [`Recorder::compile_only`] recorder — the forward's
    /// ops choose their kernels as for real, and nothing is dispatched, uploaded or written —
    /// so it costs the compiles and host time only: every row count from 1 to
    /// [`BatchShape::max_rows`], each with its keys at 1 and at the context (and at powers of
    /// 4 between for up to [`BatchShape::slots`] rows, where decode lives), every sampled-row
    /// count, greedy and with every sampler stage. Sequences and pages are untouched.
    pub fn precompile(&mut self) -> Result<Precompiled, LlmError> {
        let started = std::time::Instant::now();
        let before = self.gpu.pipelines.len();
        let (slots, capacity, max_rows) = (
            self.shape.slots,
            self.shape.seq_capacity,
            self.shape.max_rows,
        );
        self.reserve_table(ROW_WORDS * max_rows + slots)?;
        let greedy = Sampling::GREEDY;
        // Every sampler stage: the penalty, top-k's and top-p's selections, the draw.
        let sampler = Sampling {
            temperature: 1.0,
            top_k: 40,
            top_p: 0.9,
            repeat_penalty: 1.1,
            ..Sampling::GREEDY
        };
        let mut keys = vec![1, capacity];
        keys.extend((1..).map(|k| 4usize.pow(k)).take_while(|&k| k < capacity));
        keys.sort_unstable();
        // (rows, keys, sampled rows, sampling)
        let mut shapes: Vec<(usize, usize, usize, Sampling)> = Vec::new();
        for n in 1..=max_rows {
            let m = n.min(slots);
            let span: &[usize] = if n <= slots { &keys } else { &[1, capacity] };
            shapes.extend(span.iter().map(|&k| (n, k, m, greedy)));
        }
        // A one-row forward without logits (a prompt's last chunk of one token that samples
        // nothing), one sampled row among several, and the sampler.
        shapes.push((1, 1, 0, greedy));
        if max_rows > 1 {
            shapes.push((2, 1, 1, greedy));
            shapes.push((2, 1, 2.min(slots), sampler));
        }
        shapes.push((1, 1, 1, sampler));
        let mut rec = Recorder::compile_only(&self.gpu);
        for &(n, k, m, s) in &shapes {
            // Row r of sequence r % slots at position k - 1: the row table's keys are k.
            let rows = (0..n)
                .map(|r| {
                    let seq = SeqId((r % slots) as u32);
                    (seq, k - 1, self.token_base(seq) + k - 1)
                })
                .collect();
            let f = Forward {
                rows,
                sampled: (n - m..n).map(|r| (r, s)).collect(),
            };
            self.record_forward(&mut rec, &f, 0, ROW_WORDS * n)?;
        }
        Ok(Precompiled {
            forwards: shapes.len(),
            pipelines: self.gpu.pipelines.len() - before,
            seconds: started.elapsed().as_secs_f64(),
        })
    }

    /// Records one forward whose row table starts at word `first` of `self.table` and whose
    /// sampled-row list starts at word `picks`.
    fn record_forward(
        &self,
        rec: &mut Recorder<'_>,
        f: &Forward,
        first: usize,
        picks: usize,
    ) -> Result<(), LlmError> {
        let (gpu, model) = (&*self.gpu, &*self.model);
        let c = &model.cfg;
        let n = f.rows.len();
        if n == 1 {
            return self.record_single_row(rec, f);
        }
        model.check_batch(&self.scratch, n)?;
        // Each row's token id, then its embedding.
        let ids = self.ids.view(0, n);
        let row_ids = ops::Gather {
            src: &self.tokens,
            idx: &self.table,
            idx_first: first + 2,
            idx_stride: ROW_WORDS,
            dst: &ids,
            rows: n,
            width: 1,
        };
        ops::gather(gpu, rec, row_ids)?;
        let x = self.scratch.x.view(0, n * c.embd);
        let embed = ops::Embed {
            table: &model.weights.embd,
            ids: &ids,
            id_offset: 0,
            out: &x,
            scale: c.embed_scale,
        };
        ops::embed(gpu, rec, embed)?;
        let rows = BatchRows::Table {
            pool: &self.pool,
            table: &self.table,
            first: (first / ROW_WORDS) as u32,
            keys: f.rows.iter().map(|r| r.1 + 1).max().unwrap_or(1) as u32,
        };
        let Some(last) = model.record_layers(gpu, rec, &self.scratch, n, rows)? else {
            return Ok(());
        };
        let m = f.sampled.len();
        if m == 0 {
            return Ok(());
        }
        // The sampled rows' normed activations, their logits, and a token each.
        let wanted = self.wanted.view(0, m * c.embd);
        let picked = ops::Gather {
            src: &last,
            idx: &self.table,
            idx_first: picks,
            idx_stride: 1,
            dst: &wanted,
            rows: m,
            width: c.embd,
        };
        ops::gather(gpu, rec, picked)?;
        let out = &model.weights.output;
        let (input, x, x_stride) = model.rows_input(
            gpu,
            rec,
            std::slice::from_ref(out),
            (&wanted, c.embd),
            m,
            Some(&self.scratch.xq),
        )?;
        let call = GemmCall {
            w: out,
            x: &x,
            y: &self.logits,
            tokens: m,
            x_stride,
            y_stride: self.logits_stride,
            y_first: 0,
            residual: None,
            bias: None,
            input,
            norm: None,
        };
        ops::gemm(gpu, rec, call, model.gemm_tile(out))?;
        if m > 1 && f.sampled.iter().all(|(_, s)| s.is_argmax()) {
            // Every sampled row greedy: one argmax over all of them.
            let call = ops::ArgmaxRows {
                x: &self.logits,
                vocab: c.vocab,
                x_stride: self.logits_stride,
                rows: m,
                part: &self.argmax_part,
                tokens: &self.tokens,
                table: &self.table,
                rows_first: first / ROW_WORDS,
                picks,
            };
            ops::argmax_rows(gpu, rec, call)?;
            return Ok(());
        }
        for (i, (row, s)) in f.sampled.iter().enumerate() {
            let (seq, pos, _) = f.rows[*row];
            let logits = self.logits.view(i * self.logits_stride, c.vocab);
            let on = SamplerTensors {
                logits: &logits,
                probs: &self.probs,
                part: &self.sample_part,
                argmax_part: &self.argmax_part,
                sampled: &self.sampled,
                tokens: &self.tokens,
            };
            record_sample(gpu, rec, on, (self.token_base(seq), pos), s)?;
        }
        Ok(())
    }
}

impl Batch<'_> {
    /// Records a one-row forward through the single-sequence path (GEMVs, split-K decode
    /// attention over the sequence's own page table): a batch of one decodes as fast as a
    /// [`crate::Session`], with the same logits.
    fn record_single_row(&self, rec: &mut Recorder<'_>, f: &Forward) -> Result<(), LlmError> {
        let (seq, pos, _) = f.rows[0];
        let base = self.token_base(seq);
        let ids = self.tokens.view(base, self.token_stride);
        let kv = self.pool.seq_kv(seq);
        let sample = f.sampled.first();
        let rows = Rows::Ids(&ids);
        let logits = sample.is_some();
        self.model
            .record_token(&self.gpu, rec, &self.single, rows, &kv, pos, logits)?;
        if let Some((_, s)) = sample {
            let on = SamplerTensors {
                logits: &self.single.logits,
                probs: &self.probs,
                part: &self.sample_part,
                argmax_part: &self.argmax_part,
                sampled: &self.sampled,
                tokens: &self.tokens,
            };
            record_sample(&self.gpu, rec, on, (base, pos), s)?;
        }
        Ok(())
    }
}

/// The token-buffer indices the sampled rows write (`rows[r].2 + 1`).
fn sampled_positions(
    rows: &[(SeqId, usize, usize)],
    sampled: &[(usize, Sampling, usize)],
) -> Vec<usize> {
    sampled.iter().map(|(r, _, _)| rows[*r].2 + 1).collect()
}
