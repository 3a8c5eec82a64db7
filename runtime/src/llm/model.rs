//! A loaded model: configuration, GPU weights, and the forward pass of one token recorded onto
//! a [`Recorder`] — every kernel of every layer appended to the open compute pass, nothing read
//! back.

use std::collections::HashMap;

use gpuport_kernels::attention::{DecodeAttnParams, RopeStoreParams};
use gpuport_kernels::gemv::GemvTunables;
use gpuport_kernels::quant::GgmlType;
use gpuport_kernels::rowops::{self, ElementOp};

use super::config::ModelConfig;
use super::error::LlmError;
use super::weights::{self, FfnIn, LoadPlan, Weights};
use crate::device::Gpu;
use crate::error::GpuError;
use crate::gguf::Gguf;
use crate::ops;
use crate::recorder::Recorder;
use crate::tensor::{Elem, Tensor};

/// Workgroups a decode GEMV should have at least on a GPU: tables tuned on 100+ MB matrices
/// choose many rows per workgroup, which leaves a 576-row projection 9 workgroups on a
/// 132-core GPU. A CPU adapter (lavapipe) runs a few workgroups at a time and only pays for
/// more, so it keeps the table's choice.
fn min_gemv_groups(gpu: &Gpu) -> usize {
    if gpu.info().device_type == wgpu::DeviceType::Cpu {
        1
    } else {
        264
    }
}

/// A model on the GPU.
pub struct Model {
    /// Hyperparameters and graph options.
    pub cfg: ModelConfig,
    /// Tensors.
    pub weights: Weights,
    tunables: HashMap<GgmlType, GemvTunables>,
}

/// Activations of one token, reused by every layer and step.
pub(crate) struct Scratch {
    x: Tensor,
    x_alt: Tensor,
    h: Tensor,
    q: Tensor,
    q_normed: Tensor,
    k: Tensor,
    k_normed: Tensor,
    v: Tensor,
    attn: Tensor,
    proj: Tensor,
    proj_normed: Tensor,
    gate: Tensor,
    up: Tensor,
    act: Tensor,
    pub(crate) logits: Tensor,
    pub(crate) probs: Tensor,
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
            q: f(q, "q")?,
            q_normed: f(q, "q normed")?,
            k: f(kv, "k")?,
            k_normed: f(kv, "k normed")?,
            v: f(kv, "v")?,
            attn: f(q, "attention")?,
            proj: f(e, "projection")?,
            proj_normed: f(e, "projection normed")?,
            gate: f(2 * cfg.ff, "gate (and up, fused)")?,
            up: f(cfg.ff, "up")?,
            act: f(cfg.ff, "activation")?,
            logits: f(cfg.vocab, "logits")?,
            probs: f(cfg.vocab, "probabilities")?,
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

/// The per-layer KV cache: `[ctx, kv_heads, head_dim]` f32 keys and values.
pub(crate) struct KvCache {
    pub(crate) layers: Vec<(Tensor, Tensor)>,
    pub(crate) ctx: usize,
}

impl KvCache {
    pub(crate) fn new(gpu: &Gpu, cfg: &ModelConfig, ctx: usize) -> Result<KvCache, GpuError> {
        let n = ctx * cfg.kv_dim();
        let layers = (0..cfg.layers)
            .map(|i| {
                Ok((
                    gpu.zeros_f32(&[n], &format!("keys {i}"))?,
                    gpu.zeros_f32(&[n], &format!("values {i}"))?,
                ))
            })
            .collect::<Result<_, GpuError>>()?;
        Ok(KvCache { layers, ctx })
    }
}

impl Model {
    /// Reads the configuration, checks the plan against the adapter (every blocker reported),
    /// and uploads the weights.
    pub fn load(gpu: &Gpu, g: &Gguf, ctx: usize) -> Result<Model, LlmError> {
        let cfg = ModelConfig::from_gguf(g)?;
        let plan = Model::plan(gpu, g, &cfg, ctx);
        if !plan.blockers.is_empty() {
            return Err(LlmError::CannotRun(plan.blockers));
        }
        let weights = Weights::load(&cfg, g, gpu)?;
        let table = crate::tuning::TuningTable::load();
        let tunables = GgmlType::ALL
            .into_iter()
            .map(|ty| (ty, gpu.gemv_tunables_in(&table, ty)))
            .collect();
        Ok(Model {
            cfg,
            weights,
            tunables,
        })
    }

    /// What loading would take here, with blockers and warnings (`gpuport can-run`).
    pub fn plan(gpu: &Gpu, g: &Gguf, cfg: &ModelConfig, ctx: usize) -> LoadPlan {
        let mut p = weights::plan(cfg, g, gpu, ctx);
        if cfg.final_cap != 0.0 {
            p.blockers
                .push("final logit soft-capping is not implemented".to_string());
        }
        if ctx == 0 {
            p.blockers.push("a context of 0 positions".to_string());
        }
        p
    }

    fn gemv(
        &self,
        gpu: &Gpu,
        rec: &mut Recorder<'_>,
        w: &Tensor,
        x: &Tensor,
        y: &Tensor,
    ) -> Result<(), GpuError> {
        ops::gemv(gpu, rec, w, x, y, self.tunables_for(gpu, w))
    }

    /// The GEMV tunables for weight `w` here: the tuning table's, with rows per workgroup fit
    /// to the matrix.
    fn tunables_for(&self, gpu: &Gpu, w: &Tensor) -> GemvTunables {
        let ty = ops::ggml_type(w).unwrap_or(GgmlType::F32);
        self.tunables
            .get(&ty)
            .copied()
            .unwrap_or_else(|| GemvTunables::default_for(gpu.has_subgroups()))
            .fit_rows(w.shape[0], min_gemv_groups(gpu))
    }

    /// Records `out = x + post_norm(W a)`: with no post-projection norm the add is fused into
    /// the GEMV; Gemma's sandwich norm needs the whole projection first.
    fn project_residual(
        &self,
        gpu: &Gpu,
        rec: &mut Recorder<'_>,
        [w, a, x, out]: [&Tensor; 4],
        post_norm: &Option<Tensor>,
        s: &Scratch,
    ) -> Result<(), GpuError> {
        let Some(pn) = post_norm else {
            return ops::gemv_residual(gpu, rec, [w, a, x, out], self.tunables_for(gpu, w));
        };
        self.gemv(gpu, rec, w, a, &s.proj)?;
        let c = &self.cfg;
        ops::norm(
            gpu,
            rec,
            c.norm,
            [&s.proj, pn, &s.proj_normed],
            c.embd,
            c.eps,
        )?;
        ops::elementwise(gpu, rec, ElementOp::Add, x, &s.proj_normed, out, 1.0)
    }

    /// Records the forward pass of the token at `s.tokens[pos]` (position `pos`): its keys and
    /// values are appended to `kv`, and when `logits` is set the final norm and output
    /// projection leave the next-token logits in `s.logits`.
    pub(crate) fn record_token(
        &self,
        gpu: &Gpu,
        rec: &mut Recorder<'_>,
        s: &Scratch,
        kv: &KvCache,
        pos: usize,
        logits: bool,
    ) -> Result<(), GpuError> {
        let c = &self.cfg;
        let w = &self.weights;
        let norm = |rec: &mut Recorder<'_>, x: &Tensor, wt: &Tensor, y: &Tensor, cols| {
            ops::norm(gpu, rec, c.norm, [x, wt, y], cols, c.eps)
        };
        ops::embed(gpu, rec, &w.embd, &s.tokens, pos, &s.x, c.embed_scale)?;
        let (mut x, mut x_next) = (&s.x, &s.x_alt);
        for (i, l) in w.layers.iter().enumerate() {
            let (kc, vc) = &kv.layers[i];
            norm(rec, x, &l.attn_norm, &s.h, c.embd)?;
            self.gemv(gpu, rec, &l.wq, &s.h, &s.q)?;
            self.gemv(gpu, rec, &l.wk, &s.h, &s.k)?;
            self.gemv(gpu, rec, &l.wv, &s.h, &s.v)?;
            let (q, k) = match (&l.q_norm, &l.k_norm) {
                (Some(qn), Some(kn)) => {
                    norm(rec, &s.q, qn, &s.q_normed, c.head_dim)?;
                    norm(rec, &s.k, kn, &s.k_normed, c.head_dim)?;
                    (&s.q_normed, &s.k_normed)
                }
                _ => (&s.q, &s.k),
            };
            let local = c.is_local(i);
            let (base, scale) = if local {
                (c.rope_base_local, 1.0)
            } else {
                (c.rope_base, c.rope_scale)
            };
            let p = RopeStoreParams {
                heads: c.heads as u32,
                kv_heads: c.kv_heads as u32,
                head_dim: c.head_dim as u32,
                rot_dims: c.rope_dims as u32,
                base,
                freq_scale: scale,
                pos: pos as u32,
                dst: (pos * c.kv_dim()) as u32,
                grid_x: 0,
                pad: [0; 3],
            };
            ops::rope_store(gpu, rec, p, c.rope_neox, [q, k, &s.v, kc, vc])?;
            let p = DecodeAttnParams {
                heads: c.heads as u32,
                kv_heads: c.kv_heads as u32,
                head_dim: c.head_dim as u32,
                n_keys: pos as u32 + 1,
                max_ctx: kv.ctx as u32,
                window: if local { c.window as u32 } else { 0 },
                scale: c.attn_scale,
                cap: c.attn_cap,
                blocks: 0,
                pad: [0; 3],
            };
            ops::attention_decode(gpu, rec, p, [q, kc, vc, &s.part, &s.attn])?;
            self.project_residual(gpu, rec, [&l.wo, &s.attn, x, x_next], &l.post_attn_norm, s)?;
            (x, x_next) = (x_next, x);
            norm(rec, x, &l.ffn_norm, &s.h, c.embd)?;
            match &l.ffn_in {
                FfnIn::Fused(w) => {
                    self.gemv(gpu, rec, w, &s.h, &s.gate)?;
                    let (g, u) = (s.gate.view(0, c.ff), s.gate.view(c.ff, c.ff));
                    ops::elementwise(gpu, rec, c.glu, &g, &u, &s.act, 1.0)?;
                }
                FfnIn::Split(wg, wu) => {
                    let g = s.gate.view(0, c.ff);
                    self.gemv(gpu, rec, wg, &s.h, &g)?;
                    self.gemv(gpu, rec, wu, &s.h, &s.up)?;
                    ops::elementwise(gpu, rec, c.glu, &g, &s.up, &s.act, 1.0)?;
                }
            }
            self.project_residual(
                gpu,
                rec,
                [&l.w_down, &s.act, x, x_next],
                &l.post_ffn_norm,
                s,
            )?;
            (x, x_next) = (x_next, x);
        }
        if logits {
            norm(rec, x, &w.output_norm, &s.h, c.embd)?;
            self.gemv(gpu, rec, &w.output, &s.h, &s.logits)?;
        }
        Ok(())
    }
}
