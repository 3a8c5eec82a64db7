//! # gpuport-llm
//!
//! The GGUF LLM executor on gpuport's runtime: configuration from metadata, weights uploaded as
//! stored (quantized; Q6_K reordered into groups), a forward pass recorded into one compute
//! pass per submit, GPU sampling, sessions that keep their KV cache across turns, the MLC
//! roles, tokenizers and chat templates, and the ranking of models for an adapter
//! ([`recommend`]).
//!
//! ```no_run
//! use gpuport_llm::{Model, Request, Sampling, Session, Tokenizer};
//! use gpuport_runtime::gguf::Gguf;
//! use gpuport_runtime::{Gpu, GpuOptions};
//!
//! let gpu = Gpu::new(&GpuOptions::default())?;
//! let g = Gguf::open("models/SmolLM2-135M-Instruct.Q4_1.gguf".as_ref())?;
//! let tok = Tokenizer::from_gguf(&g)?;
//! let model = Model::load(&gpu, &g, 1024)?;
//! let mut session = Session::new(&gpu, &model, 1024)?;
//! let prompt = tok.encode("The capital of France is", true, true);
//! let request = Request { prompt: &prompt, max_tokens: 16, stop: &[], sampling: Sampling::GREEDY };
//! let out = session.generate(&request, |_| true)?;
//! println!("{}", String::from_utf8_lossy(&tok.decode(&out.tokens, false)));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod arch;
pub mod batch;
pub mod chat;
pub mod engine;
pub mod error;
pub mod kv_cache;
pub mod loader;
pub mod model;
pub mod prefill;
pub mod program;
pub mod recommend;
pub mod session;
pub mod tokenizer;
pub mod weights;

pub use arch::{Arch, LayerNames, ModelConfig};
pub use batch::{Batch, BatchShape, DecodeItem, Decoded, Precompiled, PrefillItem};
pub use chat::{ChatTemplate, Message, stop_tokens};
pub use engine::{EngineShape, Finish, GenChunk, GenJob, GenOutput, LlmEngine, LlmLoader};
pub use error::LlmError;
pub use kv_cache::{KvCache, KvPool, SeqId};
pub use model::Model;
pub use program::Program;
pub use session::{DecodeTiming, Generated, Request, Sampling, Session, StopReason};
pub use tokenizer::{Tokenizer, TokenizerError, Utf8Stream};
pub use weights::LoadPlan;
