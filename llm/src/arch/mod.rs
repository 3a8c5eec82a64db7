//! The architectures: each in one file ([`llama`], [`gemma3`], [`qwen2`]) with its
//! hyperparameters from GGUF metadata, its tensor-name table, and the shared blocks its layer
//! is built from (norm, attention with optional bias / QK-norm / sliding window / soft cap,
//! GLU FFN), chosen by the [`ModelConfig`] fields it sets. The forward pass (`forward`) walks
//! those blocks; a new family is a new file here plus its line in [`Arch`], not a new
//! executor.

pub mod gemma3;
pub mod llama;
pub mod qwen2;

use gpuport_kernels::rowops::{ElementOp, NormKind};
use gpuport_runtime::ops;
use gpuport_runtime::tensor::Tensor;

use gpuport_gguf::{Gguf, GgufError, Metadata};

/// Architectures this executor runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    /// `llama` (Llama 2/3, SmolLM2, Mistral-style without biases).
    Llama,
    /// `gemma3`.
    Gemma3,
    /// `qwen2` (Qwen2, Qwen2.5).
    Qwen2,
}

impl Arch {
    /// Every architecture, in the order error messages list them.
    pub const ALL: [Arch; 3] = [Arch::Llama, Arch::Gemma3, Arch::Qwen2];

    /// The GGUF `general.architecture` string.
    pub fn name(self) -> &'static str {
        match self {
            Arch::Llama => "llama",
            Arch::Gemma3 => "gemma3",
            Arch::Qwen2 => "qwen2",
        }
    }

    /// The architecture named `name` in `general.architecture`.
    pub fn from_name(name: &str) -> Option<Arch> {
        Arch::ALL.into_iter().find(|a| a.name() == name)
    }

    /// The tensors of layer `i`, by this architecture's names.
    pub fn layer_names(self, i: usize) -> LayerNames {
        match self {
            Arch::Llama => llama::layer_names(i),
            Arch::Gemma3 => gemma3::layer_names(i),
            Arch::Qwen2 => qwen2::layer_names(i),
        }
    }
}

/// The GGUF names of one layer's tensors. The optional groups are present exactly when the
/// architecture's block uses them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayerNames {
    /// Pre-attention norm.
    pub attn_norm: String,
    /// Query, key and value projections.
    pub qkv: [String; 3],
    /// Biases of the query, key and value projections (Qwen2).
    pub qkv_bias: Option<[String; 3]>,
    /// Per-head query and key norms (Gemma 3).
    pub qk_norm: Option<[String; 2]>,
    /// Attention output projection.
    pub attn_out: String,
    /// Norms after attention and after the FFN (Gemma 3's sandwich norms).
    pub post_norms: Option<[String; 2]>,
    /// Pre-FFN norm.
    pub ffn_norm: String,
    /// Gate and up projections.
    pub gate_up: [String; 2],
    /// Down projection.
    pub down: String,
}

impl LayerNames {
    /// The names llama.cpp's converters give the plain pre-norm block of layer `i`.
    pub fn standard(i: usize) -> LayerNames {
        let b = |s: &str| format!("blk.{i}.{s}.weight");
        LayerNames {
            attn_norm: b("attn_norm"),
            qkv: [b("attn_q"), b("attn_k"), b("attn_v")],
            qkv_bias: None,
            qk_norm: None,
            attn_out: b("attn_output"),
            post_norms: None,
            ffn_norm: b("ffn_norm"),
            gate_up: [b("ffn_gate"), b("ffn_up")],
            down: b("ffn_down"),
        }
    }
}

/// Token embeddings.
pub const TOKEN_EMBD: &str = "token_embd.weight";
/// The final norm.
pub const OUTPUT_NORM: &str = "output_norm.weight";
/// The output projection (absent when tied to the embeddings).
pub const OUTPUT: &str = "output.weight";

/// Everything the forward pass needs to know about a model.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelConfig {
    /// Architecture.
    pub arch: Arch,
    /// Transformer blocks.
    pub layers: usize,
    /// Hidden size.
    pub embd: usize,
    /// Feed-forward inner size.
    pub ff: usize,
    /// Query heads.
    pub heads: usize,
    /// Key/value heads.
    pub kv_heads: usize,
    /// Elements per head.
    pub head_dim: usize,
    /// Rotated elements per head.
    pub rope_dims: usize,
    /// RoPE rotates (i, i + d/2) (NEOX) rather than (2i, 2i + 1).
    pub rope_neox: bool,
    /// RoPE base of global layers.
    pub rope_base: f32,
    /// RoPE position scale of global layers (1 / linear scaling factor).
    pub rope_scale: f32,
    /// RoPE base of sliding-window layers.
    pub rope_base_local: f32,
    /// RMSNorm epsilon.
    pub eps: f32,
    /// Vocabulary size (rows of the embedding table).
    pub vocab: usize,
    /// Trained context length.
    pub context: usize,
    /// Sliding window (positions, the current one included); 0 = none.
    pub window: usize,
    /// Layer `i` uses the sliding window when `i % window_period < window_period - 1`
    /// (0 = every layer is global).
    pub window_period: usize,
    /// Embedding multiplier.
    pub embed_scale: f32,
    /// Attention score multiplier.
    pub attn_scale: f32,
    /// Attention logit soft cap (0 = none).
    pub attn_cap: f32,
    /// Final logit soft cap (0 = none).
    pub final_cap: f32,
    /// The gated activation of the feed-forward block.
    pub glu: ElementOp,
    /// RMSNorm flavour of the stored weights.
    pub norm: NormKind,
    /// Per-head RMSNorm of q and k before RoPE.
    pub qk_norm: bool,
    /// Norms after attention and after the feed-forward block (Gemma's sandwich).
    pub post_norms: bool,
    /// Biases on the query, key and value projections (Qwen2).
    pub qkv_bias: bool,
}

impl ModelConfig {
    /// The model's normalization of rows of `x` (hidden width) by `w` into `y`.
    pub(crate) fn norm<'a>(&self, x: &'a Tensor, w: &'a Tensor, y: &'a Tensor) -> ops::Norm<'a> {
        ops::Norm {
            kind: self.norm,
            x,
            w,
            y,
            cols: self.embd,
            eps: self.eps,
        }
    }

    /// Reads the configuration of a supported architecture: the keys every architecture
    /// shares, then the architecture's own file.
    pub fn from_gguf(g: &Gguf) -> Result<ModelConfig, GgufError> {
        let arch_name = g.str("general.architecture")?;
        let Some(arch) = Arch::from_name(arch_name) else {
            return Err(GgufError::KeyType {
                key: "general.architecture".into(),
                expected: "a supported architecture (llama, gemma3, qwen2)",
                found: format!("{arch_name:?}"),
            });
        };
        let common = ModelConfig::common(g, arch)?;
        match arch {
            Arch::Llama => llama::config(g, common),
            Arch::Gemma3 => gemma3::config(g, common),
            Arch::Qwen2 => qwen2::config(g, common),
        }
    }

    /// The hyperparameters under the keys every architecture names alike
    /// (`<arch>.block_count`, …), with the plain llama block's options.
    fn common(g: &Gguf, arch: Arch) -> Result<ModelConfig, GgufError> {
        let arch_name = arch.name();
        let key = |k: &str| format!("{arch_name}.{k}");
        let u = |k: &str| g.u32(&key(k)).map(|v| v as usize);
        let opt_u = |k: &str| g.optional(&key(k), Gguf::u32);
        let opt_f = |k: &str| g.optional(&key(k), Gguf::f32);
        let embd = u("embedding_length")?;
        let heads = u("attention.head_count")?;
        let kv_heads = opt_u("attention.head_count_kv")?.map_or(heads, |v| v as usize);
        let head_dim = match opt_u("attention.key_length")? {
            Some(v) => v as usize,
            None if heads > 0 => embd / heads,
            None => 0,
        };
        if heads == 0 || kv_heads == 0 || !heads.is_multiple_of(kv_heads) || head_dim == 0 {
            return Err(GgufError::KeyType {
                key: key("attention.head_count_kv"),
                expected: "head counts where kv heads divide heads",
                found: format!("{heads} heads, {kv_heads} kv heads, head dim {head_dim}"),
            });
        }
        let vocab = match g.optional(&key("vocab_size"), Gguf::u32)? {
            Some(v) => v as usize,
            None => g.str_array("tokenizer.ggml.tokens")?.len(),
        };
        let rope_scale = match g.optional(&key("rope.scaling.factor"), Gguf::f32)? {
            Some(f) if f > 0.0 => 1.0 / f,
            _ => 1.0,
        };
        Ok(ModelConfig {
            arch,
            layers: u("block_count")?,
            embd,
            ff: u("feed_forward_length")?,
            heads,
            kv_heads,
            head_dim,
            rope_dims: opt_u("rope.dimension_count")?.map_or(head_dim, |v| v as usize),
            rope_neox: false,
            rope_base: opt_f("rope.freq_base")?.unwrap_or(10_000.0),
            rope_scale,
            rope_base_local: 10_000.0,
            eps: g.f32(&key("attention.layer_norm_rms_epsilon"))?,
            vocab,
            context: u("context_length")?,
            window: 0,
            window_period: 0,
            embed_scale: 1.0,
            attn_scale: 1.0 / (head_dim as f32).sqrt(),
            attn_cap: opt_f("attn_logit_softcapping")?.unwrap_or(0.0),
            final_cap: opt_f("final_logit_softcapping")?.unwrap_or(0.0),
            glu: ElementOp::SiluMul,
            norm: NormKind::Rms,
            qk_norm: false,
            post_norms: false,
            qkv_bias: false,
        })
    }

    /// The tensors of layer `i`.
    pub fn layer_names(&self, i: usize) -> LayerNames {
        self.arch.layer_names(i)
    }

    /// Whether layer `i` attends through the sliding window.
    pub fn is_local(&self, layer: usize) -> bool {
        self.window > 0
            && self.window_period > 0
            && layer % self.window_period < self.window_period - 1
    }

    /// Elements of one token's keys (or values).
    pub fn kv_dim(&self) -> usize {
        self.kv_heads * self.head_dim
    }

    /// Elements of one token's queries.
    pub fn q_dim(&self) -> usize {
        self.heads * self.head_dim
    }
}
