//! `qwen2`: Qwen2 and Qwen2.5. The llama block with biases on the q, k and v projections and
//! NEOX RoPE (pairs (i, i + d/2); llama.cpp runs qwen2 with `LLAMA_ROPE_TYPE_NEOX`). Its
//! tokenizer is byte-level BPE with the `qwen2` pre-tokenizer (`tokenizer::bpe`) and its chat
//! template ChatML, both from the GGUF.

use gpuport_gguf::{Gguf, GgufError};

use super::{LayerNames, ModelConfig};

/// The configuration: the common keys, NEOX RoPE, q/k/v biases.
pub(super) fn config(_g: &Gguf, common: ModelConfig) -> Result<ModelConfig, GgufError> {
    Ok(ModelConfig {
        rope_neox: true,
        qkv_bias: true,
        ..common
    })
}

/// Layer `i`'s tensors: the standard block's and the q, k, v biases.
pub(super) fn layer_names(i: usize) -> LayerNames {
    let b = |s: &str| format!("blk.{i}.{s}.bias");
    LayerNames {
        qkv_bias: Some([b("attn_q"), b("attn_k"), b("attn_v")]),
        ..LayerNames::standard(i)
    }
}
