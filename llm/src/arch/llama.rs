//! `llama`: Llama 2/3, SmolLM2, Mistral-style models without biases. The plain pre-norm block:
//! RMSNorm → q, k, v (no bias) → RoPE with adjacent pairs (llama.cpp's "normal" RoPE) →
//! attention → output projection + residual; RMSNorm → SwiGLU FFN + residual. Every
//! hyperparameter is in the GGUF under `llama.*`.

use gpuport_gguf::{Gguf, GgufError};

use super::{LayerNames, ModelConfig};

/// The configuration: the common keys as they are.
pub(super) fn config(_g: &Gguf, common: ModelConfig) -> Result<ModelConfig, GgufError> {
    Ok(common)
}

/// Layer `i`'s tensors: the standard block's.
pub(super) fn layer_names(i: usize) -> LayerNames {
    LayerNames::standard(i)
}
