//! The GGUF LLM executor: configuration from metadata, weights uploaded as stored, a forward
//! pass recorded into one compute pass per submit, GPU sampling, and sessions that keep their
//! KV cache across turns.

pub mod chat;
pub mod config;
pub mod error;
pub mod kv_cache;
pub mod model;
pub mod prefill;
pub mod program;
pub mod recommend;
pub mod session;
pub mod tokenizer;
pub mod weights;

pub use chat::{ChatTemplate, Message, stop_tokens};
pub use config::{Arch, ModelConfig};
pub use error::LlmError;
pub use kv_cache::KvCache;
pub use model::Model;
pub use program::Program;
pub use session::{DecodeTiming, Generated, Request, Sampling, Session, StopReason};
pub use tokenizer::{Tokenizer, TokenizerError, Utf8Stream};
pub use weights::LoadPlan;
