//! A loaded model: configuration, GPU weights, and the forward pass of one token recorded onto
//! a [`Recorder`] — every kernel of every layer appended to the open compute pass, nothing read
//! back.

use std::collections::HashMap;

use gpuport_kernels::attention::{COMBINE_COLUMNS, DecodeAttnParams, QkNorm};
use gpuport_kernels::gemm::GemmTile;
use gpuport_kernels::gemv::{self, GemvInput, GemvTunables};
use gpuport_kernels::quant::GgmlType;
use gpuport_kernels::rowops::{self, ElementOp, NormKind};
use gpuport_kernels::sample;

use super::arch::ModelConfig;
use super::error::LlmError;
use super::kv_cache::{self, SeqKv};
use super::weights::{self, InputNorm, LoadPlan, Projections, Weights};
use gpuport_gguf::Gguf;
use gpuport_runtime::device::Gpu;
use gpuport_runtime::error::GpuError;
use gpuport_runtime::ops::{self, GemmCall, GemvCall};
use gpuport_runtime::recorder::Recorder;
use gpuport_runtime::tensor::{Elem, Tensor};

/// Workgroups a decode GEMV should have at least on a GPU: tables tuned on 100+ MB matrices
/// choose many rows per workgroup, which leaves a 576-row projection 9 workgroups on a
/// 132-core GPU. A CPU adapter (lavapipe) runs a few workgroups at a time and only pays for
/// more, so it keeps the table's choice.
fn min_gemv_groups(gpu: &Gpu) -> usize {
    if gpu.is_cpu() { 1 } else { 264 }
}

/// Output rows past which an input norm runs as its own one-workgroup dispatch before the
/// GEMVs instead of inside every workgroup: measured on the H200, Gemma 3's 262,144-row
/// output GEMV took 216 µs with the RMSNorm inside and 293 µs with the folded post-norm too,
/// each of its 16,384 workgroups repeating the reductions.
const SEPARATE_INPUT_ROWS: usize = 16_384;

/// Weight bytes from which a projection stack of int8-GEMV types takes int8 input below
/// SEPARATE_INPUT_ROWS too (models without post-norms): the norm writing the input's int8 blocks
/// in one dispatch, then GEMVs that read 0.65–0.88 of the streaming ceiling at 256 MB instead
/// of the float path's 0.10–0.27 (H200, docs/performance.md, v17). Below it the float GEMV with
/// the norm fused in stays: the small models' stacks (SmolLM2's are at most 1.1 MB) are
/// latency-bound, and an int8 input costs them a dispatch. 2 MiB takes in the Llama-1B shape's
/// q|k|v (3.4 MiB) and attention output (2.25 MiB): on the H200 its decode went from 799 to
/// 976 tok/s with every stack on int8 input (docs/performance.md, v26), once the input became
/// one dispatch (it was 8 MiB while the input took two).
/// `GPUPORT_INT8_MIN_BYTES` or [`Model::with_int8_min_bytes`] overrides it (0: every stack).
pub const INT8_MIN_STACK_BYTES: u64 = 2 << 20;

/// Most key blocks per head whose decode attention partials the output projection's GEMV
/// combines itself (`GemvInput::AttnCombine`: every workgroup of the projection reads every
/// block) instead of a combining pass of its own. At 16 the fold saved SmolLM2 0.04 ms and
/// Gemma 3 0.03 ms a token on the H200 (docs/performance.md, v11); past it each step a few
/// hundred keys deep (SmolLM2 past 512 keys, Gemma 3 past 256) runs the pass. Where the fold
/// stops paying is unmeasured: `GPUPORT_FOLD_MAX_BLOCKS` moves it (up to what the kernel's
/// workgroup memory holds, `gemv::COMBINE_MAX_PAIRS` (head, block) pairs).
pub const FOLD_MAX_BLOCKS: u32 = 16;

/// The default of [`Model::with_int8_min_bytes`] on `gpu` for the projections of normed rows
/// and of the gated activation: [`INT8_MIN_STACK_BYTES`], or 0 on a CPU adapter, whose int8
/// tiled GEMM (`ops::q8_tiles_min_tokens`) beats the float GEMV with its fused norm on those
/// stacks of SmolLM2 and runs prompts in batches 2.3× faster than token by token (lavapipe,
/// docs/performance.md "v34"). The attention output keeps [`INT8_MIN_STACK_BYTES`] there:
/// with its input on int8 blocks too, one of SmolLM2's top-10 logits moved 0.55 from
/// llama.cpp's (`llm_reference`; the others stay within 0.37), and on lavapipe its float GEMV
/// is as fast.
pub fn int8_min_stack_bytes(gpu: &Gpu) -> u64 {
    if gpu.is_cpu() {
        0
    } else {
        INT8_MIN_STACK_BYTES
    }
}

/// Whether, on `gpu`, a model with post-projection norms (Gemma 3) gives its stacks int8 input
/// by the byte thresholds as other models do, its input formed by a pass of its own (the
/// folded post-norm, the norm and the int8 blocks: one dispatch on one row, `gemv_input`; two
/// on many, `norm_add` then `norm_blocks`): on a CPU adapter. There the float GEMV with the
/// fold inside ran Gemma 3 270M's stacks at 0.11–0.16 GB/s on lavapipe (a decode step 492 ms,
/// 2.0 tok/s; a 128-token prompt 9 tok/s), where the int8 tiled GEMM takes any of them. On a
/// GPU the fused float GEMV stays: Gemma 3 270M's stacks are latency-bound and under
/// [`INT8_MIN_STACK_BYTES`] anyway, and the extra pass on larger post-norm models is not yet
/// measured there.
pub fn int8_behind_post_norms(gpu: &Gpu) -> bool {
    gpu.is_cpu()
}

/// The default of the attention output's int8 threshold on `gpu` for a model of `cfg`:
/// [`INT8_MIN_STACK_BYTES`] (see [`int8_min_stack_bytes`] for why SmolLM2's stays on float
/// input on a CPU adapter), or 0 for a post-norm model on a CPU adapter
/// ([`int8_behind_post_norms`]), where the float kernels took Gemma 3 270M's 640 × 1,024 Q4_K
/// projection at 1.35 ms a GEMV and 37.7 ms a 42-row GEMM on lavapipe, and its int8 input kept
/// `llm_reference`'s top-10 logits within 0.62 of llama.cpp's (0.73 on float input).
pub fn int8_min_attn_out_bytes(gpu: &Gpu, cfg: &ModelConfig) -> u64 {
    if cfg.post_norms && int8_behind_post_norms(gpu) {
        0
    } else {
        INT8_MIN_STACK_BYTES
    }
}

/// A model on the GPU.
pub struct Model {
    /// Hyperparameters and graph options.
    pub cfg: ModelConfig,
    /// Tensors.
    pub weights: Weights,
    tunables: HashMap<GgmlType, GemvTunables>,
    /// The int8-input GEMV's, for the types that have it.
    q8_tunables: HashMap<GgmlType, GemvTunables>,
    /// The prefill GEMM's tile per weight type.
    gemm_tiles: HashMap<GgmlType, GemmTile>,
    /// The normed rows' and gated activation's projections: [`int8_min_stack_bytes`] or the
    /// override.
    int8_min_bytes: u64,
    /// The attention output's: [`int8_min_attn_out_bytes`] or the override.
    int8_min_attn_out: u64,
    /// Whether stacks behind a folded post-norm take int8 input by those byte thresholds too
    /// ([`int8_behind_post_norms`]).
    int8_behind_post_norms: bool,
    /// [`FOLD_MAX_BLOCKS`] or its override.
    fold_max_blocks: u32,
    /// The element type of the KV caches its sessions and batches make.
    kv_type: GgmlType,
}

/// How decode attention's combining pass hands the heads to the output projection.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Combine {
    /// Folded into the output projection's GEMV (its input form), where it fits.
    Folded,
    /// As the int8 blocks an int8-input output projection reads, where head_dim allows.
    Blocks,
}

/// Activations of one token, reused by every layer and step.
pub(crate) struct Scratch {
    x: Tensor,
    x_alt: Tensor,
    /// A normed activation row, when a norm cannot be fused into the next GEMV (or its int8
    /// blocks).
    h: Tensor,
    /// The int8 blocks of an output projection's input (attention, gated activation).
    blocks: Tensor,
    /// Queries, keys, values: the attention input projections' outputs, in that order.
    qkv: Tensor,
    attn: Tensor,
    /// A projection awaiting its post-norm (Gemma 3).
    proj: Tensor,
    /// Gate then up projections.
    gate: Tensor,
    pub(crate) logits: Tensor,
    pub(crate) probs: Tensor,
    /// The sampler's partials and state.
    pub(crate) sample_part: Tensor,
    part: Tensor,
    pub(crate) argmax_part: Tensor,
    pub(crate) sampled: Tensor,
    /// The token sequence (u32, `ctx + 1`): prompt ids written by the CPU, sampled ids by the
    /// GPU; the embedding of position `p` reads `tokens[p]`.
    pub(crate) tokens: Tensor,
}

impl Scratch {
    pub(crate) fn new(gpu: &Gpu, cfg: &ModelConfig, ctx: usize) -> Result<Scratch, GpuError> {
        let f = |n: usize, what: &str| gpu.zeros_f32(&[n], what);
        let (e, q, kv) = (cfg.embd, cfg.q_dim(), cfg.kv_dim());
        Ok(Scratch {
            x: f(e, "x")?,
            x_alt: f(e, "x'")?,
            h: f(e, "h")?,
            blocks: f(
                GemvInput::Q8Blocks.x_len(cfg.ff.max(q).next_multiple_of(32)),
                "int8 blocks",
            )?,
            qkv: f(q + 2 * kv, "q, k, v")?,
            attn: f(q, "attention")?,
            proj: f(e, "projection")?,
            gate: f(2 * cfg.ff, "gate, up")?,
            logits: f(cfg.vocab, "logits")?,
            probs: f(cfg.vocab, "probabilities")?,
            sample_part: f(sample::scratch_words(cfg.vocab), "sampler partials")?,
            part: f(
                ops::attention_scratch(cfg.heads as u32, cfg.head_dim as u32, ctx as u32),
                "attention blocks",
            )?,
            argmax_part: gpu.upload(
                &vec![0u8; 8 * rowops::ARGMAX_GROUPS as usize],
                Elem::U32,
                &[2 * rowops::ARGMAX_GROUPS as usize],
                "argmax partials",
            )?,
            sampled: gpu.upload(&[0; 8], Elem::U32, &[2], "sampled")?,
            tokens: gpu.upload(&vec![0u8; 4 * (ctx + 1)], Elem::U32, &[ctx + 1], "tokens")?,
        })
    }
}

/// Where a forward pass's first activations come from.
#[derive(Clone, Copy)]
pub(crate) enum Rows<'a> {
    /// Token ids: `ids[pos..]` (u32), embedded and scaled from the model's table.
    Ids(&'a Tensor),
    /// Embedding rows `[n, hidden]` (f32, already scaled) the caller made, the first for
    /// position `pos`: `embed_tokens`' output, or an adapter's (the MLC embeds roles).
    Embeds(&'a Tensor),
}

impl Model {
    /// Records the first activations of positions `pos..pos + n` into `out` (`[n, hidden]`):
    /// the embedding of their ids, or a copy of the caller's rows.
    pub(crate) fn first_rows(
        &self,
        gpu: &Gpu,
        rec: &mut Recorder<'_>,
        rows: Rows<'_>,
        pos: usize,
        out: &Tensor,
    ) -> Result<(), GpuError> {
        let c = &self.cfg;
        match rows {
            Rows::Ids(ids) => {
                let call = ops::Embed {
                    table: &self.weights.embd,
                    ids,
                    id_offset: pos,
                    out,
                    scale: c.embed_scale,
                };
                ops::embed(gpu, rec, call)
            }
            Rows::Embeds(e) => {
                if e.elem != Elem::F32 || e.bytes != out.bytes {
                    return Err(GpuError::Shape(format!(
                        "embeddings {:?} ({:?}) for {} positions of {} (f32)",
                        e.shape,
                        e.elem,
                        out.bytes / 4 / c.embd.max(1) as u64,
                        c.embd
                    )));
                }
                rec.copy(&e.buffer, e.offset, &out.buffer, out.offset, out.bytes);
                Ok(())
            }
        }
    }

    /// Reads the configuration, checks the plan against the adapter (every blocker reported),
    /// and uploads the weights. Its KV caches hold [`kv_cache::default_kv_type`] values (f16 on
    /// GPUs, f32 on CPU adapters, unless `GPUPORT_KV_TYPE` says otherwise).
    pub fn load(gpu: &Gpu, g: &Gguf, ctx: usize) -> Result<Model, LlmError> {
        Model::load_with_kv(gpu, g, ctx, kv_cache::default_kv_type(gpu)?)
    }

    /// [`Model::load`] with KV caches of `kv` values (one of
    /// [`gpuport_kernels::attention::KV_TYPES`]: f32, or f16 for half the cache memory).
    pub fn load_with_kv(gpu: &Gpu, g: &Gguf, ctx: usize, kv: GgmlType) -> Result<Model, LlmError> {
        let kv_type = kv_cache::check_kv_type(kv)?;
        let cfg = ModelConfig::from_gguf(g)?;
        let plan = Model::plan(gpu, g, &cfg, (ctx, kv));
        if !plan.blockers.is_empty() {
            return Err(LlmError::CannotRun(plan.blockers));
        }
        let weights = Weights::load(&cfg, g, gpu)?;
        let table = gpuport_runtime::tuning::TuningTable::load();
        let tunables = GgmlType::ALL
            .into_iter()
            .map(|ty| (ty, gpu.gemv_tunables_in(&table, ty)))
            .collect();
        let q8_tunables = GgmlType::ALL
            .into_iter()
            .filter(|ty| gemv::takes_q8_input(*ty))
            .map(|ty| (ty, gpu.gemv_q8_tunables_in(&table, ty)))
            .collect();
        let gemm_tiles = GgmlType::ALL
            .into_iter()
            .map(|ty| (ty, gpu.gemm_tile_in(&table, ty)))
            .collect();
        let attn_out_default = int8_min_attn_out_bytes(gpu, &cfg);
        Ok(Model {
            cfg,
            weights,
            tunables,
            q8_tunables,
            gemm_tiles,
            int8_min_bytes: ops::env_or("GPUPORT_INT8_MIN_BYTES", int8_min_stack_bytes(gpu)),
            int8_min_attn_out: ops::env_or("GPUPORT_INT8_MIN_BYTES", attn_out_default),
            int8_behind_post_norms: int8_behind_post_norms(gpu),
            fold_max_blocks: ops::env_or("GPUPORT_FOLD_MAX_BLOCKS", FOLD_MAX_BLOCKS),
            kv_type,
        })
    }

    /// The element type of the KV caches this model's sessions and batches make.
    pub fn kv_type(&self) -> GgmlType {
        self.kv_type
    }

    /// The model with its projections taking int8 input from `bytes` of weights on (see
    /// [`INT8_MIN_STACK_BYTES`]; 0 runs every int8-capable projection so, as the tests of the
    /// int8 paths do on a tiny model). Replaces the default and `GPUPORT_INT8_MIN_BYTES`.
    pub fn with_int8_min_bytes(self, bytes: u64) -> Model {
        Model {
            int8_min_bytes: bytes,
            int8_min_attn_out: bytes,
            ..self
        }
    }

    /// What loading with a KV cache of `ctx` positions of `kv` values would take here, with
    /// blockers and warnings (`gpuport can-run`).
    pub fn plan(gpu: &Gpu, g: &Gguf, cfg: &ModelConfig, (ctx, kv): (usize, GgmlType)) -> LoadPlan {
        let mut p = weights::plan(cfg, g, gpu, (ctx, kv));
        if cfg.final_cap != 0.0 {
            p.blockers
                .push("final logit soft-capping is not implemented".to_string());
        }
        if ctx == 0 {
            p.blockers.push("a context of 0 positions".to_string());
        }
        p
    }

    /// The GEMV tunables for weight `w` here: the tuning table's (the int8 GEMV's where its
    /// rows are long enough, [`GemvTunables::q8_for_cols`]), with rows per workgroup fit to the
    /// matrix.
    fn tunables_for(&self, gpu: &Gpu, w: &Tensor, input: GemvInput) -> GemvTunables {
        let ty = ops::ggml_type(w).unwrap_or(GgmlType::F32);
        let sg = gpu.has_subgroups();
        let t = if input == GemvInput::Q8Blocks {
            self.q8_tunables
                .get(&ty)
                .map(|t| t.q8_for_cols(ty, w.shape[1], sg))
        } else {
            self.tunables.get(&ty).copied()
        };
        t.unwrap_or_else(|| GemvTunables::default_for(sg))
            .fit_rows(w.shape[0], min_gemv_groups(gpu))
    }

    /// Whether the normed input of the projection stack `stacks` is quantized to int8 blocks
    /// (computed once, apart, then int8-input GEMVs): where every part has the int8-input GEMV,
    /// after an RMSNorm, and the stack is past SEPARATE_INPUT_ROWS (the test models' tied output
    /// projections, a large model's FFN) or, without post-norms (or with them where
    /// [`int8_behind_post_norms`]), of at least [`INT8_MIN_STACK_BYTES`]. llama.cpp quantizes
    /// the input of its quantized weights to 8 bits the same way (docs/performance.md, LLM
    /// v12). One row norms with `norm.wgsl` and
    /// quantizes the normed row; many rows norm with the same kernel and round onto the same
    /// grid ([`ops::q8_round`]): a row computes with the same numbers either way.
    pub(crate) fn int8_input(&self, stacks: &[Tensor]) -> bool {
        let rows: usize = stacks.iter().map(|w| w.shape[0]).sum();
        let bytes: u64 = stacks.iter().map(|w| w.bytes).sum();
        let min = if self.is_attention_output(stacks) {
            self.int8_min_attn_out
        } else {
            self.int8_min_bytes
        };
        let by_bytes = (!self.cfg.post_norms || self.int8_behind_post_norms) && bytes >= min;
        let large = rows > SEPARATE_INPUT_ROWS || by_bytes;
        large
            && self.cfg.norm != NormKind::Layer
            && stacks.iter().all(|w| {
                w.shape[1].is_multiple_of(32) && ops::ggml_type(w).is_ok_and(gemv::takes_q8_input)
            })
    }

    /// Whether `stacks` is one layer's attention output projection.
    fn is_attention_output(&self, stacks: &[Tensor]) -> bool {
        let [w] = stacks else { return false };
        self.weights
            .layers
            .iter()
            .any(|l| l.wo.shares_buffer(w) && l.wo.offset == w.offset)
    }

    /// The prefill GEMM's tile for weight `w` here.
    pub(super) fn gemm_tile(&self, w: &Tensor) -> GemmTile {
        let ty = ops::ggml_type(w).unwrap_or(GgmlType::F32);
        self.gemm_tiles
            .get(&ty)
            .copied()
            .unwrap_or(GemmTile::DEFAULT)
    }

    /// One GEMV; an int8-input one on the int8 tiled GEMM where the adapter takes it for one
    /// row (`ops::q8_tiles_min_tokens`: CPU adapters).
    fn gemv(&self, gpu: &Gpu, rec: &mut Recorder<'_>, call: GemvCall<'_>) -> Result<(), GpuError> {
        if ops::q8_tiles_min_tokens(gpu) <= 1
            && let Some(one) = GemmCall::from_q8_gemv(&call)
        {
            return ops::gemm(gpu, rec, one, self.gemm_tile(call.w));
        }
        ops::gemv_call(gpu, rec, call, self.tunables_for(gpu, call.w, call.input))
    }

    /// Records `out = [W_1; W_2; …] norm(x) (+ bias)`, the parts' outputs one after another
    /// (a bias vector covers them all, added by each GEMV's residual epilogue): the
    /// RMSNorm is fused into each GEMV (every workgroup normalizes the row itself), a
    /// LayerNorm runs first on its own. A folded norm first applies the post-norm of the
    /// projection in `s.proj` and its residual add to `x`, the first GEMV writing the new
    /// residual row to `x_next`; the return value says whether it did (the caller swaps).
    fn normed_projections(
        &self,
        gpu: &Gpu,
        rec: &mut Recorder<'_>,
        [x, x_next, out]: [&Tensor; 3],
        norm: &InputNorm,
        (parts, bias): (&Projections, Option<&Tensor>),
        s: &Scratch,
    ) -> Result<bool, GpuError> {
        let c = &self.cfg;
        let folded = matches!(norm, InputNorm::Folded { .. });
        if folded && bias.is_some() {
            return Err(GpuError::Shape(
                "a biased projection behind a folded post-norm".into(),
            ));
        }
        let (input, x_in, weights) = match (norm, c.norm) {
            (InputNorm::Plain(w), NormKind::Rms) => (GemvInput::RmsNorm, x, Some(w)),
            (InputNorm::Plain(w), NormKind::RmsPlusOne) => (GemvInput::RmsNormPlusOne, x, Some(w)),
            (InputNorm::Plain(w), NormKind::Layer) => {
                ops::norm(gpu, rec, c.norm(x, w, &s.h))?;
                (GemvInput::Plain, &s.h, None)
            }
            (InputNorm::Folded { both: w, .. }, NormKind::Rms) => {
                (GemvInput::FoldedRmsNorm, &s.proj, Some(w))
            }
            (InputNorm::Folded { both: w, .. }, NormKind::RmsPlusOne) => {
                (GemvInput::FoldedRmsNormPlusOne, &s.proj, Some(w))
            }
            (InputNorm::Folded { .. }, NormKind::Layer) => {
                return Err(GpuError::Shape("a folded LayerNorm".into()));
            }
        };
        let rows: usize = parts.stacks.iter().map(|w| w.shape[0]).sum();
        let q8 = self.int8_input(&parts.stacks);
        if let (true, false, InputNorm::Plain(w)) = (q8, folded, norm) {
            // The norm apart, straight into the normed row's int8 blocks in `s.h`: the
            // numbers the many-row GEMM rounds its normed rows to (a folded norm keeps its
            // fused input pass, below).
            let words = GemvInput::Q8Blocks.x_len(c.embd);
            let blocks = s.h.view(0, words);
            ops::norm_blocks(gpu, rec, c.norm(x, w, &blocks))?;
            let mut y_first = 0;
            for w in &parts.stacks {
                let call = GemvCall {
                    y_first,
                    input: GemvInput::Q8Blocks,
                    residual: bias,
                    ..GemvCall::new(w, &blocks, out)
                };
                self.gemv(gpu, rec, call)?;
                y_first += w.shape[0];
            }
            return Ok(false);
        }
        // An int8-input stack behind a folded post-norm has its input formed apart too: the
        // GEMVs that fold the norm in take float input.
        let separate = (rows > SEPARATE_INPUT_ROWS && input != GemvInput::Plain) || (q8 && folded);
        // A separate input vector goes to `s.h`, as int8 blocks where the stack takes them.
        let (form, vector) = if q8 {
            let words = GemvInput::Q8Blocks.x_len(c.embd);
            (GemvInput::Q8Blocks, s.h.view(0, words))
        } else {
            (GemvInput::Plain, s.h.clone())
        };
        let mut y_first = 0;
        for (i, w) in parts.stacks.iter().enumerate() {
            let mut call = GemvCall {
                y_first,
                input,
                norm: weights.map(|w| (w, c.eps)),
                fold: folded.then_some((x, (i == 0).then_some(x_next))),
                residual: bias,
                ..GemvCall::new(w, x_in, out)
            };
            if separate {
                if i == 0 {
                    let t = self.tunables_for(gpu, w, input);
                    ops::gemv_input(gpu, rec, call, t, &vector, q8)?;
                }
                call = GemvCall {
                    y_first,
                    input: form,
                    residual: bias,
                    ..GemvCall::new(w, &vector, out)
                };
            }
            self.gemv(gpu, rec, call)?;
            y_first += w.shape[0];
        }
        Ok(folded)
    }

    /// Records an output projection `W input(a)`: added to the residual `x` into `x_next`
    /// (returns true: the caller swaps), or, for models with post-projection norms, left in
    /// `s.proj` for the next input norm to fold in. Where the matrix takes int8 input
    /// ([`Model::int8_input`]) the input (a gated activation, formed as the many-row path
    /// forms it) goes straight into int8 blocks in `s.blocks`, one dispatch, and the GEMV
    /// reads those.
    fn project_out(
        &self,
        gpu: &Gpu,
        rec: &mut Recorder<'_>,
        [w, a, x, x_next]: [&Tensor; 4],
        input: GemvInput,
        s: &Scratch,
    ) -> Result<bool, GpuError> {
        let cols = w.shape[1];
        let blocks = s.blocks.view(0, GemvInput::Q8Blocks.x_len(cols));
        let (input, a) = if input == GemvInput::Q8Blocks {
            // Formed by the kernel before (the attention heads' combining pass) in `s.blocks`.
            (input, &blocks)
        } else if self.int8_input(std::slice::from_ref(w)) {
            let gate = match input {
                GemvInput::SwiGlu | GemvInput::GeGlu => Some(self.cfg.glu),
                GemvInput::Plain => None,
                other => {
                    return Err(GpuError::Shape(format!(
                        "int8 blocks of a {other:?} projection input"
                    )));
                }
            };
            let call = ops::Q8Blocks {
                x: a,
                rows: 1,
                width: cols,
                gate,
                blocks: &blocks,
            };
            ops::q8_blocks(gpu, rec, call)?;
            (GemvInput::Q8Blocks, &blocks)
        } else {
            (input, a)
        };
        let call = GemvCall {
            input,
            ..GemvCall::new(w, a, x_next)
        };
        if self.cfg.post_norms {
            self.gemv(gpu, rec, GemvCall { y: &s.proj, ..call })?;
            return Ok(false);
        }
        let call = GemvCall {
            residual: Some(x),
            ..call
        };
        self.gemv(gpu, rec, call)?;
        Ok(true)
    }

    /// Decode attention of layer `layer` for the token at `pos` (a cache of `ctx` positions):
    /// its window and RoPE base (local or global layer), QK-norm, and where q, k, v sit in the
    /// projections' output.
    pub(super) fn attention_params(
        &self,
        layer: usize,
        pos: usize,
        ctx: usize,
        qk_norm: bool,
    ) -> Result<DecodeAttnParams, GpuError> {
        let c = &self.cfg;
        let (q_dim, kv_dim) = (c.q_dim() as u32, c.kv_dim() as u32);
        let local = c.is_local(layer);
        let (rope_base, freq_scale) = if local {
            (c.rope_base_local, 1.0)
        } else {
            (c.rope_base, c.rope_scale)
        };
        let norm = match (qk_norm, c.norm) {
            (false, _) => QkNorm::None,
            (true, NormKind::Rms) => QkNorm::Rms,
            (true, NormKind::RmsPlusOne) => QkNorm::RmsPlusOne,
            (true, NormKind::Layer) => {
                return Err(GpuError::Shape("a LayerNorm as QK-norm".into()));
            }
        };
        Ok(DecodeAttnParams {
            heads: c.heads as u32,
            kv_heads: c.kv_heads as u32,
            head_dim: c.head_dim as u32,
            n_keys: pos as u32 + 1,
            max_ctx: ctx as u32,
            window: if local { c.window as u32 } else { 0 },
            scale: c.attn_scale,
            cap: c.attn_cap,
            blocks: 0,
            q_src: 0,
            k_src: q_dim,
            v_src: q_dim + kv_dim,
            rot_dims: c.rope_dims as u32,
            rope_base,
            freq_scale,
            norm: norm.code(),
            eps: c.eps,
            tokens: 1,
            qkv_stride: 0,
            page: 0,
            row_table: 0,
            rows_first: 0,
            split_keys: 0,
            group: 0,
        })
    }

    /// Records decode attention (`p`) of the token whose projections are in `s.qkv` against
    /// the caches `kc`, `vc`; returns how the output projection forms its input, and from
    /// which tensor: as `combine` asks where it can — at short contexts folded into that GEMV,
    /// or writing the int8 blocks an int8-input projection reads (one dispatch fewer per
    /// layer either way) — else on its own into `s.attn`.
    #[allow(clippy::too_many_arguments)]
    fn attention<'s>(
        &self,
        gpu: &Gpu,
        rec: &mut Recorder<'_>,
        s: &'s Scratch,
        kv: ops::KvLayer<'_>,
        p: DecodeAttnParams,
        qk_norm: Option<&Tensor>,
        combine: Combine,
    ) -> Result<(GemvInput, &'s Tensor), GpuError> {
        let neox = self.cfg.rope_neox;
        let call = ops::DecodeAttention {
            p,
            neox,
            qkv: &s.qkv,
            part: &s.part,
            kv,
            qk_norm,
        };
        let p = ops::attention_split(gpu, rec, call)?;
        match combine {
            Combine::Folded if p.blocks <= self.fold_max_blocks => {
                if let Some(input) = GemvInput::attention_combine(p.heads, p.head_dim, p.blocks) {
                    return Ok((input, &s.part));
                }
            }
            Combine::Blocks if p.head_dim.is_multiple_of(COMBINE_COLUMNS) => {
                let words = ops::Q8Blocks::words((p.heads * p.head_dim) as usize);
                let blocks = s.blocks.view(0, words);
                ops::attention_combine_blocks(gpu, rec, &p, &s.part, &blocks)?;
                return Ok((GemvInput::Q8Blocks, &s.blocks));
            }
            _ => {}
        }
        ops::attention_combine(gpu, rec, &p, &s.part, &s.attn)?;
        Ok((GemvInput::Plain, &s.attn))
    }

    /// The GEMV input form of the feed-forward block's gated activation.
    pub(super) fn glu_input(&self) -> Result<GemvInput, GpuError> {
        match self.cfg.glu {
            ElementOp::SiluMul => Ok(GemvInput::SwiGlu),
            ElementOp::GeluMul => Ok(GemvInput::GeGlu),
            other => Err(GpuError::Shape(format!(
                "{other:?} is not a gated activation"
            ))),
        }
    }

    /// Records the forward pass of the token at position `pos` (its row from `rows`): its keys
    /// and values are appended to `kv`, and when `logits` is set the final norm and output
    /// projection leave the next-token logits in `s.logits`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn record_token(
        &self,
        gpu: &Gpu,
        rec: &mut Recorder<'_>,
        s: &Scratch,
        rows: Rows<'_>,
        kv: &SeqKv<'_>,
        pos: usize,
        logits: bool,
    ) -> Result<(), GpuError> {
        let w = &self.weights;
        let glu = self.glu_input()?;
        self.first_rows(gpu, rec, rows, pos, &s.x)?;
        let (mut x, mut x_next) = (&s.x, &s.x_alt);
        for (i, l) in w.layers.iter().enumerate() {
            let ins = [x, x_next, &s.qkv];
            let attn_in = (&l.attn_in, l.qkv_bias.as_ref());
            if self.normed_projections(gpu, rec, ins, &l.attn_norm, attn_in, s)? {
                (x, x_next) = (x_next, x);
            }
            let p = self.attention_params(i, pos, kv.capacity(), l.qk_norm.is_some())?;
            let layer = kv.layer(i);
            // An int8-input output projection reads the combined heads as blocks.
            let combine = if self.int8_input(std::slice::from_ref(&l.wo)) {
                Combine::Blocks
            } else {
                Combine::Folded
            };
            let qk_norm = l.qk_norm.as_ref();
            let (input, attn) = self.attention(gpu, rec, s, layer, p, qk_norm, combine)?;
            let wo = [&l.wo, attn, x, x_next];
            if self.project_out(gpu, rec, wo, input, s)? {
                (x, x_next) = (x_next, x);
            }
            let ins = [x, x_next, &s.gate];
            if self.normed_projections(gpu, rec, ins, &l.ffn_norm, (&l.ffn_in, None), s)? {
                (x, x_next) = (x_next, x);
            }
            let down = [&l.w_down, &s.gate, x, x_next];
            if self.project_out(gpu, rec, down, glu, s)? {
                (x, x_next) = (x_next, x);
            }
        }
        if logits {
            let out = Projections {
                stacks: vec![w.output.clone()],
            };
            let ins = [x, x_next, &s.logits];
            self.normed_projections(gpu, rec, ins, &w.output_norm, (&out, None), s)?;
        }
        Ok(())
    }
}
