//! The LLM executor's errors, each with a stable code.

use gpuport_gguf::GgufError;
use gpuport_runtime::error::GpuError;

/// Why loading or running a model failed.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// The GGUF file is unreadable or lacks what the architecture needs.
    #[error(transparent)]
    Gguf(#[from] GgufError),
    /// The GPU failed or refused.
    #[error(transparent)]
    Gpu(#[from] GpuError),
    /// The model cannot run on this adapter (each blocker listed).
    #[error("this model cannot run here: {}", .0.join("; "))]
    CannotRun(Vec<String>),
    /// The tokenizer metadata is unusable.
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    /// The chat template failed to render.
    #[error("chat template: {0}")]
    Template(String),
    /// A request the model cannot serve (context overflow, bad sampling values).
    #[error("bad request: {0}")]
    Request(String),
}

impl LlmError {
    /// A stable code for callers and JSON output.
    pub fn code(&self) -> &'static str {
        match self {
            LlmError::Gguf(e) => e.code(),
            LlmError::Gpu(e) => e.code(),
            LlmError::CannotRun(_) => "CANNOT_RUN",
            LlmError::Tokenizer(_) => "INVALID_MODEL",
            LlmError::Template(_) => "TEMPLATE_FAILED",
            LlmError::Request(_) => "BAD_REQUEST",
        }
    }
}
