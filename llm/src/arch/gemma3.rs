//! `gemma3`: Gemma 3. The llama block plus per-head RMSNorm of q and k before RoPE (QK-norm),
//! sandwich norms (a norm after attention and after the FFN, before each residual add), GeGLU,
//! embeddings scaled by sqrt(hidden), NEOX RoPE, and five sliding-window layers for every
//! global one.
//!
//! Not in the GGUF and taken from llama.cpp and Hugging Face transformers: local layers use
//! RoPE base 10,000; layer i is global when i % 6 == 5; RoPE pairs are (i, i + d/2). The
//! converter already stores the norms' weights as (1 + w), so plain RMSNorm applies.

use gpuport_gguf::{Gguf, GgufError, Metadata};
use gpuport_kernels::rowops::ElementOp;

use super::{LayerNames, ModelConfig};

/// The configuration: the common keys plus Gemma's fixed choices.
pub(super) fn config(g: &Gguf, common: ModelConfig) -> Result<ModelConfig, GgufError> {
    let key = |k: &str| format!("gemma3.{k}");
    Ok(ModelConfig {
        rope_neox: true,
        rope_base: g
            .optional(&key("rope.freq_base"), Gguf::f32)?
            .unwrap_or(1_000_000.0),
        window: g
            .optional(&key("attention.sliding_window"), Gguf::u32)?
            .map_or(0, |v| v as usize),
        window_period: 6,
        embed_scale: (common.embd as f32).sqrt(),
        glu: ElementOp::GeluMul,
        qk_norm: true,
        post_norms: true,
        ..common
    })
}

/// Layer `i`'s tensors: the standard block's, the QK-norms and the sandwich norms.
pub(super) fn layer_names(i: usize) -> LayerNames {
    let b = |s: &str| format!("blk.{i}.{s}.weight");
    LayerNames {
        qk_norm: Some([b("attn_q_norm"), b("attn_k_norm")]),
        post_norms: Some([b("post_attention_norm"), b("post_ffw_norm")]),
        ..LayerNames::standard(i)
    }
}
