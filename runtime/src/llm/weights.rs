//! The model's tensors on the GPU, uploaded as stored (quantized blocks stay quantized), each
//! checked for the shape and type the forward pass needs; and the load plan that compares
//! sizes with the adapter's limits before anything is uploaded.

use gpuport_kernels::quant::GgmlType;

use super::config::ModelConfig;
use super::error::LlmError;
use crate::device::Gpu;
use crate::gguf::{Gguf, GgufError, TensorInfo};
use crate::tensor::{Elem, Tensor};

/// One transformer block's tensors.
pub struct LayerWeights {
    /// Pre-attention norm.
    pub attn_norm: Tensor,
    /// Query projection `[q_dim, embd]`.
    pub wq: Tensor,
    /// Key projection `[kv_dim, embd]`.
    pub wk: Tensor,
    /// Value projection `[kv_dim, embd]`.
    pub wv: Tensor,
    /// Output projection `[embd, q_dim]`.
    pub wo: Tensor,
    /// Per-head query norm (Gemma 3).
    pub q_norm: Option<Tensor>,
    /// Per-head key norm (Gemma 3).
    pub k_norm: Option<Tensor>,
    /// Norm after attention (Gemma 3).
    pub post_attn_norm: Option<Tensor>,
    /// Pre-feed-forward norm.
    pub ffn_norm: Tensor,
    /// Gate and up projections.
    pub ffn_in: FfnIn,
    /// Down projection `[embd, ff]`.
    pub w_down: Tensor,
    /// Norm after the feed-forward block (Gemma 3).
    pub post_ffn_norm: Option<Tensor>,
}

/// The feed-forward block's input projections.
pub enum FfnIn {
    /// Gate rows then up rows in one `[2 ff, embd]` matrix (same type and aligned halves): one
    /// GEMV computes both.
    Fused(Tensor),
    /// Gate `[ff, embd]` and up `[ff, embd]` apart.
    Split(Tensor, Tensor),
}

/// All of a model's tensors.
pub struct Weights {
    /// Token embeddings `[vocab, embd]`.
    pub embd: Tensor,
    /// Final norm.
    pub output_norm: Tensor,
    /// Output projection `[vocab, embd]` (the embedding table when tied).
    pub output: Tensor,
    /// Blocks.
    pub layers: Vec<LayerWeights>,
}

/// What loading a model would take, and whether the adapter allows it.
#[derive(Debug, Clone, Default)]
pub struct LoadPlan {
    /// Bytes of weights to upload.
    pub weight_bytes: u64,
    /// Bytes of KV cache for the requested context.
    pub kv_bytes: u64,
    /// Largest single tensor.
    pub largest_tensor: u64,
    /// Reasons it cannot run.
    pub blockers: Vec<String>,
    /// Things that work but cost (e.g. tables bound in chunks).
    pub warnings: Vec<String>,
}

/// A tensor the forward pass reads: name, expected shape (outermost first), whether it must
/// be f32 (norms) or may be any block type the kernels handle (matrices).
struct Need {
    name: String,
    shape: Vec<usize>,
    norm: bool,
}

fn needs(cfg: &ModelConfig, g: &Gguf) -> Vec<Need> {
    let mut out = Vec::new();
    let mut need =
        |name: String, shape: Vec<usize>, norm: bool| out.push(Need { name, shape, norm });
    let (e, q, kv, ff) = (cfg.embd, cfg.q_dim(), cfg.kv_dim(), cfg.ff);
    need("token_embd.weight".into(), vec![cfg.vocab, e], false);
    need("output_norm.weight".into(), vec![e], true);
    if g.tensor("output.weight").is_some() {
        need("output.weight".into(), vec![cfg.vocab, e], false);
    }
    for i in 0..cfg.layers {
        let b = |s: &str| format!("blk.{i}.{s}.weight");
        need(b("attn_norm"), vec![e], true);
        need(b("attn_q"), vec![q, e], false);
        need(b("attn_k"), vec![kv, e], false);
        need(b("attn_v"), vec![kv, e], false);
        need(b("attn_output"), vec![e, q], false);
        need(b("ffn_norm"), vec![e], true);
        need(b("ffn_gate"), vec![ff, e], false);
        need(b("ffn_up"), vec![ff, e], false);
        need(b("ffn_down"), vec![e, ff], false);
        if cfg.qk_norm {
            need(b("attn_q_norm"), vec![cfg.head_dim], true);
            need(b("attn_k_norm"), vec![cfg.head_dim], true);
        }
        if cfg.post_norms {
            need(b("post_attention_norm"), vec![e], true);
            need(b("post_ffw_norm"), vec![e], true);
        }
    }
    out
}

fn check(g: &Gguf, n: &Need) -> Result<(), GgufError> {
    let t = g.require_tensor(&n.name)?;
    let bad = |problem: String| GgufError::TensorShape {
        name: n.name.clone(),
        problem,
    };
    if t.shape() != n.shape {
        return Err(bad(format!(
            "shape {:?} where the model needs {:?}",
            t.shape(),
            n.shape
        )));
    }
    match t.ggml {
        Some(GgmlType::F32) => Ok(()),
        Some(_) if !n.norm => Ok(()),
        Some(_) => Err(bad(format!("type {} where f32 is needed", t.type_name()))),
        None => Err(bad(format!(
            "type {} has no GPU kernel in gpuport",
            t.type_name()
        ))),
    }
}

/// What loading `g` with a KV cache of `ctx` positions would take on `gpu`, with every blocker.
pub fn plan(cfg: &ModelConfig, g: &Gguf, gpu: &Gpu, ctx: usize) -> LoadPlan {
    let limits = gpu.limits();
    let mut p = LoadPlan {
        kv_bytes: 2 * (cfg.layers * ctx * cfg.kv_dim() * 4) as u64,
        ..LoadPlan::default()
    };
    for n in needs(cfg, g) {
        if let Err(e) = check(g, &n) {
            p.blockers.push(e.to_string());
            continue;
        }
        let Some(t) = g.tensor(&n.name) else { continue };
        p.weight_bytes += t.bytes;
        p.largest_tensor = p.largest_tensor.max(t.bytes);
        if t.bytes > limits.max_buffer_size {
            p.blockers.push(format!(
                "tensor {} needs a {}-byte buffer, the adapter allows {}",
                t.name, t.bytes, limits.max_buffer_size
            ));
        } else if t.bytes > limits.max_storage_buffer_binding_size {
            p.warnings.push(format!(
                "tensor {} ({} bytes) is bound in chunks of at most {} bytes",
                t.name, t.bytes, limits.max_storage_buffer_binding_size
            ));
        }
    }
    let kv_layer = (ctx * cfg.kv_dim() * 4) as u64;
    if kv_layer > limits.max_storage_buffer_binding_size {
        p.blockers.push(format!(
            "a KV cache of {ctx} positions needs {kv_layer}-byte bindings per layer, the adapter \
             allows {}; use a shorter context",
            limits.max_storage_buffer_binding_size
        ));
    }
    if ctx > cfg.context {
        p.warnings.push(format!(
            "context {ctx} is longer than the {} the model was trained with",
            cfg.context
        ));
    }
    p
}

fn upload(gpu: &Gpu, g: &Gguf, t: &TensorInfo) -> Result<Tensor, LlmError> {
    Ok(gpu.upload(g.data(t), elem_of(t)?, &t.shape(), &t.name)?)
}

/// Gate and up fused when they share a type and the up half of the output starts at an offset
/// the adapter can bind.
fn ffn_in(gpu: &Gpu, g: &Gguf, gate: &str, up: &str) -> Result<FfnIn, LlmError> {
    let (tg, tu) = (g.require_tensor(gate)?, g.require_tensor(up)?);
    let half_bytes = 4 * tg.shape()[0] as u64;
    let align = u64::from(gpu.limits().min_storage_buffer_offset_alignment);
    if tg.type_id != tu.type_id || tg.dims != tu.dims || !half_bytes.is_multiple_of(align) {
        return Ok(FfnIn::Split(upload(gpu, g, tg)?, upload(gpu, g, tu)?));
    }
    let mut bytes = Vec::with_capacity((tg.bytes + tu.bytes) as usize);
    bytes.extend_from_slice(g.data(tg));
    bytes.extend_from_slice(g.data(tu));
    let mut shape = tg.shape();
    shape[0] *= 2;
    let fused = gpu.upload(&bytes, elem_of(tg)?, &shape, "ffn gate+up")?;
    Ok(FfnIn::Fused(fused))
}

/// The element type a GGUF tensor uploads as; a type without kernels (refused by the load
/// checks before any upload) is an error here too.
fn elem_of(t: &TensorInfo) -> Result<Elem, LlmError> {
    match t.ggml {
        Some(GgmlType::F32) => Ok(Elem::F32),
        Some(ty) => Ok(Elem::Ggml(ty)),
        None => Err(GgufError::TensorShape {
            name: t.name.clone(),
            problem: format!("type {} has no GPU kernel in gpuport", t.type_name()),
        }
        .into()),
    }
}

impl Weights {
    /// Checks every tensor, then uploads them.
    pub fn load(cfg: &ModelConfig, g: &Gguf, gpu: &Gpu) -> Result<Weights, LlmError> {
        for n in needs(cfg, g) {
            check(g, &n)?;
        }
        let get =
            |name: &str| -> Result<Tensor, LlmError> { upload(gpu, g, g.require_tensor(name)?) };
        let opt = |name: String, on: bool| -> Result<Option<Tensor>, LlmError> {
            if on { get(&name).map(Some) } else { Ok(None) }
        };
        let embd = get("token_embd.weight")?;
        let output = match g.tensor("output.weight") {
            Some(_) => get("output.weight")?,
            None => embd.clone(),
        };
        let mut layers = Vec::with_capacity(cfg.layers);
        for i in 0..cfg.layers {
            let b = |s: &str| format!("blk.{i}.{s}.weight");
            layers.push(LayerWeights {
                attn_norm: get(&b("attn_norm"))?,
                wq: get(&b("attn_q"))?,
                wk: get(&b("attn_k"))?,
                wv: get(&b("attn_v"))?,
                wo: get(&b("attn_output"))?,
                q_norm: opt(b("attn_q_norm"), cfg.qk_norm)?,
                k_norm: opt(b("attn_k_norm"), cfg.qk_norm)?,
                post_attn_norm: opt(b("post_attention_norm"), cfg.post_norms)?,
                ffn_norm: get(&b("ffn_norm"))?,
                ffn_in: ffn_in(gpu, g, &b("ffn_gate"), &b("ffn_up"))?,
                w_down: get(&b("ffn_down"))?,
                post_ffn_norm: opt(b("post_ffw_norm"), cfg.post_norms)?,
            });
        }
        Ok(Weights {
            embd,
            output_norm: get("output_norm.weight")?,
            output,
            layers,
        })
    }
}
