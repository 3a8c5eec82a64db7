//! A model's hyperparameters and layer graph options, read from GGUF metadata. The forward pass
//! is data-driven from this struct: a new family is a new `from_gguf` arm, not a new executor.

use gpuport_kernels::rowops::{ElementOp, NormKind};

use gpuport_gguf::{Gguf, GgufError, Metadata};

/// Architectures this executor runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    /// `llama` (Llama 2/3, SmolLM2, Mistral-style without biases).
    Llama,
    /// `gemma3`.
    Gemma3,
}

impl Arch {
    /// The GGUF `general.architecture` string.
    pub fn name(self) -> &'static str {
        match self {
            Arch::Llama => "llama",
            Arch::Gemma3 => "gemma3",
        }
    }
}

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
}

impl ModelConfig {
    /// Reads the configuration of a supported architecture.
    pub fn from_gguf(g: &Gguf) -> Result<ModelConfig, GgufError> {
        let arch_name = g.str("general.architecture")?;
        let arch = match arch_name {
            "llama" => Arch::Llama,
            "gemma3" => Arch::Gemma3,
            other => {
                return Err(GgufError::KeyType {
                    key: "general.architecture".into(),
                    expected: "a supported architecture (llama, gemma3)",
                    found: format!("{other:?}"),
                });
            }
        };
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
        let common = ModelConfig {
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
        };
        Ok(match arch {
            Arch::Llama => common,
            // Gemma 3, as llama.cpp and Hugging Face transformers run it. Not in the GGUF and
            // taken from those implementations: local layers use RoPE base 10,000; five of
            // every six layers are local (layer i is global when i % 6 == 5); embeddings are
            // scaled by sqrt(hidden); RoPE is NEOX-style. The converter already stores the
            // norms' weights as (1 + w), so plain RMSNorm applies.
            Arch::Gemma3 => ModelConfig {
                rope_neox: true,
                rope_base: opt_f("rope.freq_base")?.unwrap_or(1_000_000.0),
                window: opt_u("attention.sliding_window")?.map_or(0, |v| v as usize),
                window_period: 6,
                embed_scale: (embd as f32).sqrt(),
                glu: ElementOp::GeluMul,
                qk_norm: true,
                post_norms: true,
                ..common
            },
        })
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
