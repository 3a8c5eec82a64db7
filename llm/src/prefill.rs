//! Prefill: a prompt's tokens through the layers as one batch per chunk. Tiled GEMMs decode
//! each weight once per tile of tokens (the decode step decodes it once per token), attention
//! is causal over the batch, and what stays is the batch's keys and values in the cache. A
//! session's batched prompt of two or more new positions runs its last token in its last batch
//! too, the logits from that batch's last output-normed row; one new position (a prompt whose
//! head was cached) or a prompt token by token ends with a decode step.

use gpuport_kernels::gemv::GemvInput;
use gpuport_kernels::rowops::NormKind;

use super::kv_cache::{KvCache, KvPool};
use super::model::{Model, Rows};
use super::weights::{InputNorm, Projections};
use gpuport_runtime::device::Gpu;
use gpuport_runtime::error::GpuError;
use gpuport_runtime::ops::{self, GemmCall};
use gpuport_runtime::recorder::Recorder;
use gpuport_runtime::tensor::Tensor;

/// Tokens per prefill batch: the scratch below holds this many activation rows (Gemma 3 270M:
/// 22 MB), and a longer prompt runs in several batches. 512 rather than 256: a GEMM of 256
/// rows over a 4,096-row matrix fills 64 of the H200's 132 cores with 128 × 128 tiles, and the
/// Llama-8B shape's down projection took as long for 256 rows as for 512 (docs/performance.md,
/// "v27").
pub const PREFILL_BATCH: usize = 512;

/// Activations of a batch of tokens, `tokens` rows each.
pub(crate) struct BatchScratch {
    tokens: usize,
    /// The first activations of the batch's rows.
    pub(crate) x: Tensor,
    x_alt: Tensor,
    /// The normed input of the next projections.
    h: Tensor,
    /// A projection awaiting its post-norm (Gemma 3).
    proj: Tensor,
    qkv: Tensor,
    /// Prepared (normed, rotated) queries.
    q: Tensor,
    attn: Tensor,
    /// Gate then up projections of each token.
    gate: Tensor,
    /// The partials of the causal pass over a row table whose rows' keys it splits
    /// (`ops::RowsAttention::part`): up to `FEW_ROWS_MAX` rows × heads ×
    /// `attention::ROW_SPLITS_MAX` splits. Only for a batch of sequences: one sequence's
    /// prompt attends over tiles (17 MB saved on the Llama-8B shape).
    part: Option<Tensor>,
    /// The int8 blocks of an int8 GEMM's input rows (`ops::takes_q8_rows`): up to
    /// `ops::q8_block_rows` rows of the widest input.
    pub(crate) xq: Tensor,
}

impl BatchScratch {
    /// Scratch for `tokens` rows; `row_table`: the rows may be several sequences' (the batched
    /// engine), whose attention keeps split partials.
    pub(crate) fn new(
        gpu: &Gpu,
        model: &Model,
        tokens: usize,
        row_table: bool,
    ) -> Result<BatchScratch, GpuError> {
        let c = &model.cfg;
        let f = |width: usize, what: &str| gpu.zeros_f32(&[tokens * width], what);
        Ok(BatchScratch {
            tokens,
            x: f(c.embd, "batch x")?,
            x_alt: f(c.embd, "batch x'")?,
            h: f(c.embd, "batch h")?,
            proj: f(c.embd, "batch projection")?,
            qkv: f(c.q_dim() + 2 * c.kv_dim(), "batch q, k, v")?,
            q: f(c.q_dim(), "batch queries")?,
            attn: f(c.q_dim(), "batch attention")?,
            gate: f(2 * c.ff, "batch gate, up")?,
            part: row_table
                .then(|| {
                    gpu.zeros_f32(
                        &[tokens.min(gpuport_kernels::gemm::FEW_ROWS_MAX)
                            * c.heads
                            * gpuport_kernels::attention::ROW_SPLITS_MAX as usize
                            * gpuport_kernels::attention::part_stride(c.head_dim as u32)],
                        "batch attention partials",
                    )
                })
                .transpose()?,
            xq: gpu.zeros_f32(
                &[ops::q8_block_rows(gpu, tokens)
                    * ops::Q8Blocks::words(c.embd.max(c.ff).max(c.q_dim()).next_multiple_of(32))],
                "batch int8 rows",
            )?,
        })
    }

    /// Tokens a batch may hold.
    pub(crate) fn tokens(&self) -> usize {
        self.tokens
    }
}

/// How the rows of a batch attend.
#[derive(Clone, Copy)]
pub(crate) enum BatchRows<'a> {
    /// Positions `pos..pos + n` of one sequence's cache.
    Consecutive {
        /// The cache.
        kv: &'a KvCache,
        /// The first row's position.
        pos: usize,
        /// The last layer runs whole (its rows come back output-normed, for the logits).
        whole: bool,
    },
    /// Rows of several sequences of a pool, each named by its entry of the row table.
    Table {
        /// The pool.
        pool: &'a KvPool,
        /// The row table (`ops::RowTable`).
        table: &'a Tensor,
        /// The batch's first row in it.
        first: u32,
        /// The most keys a row attends to (its position + 1).
        keys: u32,
    },
}

/// Where a batch's input projections read their rows (`Model::batch_projections`).
enum RowsIn<'t> {
    /// The normed rows (`h`), formed as the one-row path forms its input.
    Normed(&'t Tensor),
    /// The int8 blocks the norm wrote (where `Model::q8_rows` holds).
    Blocks(&'t Tensor),
    /// The residual stream's rows, normed by the few-row GEMMs themselves (form, weights,
    /// epsilon: `Model::norm_in_gemm`), or read as the normed f16 rows given, which the
    /// output projection before formed (`Model::f16_norm_rows`).
    Raw(&'t Tensor, (GemvInput, &'t Tensor, f32), Option<&'t Tensor>),
}

impl<'t> RowsIn<'t> {
    /// The normed rows `h`, or their int8 blocks when the norm wrote them.
    fn of(h: &'t Tensor, blocks: Option<&'t Tensor>) -> RowsIn<'t> {
        match blocks {
            Some(b) => RowsIn::Blocks(b),
            None => RowsIn::Normed(h),
        }
    }
}

/// Whether prompts run as batches unless a session says otherwise, else one decode step per
/// token: yes (`GPUPORT_BATCHED_PREFILL=0` says no, to measure it). On the H200 batches are
/// 5× faster (docs/performance.md, LLM v11). A CPU adapter once ran them through the tiled
/// GEMM far below its GEMV speed (a 42-token prompt of SmolLM2: 32 s batched, 22 s token by
/// token, 2026-11-30); its batches are now [`prefill_batch`] rows, which take the few-row and
/// int8 tiled kernels: the same prompt in 1.4 s against 3.6–3.9 s token by token on lavapipe
/// (docs/performance.md, "v34").
pub fn batched_prefill_default(_gpu: &Gpu) -> bool {
    ops::env_or("GPUPORT_BATCHED_PREFILL", 1u8) != 0
}

/// Tokens per prefill batch on `gpu`: [`PREFILL_BATCH`], or on a CPU adapter
/// [`gpuport_kernels::gemm::FEW_ROWS_MAX`] (batches whose int8-input GEMMs read int8 blocks,
/// `ops::takes_q8_rows`).
pub fn prefill_batch(gpu: &Gpu) -> usize {
    if gpu.is_cpu() {
        gpuport_kernels::gemm::FEW_ROWS_MAX
    } else {
        PREFILL_BATCH
    }
}

impl Model {
    /// Records a prompt's positions `start..start + n` (rows from `input`: ids indexed by
    /// position, or embeddings whose row 0 is position `start`), their keys and values into
    /// `kv`, and the logits after the last into `s.logits`: batched (`batched`, else
    /// [`batched_prefill_default`]) in batches (the scratch made at first use), the logits
    /// from the last batch's last row; else every position as a decode step.
    ///
    /// The last token once ran as a decode step of its own after the batches: a whole pass
    /// over the weights for one row, 2.5% of a 512-token prompt of the Llama-8B shape on the
    /// H200 (docs/performance.md, "v30").
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn record_prompt(
        &self,
        gpu: &Gpu,
        rec: &mut Recorder<'_>,
        input: Rows<'_>,
        (s, batch, batched): (
            &super::model::Scratch,
            &mut Option<BatchScratch>,
            Option<bool>,
        ),
        kv: &KvCache,
        start: usize,
        n: usize,
    ) -> Result<(), GpuError> {
        let e = self.cfg.embd;
        // The embeddings of positions p..p + m as their own rows (ids stay indexed by position).
        let rows = |p: usize, m: usize| match input {
            Rows::Embeds(t) => Some(t.view((p - start) * e, m * e)),
            Rows::Ids(_) => None,
        };
        let last = start + n.max(1) - 1;
        let batched = batched.unwrap_or_else(|| batched_prefill_default(gpu));
        if batched && last > start {
            if batch.is_none() {
                *batch = Some(BatchScratch::new(
                    gpu,
                    self,
                    prefill_batch(gpu).min(kv.capacity()),
                    false,
                )?);
            }
            let mut pos = start;
            while let Some(b) = batch.as_ref().filter(|_| pos <= last) {
                let m = (last + 1 - pos).min(b.tokens());
                let view = rows(pos, m);
                let part = view.as_ref().map_or(input, Rows::Embeds);
                let logits = (pos + m > last).then_some(&s.logits);
                self.record_batch(gpu, rec, part, b, (kv, pos, m), logits)?;
                pos += m;
            }
            return Ok(());
        }
        for q in start..=last {
            let view = rows(q, 1);
            let part = view.as_ref().map_or(input, Rows::Embeds);
            self.record_token(gpu, rec, s, part, &kv.seq_kv(), q, q == last)?;
        }
        Ok(())
    }

    /// Records the tokens at positions `pos..pos + n` (their rows from `input`) through every
    /// layer as one batch, appending their keys and values to `kv`; with `logits`, the
    /// next-token logits after the last row into it (a `[vocab]` tensor). Without, the last
    /// layer stops after its keys and values: no later position of this batch reads the rest.
    pub(crate) fn record_batch(
        &self,
        gpu: &Gpu,
        rec: &mut Recorder<'_>,
        input: Rows<'_>,
        b: &BatchScratch,
        (kv, pos, n): (&KvCache, usize, usize),
        logits: Option<&Tensor>,
    ) -> Result<(), GpuError> {
        self.check_batch(b, n)?;
        let e = self.cfg.embd;
        let x = b.x.view(0, n * e);
        self.first_rows(gpu, rec, input, pos, &x)?;
        let whole = logits.is_some();
        let rows = BatchRows::Consecutive { kv, pos, whole };
        let (Some(normed), Some(logits)) = (self.record_layers(gpu, rec, b, n, rows)?, logits)
        else {
            return Ok(());
        };
        // The last row's logits, as the engine takes a sampled row's (`batch.rs`).
        let row = normed.view((n - 1) * e, e);
        let out = &self.weights.output;
        let stacks = std::slice::from_ref(out);
        let (input, x, x_stride) = self.rows_input(gpu, rec, stacks, (&row, e), 1, Some(&b.xq))?;
        let call = GemmCall {
            w: out,
            x: &x,
            y: logits,
            tokens: 1,
            x_stride,
            y_stride: self.cfg.vocab,
            y_first: 0,
            residual: None,
            bias: None,
            input,
            norm: None,
        };
        ops::gemm(gpu, rec, call, self.gemm_tile(out))
    }

    pub(crate) fn check_batch(&self, b: &BatchScratch, n: usize) -> Result<(), GpuError> {
        if n == 0 || n > b.tokens {
            return Err(GpuError::Shape(format!(
                "a batch of {n} rows (at most {})",
                b.tokens
            )));
        }
        Ok(())
    }

    /// The layers over `n` rows whose first activations are in `b.x`: attention of
    /// consecutive positions of one cache, or of rows of several sequences of a pool. With a
    /// pool, or consecutive rows marked `whole`, the last layer runs whole and the function
    /// returns the rows output-normed, for the logits; else the last layer stops after its
    /// keys and values and it returns `None`.
    pub(crate) fn record_layers(
        &self,
        gpu: &Gpu,
        rec: &mut Recorder<'_>,
        b: &BatchScratch,
        n: usize,
        rows_of: BatchRows<'_>,
    ) -> Result<Option<Tensor>, GpuError> {
        let c = &self.cfg;
        let w = &self.weights;
        let (e, qkv_width) = (c.embd, c.q_dim() + 2 * c.kv_dim());
        let rows = |t: &Tensor, width: usize| t.view(0, n * width);
        let (mut x, mut x_alt) = (rows(&b.x, e), rows(&b.x_alt, e));
        let [h, proj] = [&b.h, &b.proj].map(|t| rows(t, e));
        let qkv = rows(&b.qkv, qkv_width);
        let [q, attn] = [&b.q, &b.attn].map(|t| rows(t, c.q_dim()));
        let gate = rows(&b.gate, 2 * c.ff);
        let glu = self.glu_input()?;
        let whole = match rows_of {
            BatchRows::Table { .. } => true,
            BatchRows::Consecutive { whole, .. } => whole,
        };
        // Whether `h` holds the f16 rows of the next input norm, formed by the output
        // projection before it (`Model::f16_norm_rows`).
        let mut rows_in_h = false;
        for (i, l) in w.layers.iter().enumerate() {
            let bias = l.qkv_bias.as_ref();
            let rows = [&x, &x_alt, &proj, &h];
            if self.batch_normed_projections(
                gpu,
                rec,
                (&l.attn_norm, &l.attn_in, bias),
                rows,
                (&qkv, &b.xq),
                (n, rows_in_h),
            )? {
                std::mem::swap(&mut x, &mut x_alt);
            }
            let last = i + 1 == w.layers.len() && !whole;
            let out = (!last).then_some(&attn);
            let (neox, qk_norm) = (c.rope_neox, l.qk_norm.as_ref());
            // Consecutive positions of one cache, or rows of a pool named by the row table
            // (`n_keys` then bounds every row's position).
            let (kv, rows, last_pos, capacity) = match rows_of {
                BatchRows::Consecutive { kv, pos, .. } => {
                    (kv.layer(i), None, pos + n - 1, kv.capacity())
                }
                BatchRows::Table {
                    pool,
                    table,
                    first,
                    keys,
                } => {
                    let cap = pool.seq_capacity();
                    (
                        pool.layer_all(i),
                        Some(ops::RowTable { table, first, keys }),
                        cap - 1,
                        cap,
                    )
                }
            };
            let mut p = self.attention_params(i, last_pos, capacity, qk_norm.is_some())?;
            p.tokens = n as u32;
            p.qkv_stride = qkv_width as u32;
            // An int8-input output projection's blocks, where the combining pass can form them.
            let wo_blocks =
                ops::rows_combine_blocks() && self.q8_rows(gpu, std::slice::from_ref(&l.wo), n);
            let call = ops::RowsAttention {
                p,
                neox,
                qkv: &qkv,
                q: &q,
                kv,
                rows,
                out,
                qk_norm,
                part: b.part.as_ref(),
                out_blocks: wo_blocks.then_some(&b.xq),
            };
            let formed = ops::attention_rows(gpu, rec, call)?;
            if last {
                return Ok(None);
            }
            let input = if formed {
                GemvInput::Q8Blocks
            } else {
                GemvInput::Plain
            };
            let outs = [&attn, &x, &x_alt, &proj, &b.xq];
            let then = self.f16_norm_rows(gpu, &l.ffn_norm, &l.ffn_in, n);
            if self.batch_out(gpu, rec, &l.wo, outs, (input, then, &h), n)? {
                std::mem::swap(&mut x, &mut x_alt);
            }
            let rows = [&x, &x_alt, &proj, &h];
            if self.batch_normed_projections(
                gpu,
                rec,
                (&l.ffn_norm, &l.ffn_in, None),
                rows,
                (&gate, &b.xq),
                (n, then.is_some()),
            )? {
                std::mem::swap(&mut x, &mut x_alt);
            }
            let outs = [&gate, &x, &x_alt, &proj, &b.xq];
            let then = w
                .layers
                .get(i + 1)
                .and_then(|next| self.f16_norm_rows(gpu, &next.attn_norm, &next.attn_in, n));
            if self.batch_out(gpu, rec, &l.w_down, outs, (glu, then, &h), n)? {
                std::mem::swap(&mut x, &mut x_alt);
            }
            rows_in_h = then.is_some();
        }
        // The output norm of every row into `h` (`[rows, hidden]`).
        if self.fold_post_norm(gpu, rec, &w.output_norm, [&x, &x_alt, &proj])? {
            std::mem::swap(&mut x, &mut x_alt);
        }
        self.batch_norm(gpu, rec, w.output_norm.own(), (&x, &h), None)?;
        Ok(Some(h))
    }

    /// A block's input norm then its input projections over the batch's `n` rows into `out`:
    /// a folded post-norm's residual add first (from `x` into `x_next`; returns true, and the
    /// caller swaps them), then the norm of the residual rows into `h` (or their int8 blocks
    /// into `xq` where [`Model::q8_rows`] holds) or formed by the GEMMs themselves
    /// ([`Model::norm_in_gemm`]) — or, where `formed`, read from `h` as the f16 rows the output
    /// projection before formed ([`Model::f16_norm_rows`]).
    fn batch_normed_projections(
        &self,
        gpu: &Gpu,
        rec: &mut Recorder<'_>,
        (norm, parts, bias): (&InputNorm, &Projections, Option<&Tensor>),
        [x, x_next, proj, h]: [&Tensor; 4],
        (out, xq): (&Tensor, &Tensor),
        (n, formed): (usize, bool),
    ) -> Result<bool, GpuError> {
        let folded = self.fold_post_norm(gpu, rec, norm, [x, x_next, proj])?;
        let x = if folded { x_next } else { x };
        let q8 = self.q8_rows(gpu, &parts.stacks, n).then_some(xq);
        let own = norm.own();
        let input = match self.norm_in_gemm(gpu, own, &parts.stacks, n) {
            Some(form) => RowsIn::Raw(x, form, (formed && !folded).then_some(h)),
            None => {
                self.batch_norm(gpu, rec, own, (x, h), q8)?;
                RowsIn::of(h, q8)
            }
        };
        self.batch_projections(gpu, rec, input, (parts, bias), out, n)?;
        Ok(folded)
    }

    /// A folded norm's first half: the post-normed pending projection `proj` added to the
    /// residual rows `x` into `x_next` (`ops::norm_add`, one dispatch), returning true (the
    /// caller swaps); a plain norm has none (false).
    fn fold_post_norm(
        &self,
        gpu: &Gpu,
        rec: &mut Recorder<'_>,
        norm: &InputNorm,
        [x, x_next, proj]: [&Tensor; 3],
    ) -> Result<bool, GpuError> {
        match norm {
            InputNorm::Plain(_) => Ok(false),
            InputNorm::Folded { post, .. } => {
                ops::norm_add(gpu, rec, self.cfg.norm(proj, post, x_next), x)?;
                Ok(true)
            }
        }
    }

    /// The input norm (weights `w`) of every row of `x` into `h`, or, with `blocks`, into the
    /// int8 blocks the projections read (`ops::norm_blocks`: one dispatch, the numbers
    /// `ops::q8_blocks` would make of `h`).
    fn batch_norm(
        &self,
        gpu: &Gpu,
        rec: &mut Recorder<'_>,
        w: &Tensor,
        (x, h): (&Tensor, &Tensor),
        blocks: Option<&Tensor>,
    ) -> Result<(), GpuError> {
        let c = &self.cfg;
        let rows = x.shape.iter().product::<usize>() / c.embd;
        match blocks {
            Some(b) => {
                let out = b.view(0, rows * ops::Q8Blocks::words(c.embd));
                ops::norm_blocks(gpu, rec, c.norm(x, w, &out))
            }
            None => ops::norm(gpu, rec, c.norm(x, w, h)),
        }
    }

    /// Whether the input norm (weights `w`, after any folded post-norm) of the projections
    /// `stacks` at `n` rows is formed by their GEMMs ([`ops::takes_norm_rows`]: the float
    /// few-row kernel, or the pass that forms the tensor-core GEMM's f16 input rows — one
    /// dispatch less a norm), and in which form: an RMSNorm, on projections the one-row path
    /// gives float input ([`Model::int8_input`] does not hold: int8 input would round the
    /// normed rows first) or on tensor cores (whose f16 products take no int8 grid).
    fn norm_in_gemm<'n>(
        &self,
        gpu: &Gpu,
        w: &'n Tensor,
        stacks: &[Tensor],
        n: usize,
    ) -> Option<(GemvInput, &'n Tensor, f32)> {
        let form = match self.cfg.norm {
            NormKind::Rms => GemvInput::RmsNorm,
            NormKind::RmsPlusOne => GemvInput::RmsNormPlusOne,
            NormKind::Layer => return None,
        };
        let float_input = !self.int8_input(stacks) || ops::takes_coop_rows(gpu, n);
        let fits = float_input && stacks.iter().all(|s| ops::takes_norm_rows(gpu, s, n));
        fits.then_some((form, w, self.cfg.eps))
    }

    /// `out[t] = [W_1; W_2; …] input[t] (+ bias)` for the batch's rows, the parts side by side
    /// in each row ([`RowsIn`]: the normed rows, their int8 blocks, or the rows the GEMMs norm
    /// themselves).
    fn batch_projections(
        &self,
        gpu: &Gpu,
        rec: &mut Recorder<'_>,
        rows: RowsIn<'_>,
        (parts, bias): (&Projections, Option<&Tensor>),
        out: &Tensor,
        n: usize,
    ) -> Result<(), GpuError> {
        let width: usize = parts.stacks.iter().map(|w| w.shape[0]).sum();
        let e = self.cfg.embd;
        let (mut norm, mut formed) = (None, None);
        let (input, x, x_stride) = match rows {
            RowsIn::Blocks(b) => {
                let words = ops::Q8Blocks::words(e);
                (GemvInput::Q8Blocks, b.view(0, n * words), words)
            }
            RowsIn::Normed(h) => self.rows_input(gpu, rec, &parts.stacks, (h, e), n, None)?,
            RowsIn::Raw(x, (form, w, eps), f16_rows) => {
                norm = Some((w, eps));
                formed = f16_rows;
                (form, x.clone(), e)
            }
        };
        let mut y_first = 0;
        for w in &parts.stacks {
            let call = GemmCall {
                w,
                x: &x,
                y: out,
                tokens: n,
                x_stride,
                y_stride: width,
                y_first,
                residual: None,
                bias,
                input,
                norm,
            };
            match formed {
                Some(rows) => ops::gemm_f16_rows(gpu, rec, call, self.gemm_tile(w), rows)?,
                None => ops::gemm(gpu, rec, call, self.gemm_tile(w))?,
            }
            y_first += w.shape[0];
        }
        Ok(())
    }

    /// Where the GEMMs over `parts` at `n` rows run on tensor cores with f16 input rows that
    /// norm them (behind a plain input norm, `norm`): the form, weights and epsilon with which
    /// the output projection before forms those rows into the batch's `h`
    /// (`ops::gemm_norm_rows`: where it splits, in the pass that adds its partials), so the
    /// projections read them (`ops::gemm_f16_rows`) — one dispatch fewer, the same bits. Only
    /// where `GPUPORT_NORM_ROWS=1` until a tensor-core adapter has run it end to end (v49: no
    /// device lent; lavapipe has no tensor cores, so its batches never take this path).
    fn f16_norm_rows<'n>(
        &self,
        gpu: &Gpu,
        norm: &'n InputNorm,
        parts: &Projections,
        n: usize,
    ) -> Option<(GemvInput, &'n Tensor, f32)> {
        static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        let on = *ON.get_or_init(|| ops::env_or("GPUPORT_NORM_ROWS", 0u8) == 1);
        // With post-norms the output projection leaves its result apart (`batch_out`): no
        // rows to form there.
        let InputNorm::Plain(w) = norm else {
            return None;
        };
        if !on || self.cfg.post_norms {
            return None;
        }
        let form = self.norm_in_gemm(gpu, w, &parts.stacks, n)?;
        let f16_rows = parts.stacks.iter().all(|s| ops::reads_f16_rows(gpu, s, n));
        f16_rows.then_some(form)
    }

    /// Whether the GEMMs over `stacks` at `n` rows read int8 blocks: the one-row path takes
    /// int8 input for them ([`Model::int8_input`]) and every stack runs on the int8 few-row
    /// kernel at `n` rows ([`ops::takes_q8_rows`]).
    pub(crate) fn q8_rows(&self, gpu: &Gpu, stacks: &[Tensor], n: usize) -> bool {
        self.int8_input(stacks) && stacks.iter().all(|w| ops::takes_q8_rows(gpu, w, n))
    }

    /// The input of the GEMMs over `stacks` for `n` rows of `cols` values of `x`, formed as the
    /// one-row path forms it: where that path takes int8 input ([`Model::int8_input`]), the
    /// rows as int8 blocks in `xq` where [`Model::q8_rows`] holds (and `xq` is given), else
    /// rounded in place onto the same int8 grid; otherwise `x` as it is. Returns the input
    /// form, its tensor and row stride.
    pub(crate) fn rows_input(
        &self,
        gpu: &Gpu,
        rec: &mut Recorder<'_>,
        stacks: &[Tensor],
        (x, cols): (&Tensor, usize),
        n: usize,
        xq: Option<&Tensor>,
    ) -> Result<(GemvInput, Tensor, usize), GpuError> {
        if !self.int8_input(stacks) {
            return Ok((GemvInput::Plain, x.clone(), cols));
        }
        if let Some(xq) = xq.filter(|_| self.q8_rows(gpu, stacks, n)) {
            let words = ops::Q8Blocks::words(cols);
            let blocks = xq.view(0, n * words);
            let call = ops::Q8Blocks {
                x,
                rows: n,
                width: cols,
                gate: None,
                blocks: &blocks,
            };
            ops::q8_blocks(gpu, rec, call)?;
            return Ok((GemvInput::Q8Blocks, blocks, words));
        }
        // On tensor cores the products are f16: the int8 grid would buy no match.
        if !ops::takes_coop_rows(gpu, n) {
            ops::q8_round(gpu, rec, ops::Q8Round { x, rows: n, cols })?;
        }
        Ok((GemvInput::Plain, x.clone(), cols))
    }

    /// An output projection of the batch, `W input(a)`: added to the residual `x` into
    /// `x_next` (returns true: the caller swaps), or, with post-norms, left in `proj`. A gated
    /// activation is formed apart, in place in `a`, where the matrix takes int8 input (then
    /// rounded onto the one-row path's grid, as a plain input is) or runs on tensor cores
    /// without f16 input rows (formed once, not once per tile of weight rows); the pass that
    /// forms f16 input rows forms it itself. `input` [`GemvInput::Q8Blocks`]: the
    /// int8 blocks are in `xq` already (the attention's combining pass wrote them). With
    /// `then` ([`Model::f16_norm_rows`]: never with post-norms), the next input norm's f16
    /// rows of the result too, into `rows16`.
    fn batch_out(
        &self,
        gpu: &Gpu,
        rec: &mut Recorder<'_>,
        w: &Tensor,
        [a, x, x_next, proj, xq]: [&Tensor; 5],
        (input, then, rows16): (GemvInput, Option<(GemvInput, &Tensor, f32)>, &Tensor),
        n: usize,
    ) -> Result<bool, GpuError> {
        let post_norms = self.cfg.post_norms;
        let cols = w.shape[1];
        let mut call = GemmCall {
            w,
            x: a,
            y: if post_norms { proj } else { x_next },
            tokens: n,
            x_stride: input.x_len(cols),
            y_stride: self.cfg.embd,
            y_first: 0,
            residual: (!post_norms).then_some(x),
            bias: None,
            input,
            norm: None,
        };
        let tile = self.gemm_tile(w);
        let q8 = self.int8_input(std::slice::from_ref(w));
        let gated = matches!(input, GemvInput::SwiGlu | GemvInput::GeGlu);
        let path = ops::gemm_path(gpu, &call, tile)?;
        let coop = matches!(path, ops::GemmPath::Coop { .. });
        // On tensor cores with f16 input rows formed first (`gemm_x16.wgsl`), that pass forms
        // the gated activation itself: no pass of its own.
        let formed_by_x16 = matches!(path, ops::GemmPath::Coop { x16: true, .. });
        let words = ops::Q8Blocks::words(cols);
        let blocks = xq.view(0, n * words);
        if input == GemvInput::Q8Blocks {
            // Formed by the kernel before (the attention's combining pass) in `xq`.
            call.x = &blocks;
        } else if self.q8_rows(gpu, std::slice::from_ref(w), n) {
            // The activation (gated where it is) straight into int8 blocks.
            let rows = ops::Q8Blocks {
                x: a,
                rows: n,
                width: cols,
                gate: gated.then_some(self.cfg.glu),
                blocks: &blocks,
            };
            ops::q8_blocks(gpu, rec, rows)?;
            call.x = &blocks;
            call.x_stride = words;
            call.input = GemvInput::Q8Blocks;
        } else if gated && !formed_by_x16 && (q8 || (coop && cols.is_multiple_of(32))) {
            let gate = self.cfg.glu;
            let rows = ops::GatedRows {
                x: a,
                rows: n,
                width: cols,
                gate,
                // On tensor cores the products are f16: the int8 grid would buy no match.
                round: q8 && !coop,
            };
            ops::gated_rows(gpu, rec, rows)?;
            call.input = GemvInput::Plain;
        } else if q8 && !coop {
            ops::q8_round(
                gpu,
                rec,
                ops::Q8Round {
                    x: a,
                    rows: n,
                    cols,
                },
            )?;
        }
        match then {
            Some((form, weights, eps)) => {
                let rows = ops::NormRows {
                    form,
                    norm: (weights, eps),
                    out: rows16,
                };
                ops::gemm_norm_rows(gpu, rec, call, tile, rows)?;
            }
            None => ops::gemm(gpu, rec, call, tile)?,
        }
        Ok(!post_norms)
    }
}
