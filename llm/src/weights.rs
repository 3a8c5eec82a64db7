//! The model's tensors on the GPU, uploaded as stored (quantized blocks stay quantized; Q6_K's
//! reordered into the kernels' groups by the upload, `gpuport_kernels::quant::gpu_layout`), each
//! checked for the shape and type the forward pass needs; and the load plan that compares
//! sizes with the adapter's limits before anything is uploaded.

use gpuport_kernels::quant::GgmlType;

use super::arch::{self, ModelConfig};
use super::error::LlmError;
use gpuport_gguf::{Gguf, GgufError, TensorInfo};
use gpuport_runtime::device::Gpu;
use gpuport_runtime::tensor::{Elem, Tensor};

/// One transformer block's tensors.
pub struct LayerWeights {
    /// Pre-attention norm.
    pub attn_norm: InputNorm,
    /// Query `[q_dim, embd]`, key and value `[kv_dim, embd]` projections.
    pub attn_in: Projections,
    /// Output projection `[embd, q_dim]`.
    pub wo: Tensor,
    /// Per-head query norm then per-head key norm (Gemma 3), `2 head_dim` f32.
    pub qk_norm: Option<Tensor>,
    /// Query, key and value biases, concatenated like the projections' outputs (Qwen2),
    /// `q_dim + 2 kv_dim` f32.
    pub qkv_bias: Option<Tensor>,
    /// Pre-feed-forward norm.
    pub ffn_norm: InputNorm,
    /// Gate and up `[ff, embd]` projections.
    pub ffn_in: Projections,
    /// Down projection `[embd, ff]`.
    pub w_down: Tensor,
}

/// The norm in front of a block's input projections.
pub enum InputNorm {
    /// Its weights (`embd` f32).
    Plain(Tensor),
    /// A norm with the previous projection's post-norm before it (Gemma 3's sandwich norms):
    /// decode folds the post-norm and its residual add into this norm's GEMVs, prefill runs
    /// them in turn.
    Folded {
        /// The post-norm's weights, then this norm's (`2 embd` f32), as the folded GEMV reads
        /// them.
        both: Tensor,
        /// The post-norm's weights (`embd`).
        post: Tensor,
        /// This norm's weights (`embd`).
        own: Tensor,
    },
}

impl InputNorm {
    /// The weights of the norm itself (after a folded post-norm and its residual add).
    pub fn own(&self) -> &Tensor {
        match self {
            InputNorm::Plain(w) | InputNorm::Folded { own: w, .. } => w,
        }
    }
}

/// Projections of one input whose outputs go to consecutive ranges of one buffer (q, k, v;
/// gate, up). Runs of consecutive matrices that share a type and a column count are stacked
/// row-wise into one matrix, so one GEMV computes them all (Gemma 3 270M stores some layers'
/// values in another type than their queries and keys: two GEMVs there, one elsewhere).
pub struct Projections {
    /// The stacked matrices, in output order.
    pub stacks: Vec<Tensor>,
}

/// All of a model's tensors.
pub struct Weights {
    /// Token embeddings `[vocab, embd]`.
    pub embd: Tensor,
    /// Final norm.
    pub output_norm: InputNorm,
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
    let mut need = |name: &str, shape: Vec<usize>, norm: bool| {
        out.push(Need {
            name: name.to_string(),
            shape,
            norm,
        })
    };
    let (e, q, kv, ff) = (cfg.embd, cfg.q_dim(), cfg.kv_dim(), cfg.ff);
    need(arch::TOKEN_EMBD, vec![cfg.vocab, e], false);
    need(arch::OUTPUT_NORM, vec![e], true);
    if g.tensor(arch::OUTPUT).is_some() {
        need(arch::OUTPUT, vec![cfg.vocab, e], false);
    }
    for i in 0..cfg.layers {
        let n = cfg.layer_names(i);
        need(&n.attn_norm, vec![e], true);
        for (name, rows) in n.qkv.iter().zip([q, kv, kv]) {
            need(name, vec![rows, e], false);
        }
        if let Some(biases) = &n.qkv_bias {
            for (name, rows) in biases.iter().zip([q, kv, kv]) {
                need(name, vec![rows], true);
            }
        }
        need(&n.attn_out, vec![e, q], false);
        need(&n.ffn_norm, vec![e], true);
        for name in &n.gate_up {
            need(name, vec![ff, e], false);
        }
        need(&n.down, vec![e, ff], false);
        for name in n.qk_norm.iter().flatten() {
            need(name, vec![cfg.head_dim], true);
        }
        for name in n.post_norms.iter().flatten() {
            need(name, vec![e], true);
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

/// What loading `g` with a KV cache of `ctx` positions of `kv` values would take on `gpu`, with
/// every blocker.
pub fn plan(cfg: &ModelConfig, g: &Gguf, gpu: &Gpu, (ctx, kv): (usize, GgmlType)) -> LoadPlan {
    let limits = gpu.limits();
    let kv_bytes = super::kv_cache::pool_bytes(cfg, ctx, super::kv_cache::DEFAULT_PAGE, kv);
    let mut p = LoadPlan {
        kv_bytes,
        ..LoadPlan::default()
    };
    for n in needs(cfg, g) {
        if let Err(e) = check(g, &n) {
            p.blockers.push(e.to_string());
            continue;
        }
        let Some(t) = g.tensor(&n.name) else { continue };
        // The GPU copy: Q6_K's groups may add up to seven zero blocks (`gpu_layout`).
        let bytes = t.ggml.map_or(t.bytes, |ty| {
            gpuport_kernels::quant::gpu_layout_bytes(ty, t.bytes as usize) as u64
        });
        p.weight_bytes += bytes;
        p.largest_tensor = p.largest_tensor.max(bytes);
        if bytes > limits.max_buffer_size {
            p.blockers.push(format!(
                "tensor {} needs a {}-byte buffer, the adapter allows {}",
                t.name, bytes, limits.max_buffer_size
            ));
        } else if bytes > limits.max_storage_buffer_binding_size {
            p.warnings.push(format!(
                "tensor {} ({} bytes) is bound in chunks of at most {} bytes",
                t.name, bytes, limits.max_storage_buffer_binding_size
            ));
        }
    }
    if let Err(e) = super::kv_cache::check_kv_type(kv) {
        p.blockers.push(e.to_string());
    }
    let kv_layer = kv_bytes / (2 * cfg.layers.max(1) as u64);
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

/// The GGUF tensors the forward pass reads (the model's parameters), in graph order; those
/// missing from the file are left out (the plan reports them).
pub fn parameters<'g>(cfg: &ModelConfig, g: &'g Gguf) -> Vec<&'g TensorInfo> {
    needs(cfg, g)
        .iter()
        .filter_map(|n| g.tensor(&n.name))
        .collect()
}

fn upload(gpu: &Gpu, g: &Gguf, t: &TensorInfo) -> Result<Tensor, LlmError> {
    Ok(gpu.upload(g.data(t), elem_of(t)?, &t.shape(), &t.name)?)
}

/// The named matrices as [`Projections`].
fn projections(
    gpu: &Gpu,
    g: &Gguf,
    names: &[String],
    label: &str,
) -> Result<Projections, LlmError> {
    let infos = names
        .iter()
        .map(|n| g.require_tensor(n))
        .collect::<Result<Vec<_>, _>>()?;
    let stackable =
        |a: &TensorInfo, b: &TensorInfo| a.type_id == b.type_id && a.shape()[1..] == b.shape()[1..];
    let mut stacks = Vec::new();
    for run in infos.chunk_by(|a, b| stackable(a, b)) {
        if let [one] = run {
            stacks.push(upload(gpu, g, one)?);
            continue;
        }
        let mut bytes = Vec::with_capacity(run.iter().map(|t| t.bytes as usize).sum());
        let mut shape = run[0].shape();
        shape[0] = 0;
        for t in run {
            bytes.extend_from_slice(g.data(t));
            shape[0] += t.shape()[0];
        }
        stacks.push(gpu.upload(&bytes, elem_of(run[0])?, &shape, label)?);
    }
    Ok(Projections { stacks })
}

/// Small f32 vectors concatenated into one tensor.
fn concat_f32(gpu: &Gpu, g: &Gguf, names: &[String], label: &str) -> Result<Tensor, LlmError> {
    let mut bytes = Vec::new();
    let mut n = 0;
    for name in names {
        let t = g.require_tensor(name)?;
        bytes.extend_from_slice(g.data(t));
        n += t.shape().iter().product::<usize>();
    }
    Ok(gpu.upload(&bytes, Elem::F32, &[n], label)?)
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
        // With post-norms every input norm but the first folds the post-norm before it.
        let norm = |post: Option<String>, own: String| -> Result<InputNorm, LlmError> {
            Ok(match post {
                Some(post) if cfg.post_norms => InputNorm::Folded {
                    both: concat_f32(gpu, g, &[post.clone(), own.clone()], &own)?,
                    post: get(&post)?,
                    own: get(&own)?,
                },
                _ => InputNorm::Plain(get(&own)?),
            })
        };
        let embd = get(arch::TOKEN_EMBD)?;
        let output = match g.tensor(arch::OUTPUT) {
            Some(_) => get(arch::OUTPUT)?,
            None => embd.clone(),
        };
        let names: Vec<_> = (0..cfg.layers).map(|i| cfg.layer_names(i)).collect();
        let post_ffn = |n: &arch::LayerNames| n.post_norms.as_ref().map(|[_, f]| f.clone());
        let mut layers = Vec::with_capacity(cfg.layers);
        for (i, n) in names.iter().enumerate() {
            let prev_post = i.checked_sub(1).and_then(|p| post_ffn(&names[p]));
            let post_attn = n.post_norms.as_ref().map(|[a, _]| a.clone());
            layers.push(LayerWeights {
                attn_norm: norm(prev_post, n.attn_norm.clone())?,
                attn_in: projections(gpu, g, &n.qkv, &format!("blk.{i} q+k+v"))?,
                wo: get(&n.attn_out)?,
                qk_norm: match &n.qk_norm {
                    Some(both) => Some(concat_f32(gpu, g, both, &format!("blk.{i} q+k norms"))?),
                    None => None,
                },
                qkv_bias: match &n.qkv_bias {
                    Some(all) => Some(concat_f32(gpu, g, all, &format!("blk.{i} q+k+v bias"))?),
                    None => None,
                },
                ffn_norm: norm(post_attn, n.ffn_norm.clone())?,
                ffn_in: projections(gpu, g, &n.gate_up, &format!("blk.{i} gate+up"))?,
                w_down: get(&n.down)?,
            });
        }
        let last_post = names.last().and_then(post_ffn);
        Ok(Weights {
            embd,
            output_norm: norm(last_post, arch::OUTPUT_NORM.into())?,
            output,
            layers,
        })
    }
}
