//! One served model as the HTTP layer sees it: its id, the tokenizer and chat template that
//! turn a request into prompt ids (read from the GGUF header; the weights are the engines'),
//! its stop tokens, context and sampling defaults.

use std::path::Path;

use gpuport_gguf::Gguf;
use gpuport_llm::{ChatTemplate, Message, ModelConfig, Tokenizer, stop_tokens};
use gpuport_manifest_core::modelport::GenerationDefaults;

use crate::error::ApiError;
use crate::request::Input;

/// Why a model could not be prepared for serving.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The GGUF header could not be read.
    #[error("{path}: {source}")]
    Gguf {
        /// The file.
        path: String,
        /// What the reader said.
        source: gpuport_gguf::GgufError,
    },
    /// The tokenizer, configuration or chat template in the file is unusable.
    #[error("{id}: {reason}")]
    Invalid {
        /// The model id.
        id: String,
        /// What is wrong.
        reason: String,
    },
}

/// A model the server answers for.
pub struct ServedModel {
    id: String,
    tokenizer: Tokenizer,
    template: Option<ChatTemplate>,
    stop_tokens: Vec<u32>,
    context: usize,
    vocab: usize,
    defaults: GenerationDefaults,
}

impl std::fmt::Debug for ServedModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServedModel")
            .field("id", &self.id)
            .field("context", &self.context)
            .field("chat", &self.template.is_some())
            .finish_non_exhaustive()
    }
}

impl ServedModel {
    /// Opens the GGUF at `path` (its header only) as model `id` with `context` positions per
    /// sequence — the same context its engines are built with — and sampling `defaults` for
    /// the fields a request leaves out.
    pub fn open(
        id: &str,
        path: &Path,
        context: usize,
        defaults: GenerationDefaults,
    ) -> Result<ServedModel, ModelError> {
        let g = Gguf::open(path).map_err(|source| ModelError::Gguf {
            path: path.display().to_string(),
            source,
        })?;
        ServedModel::from_gguf(id, &g, context, defaults)
    }

    /// [`open`](ServedModel::open) from a GGUF already read.
    pub fn from_gguf(
        id: &str,
        g: &Gguf,
        context: usize,
        defaults: GenerationDefaults,
    ) -> Result<ServedModel, ModelError> {
        let invalid = |reason: String| ModelError::Invalid {
            id: id.to_owned(),
            reason,
        };
        let cfg = ModelConfig::from_gguf(g).map_err(|e| invalid(e.to_string()))?;
        let tokenizer = Tokenizer::from_gguf(g).map_err(|e| invalid(e.to_string()))?;
        let template =
            ChatTemplate::from_gguf(g, &tokenizer).map_err(|e| invalid(e.to_string()))?;
        if context == 0 {
            return Err(invalid("a context of 0 positions".into()));
        }
        Ok(ServedModel {
            id: id.to_owned(),
            stop_tokens: stop_tokens(&tokenizer),
            tokenizer,
            template,
            context,
            vocab: cfg.vocab,
            defaults,
        })
    }

    /// The id a request's `model` names.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Positions one sequence holds (prompt + reply).
    pub fn context(&self) -> usize {
        self.context
    }

    /// Whether it has a chat template (so `/v1/chat/completions` works).
    pub fn has_chat_template(&self) -> bool {
        self.template.is_some()
    }

    /// The sampling defaults.
    pub fn defaults(&self) -> &GenerationDefaults {
        &self.defaults
    }

    /// The ids that end a reply.
    pub fn stop_tokens(&self) -> &[u32] {
        &self.stop_tokens
    }

    /// The prompt's token ids: messages rendered with the chat template (control tokens
    /// parsed, BOS by the model's rule unless the template wrote it — what `gpuport chat`
    /// does), text tokenized as-is (what `gpuport generate --raw` does), or ids checked against
    /// the vocabulary.
    pub fn prompt_ids(&self, input: &Input) -> Result<Vec<u32>, ApiError> {
        let tok = &self.tokenizer;
        let ids = match input {
            Input::Messages(messages) => {
                let Some(template) = &self.template else {
                    return Err(ApiError::bad_field(
                        "messages",
                        format!(
                            "model {} has no chat template; use /v1/completions with a prompt",
                            self.id
                        ),
                    )
                    .code("no_chat_template"));
                };
                let rendered = render(template, messages)?;
                let bos = tok.bos.and_then(|b| tok.text(b)).unwrap_or_default();
                let has_bos = !bos.is_empty() && rendered.starts_with(bos);
                tok.encode(&rendered, !has_bos, true)
            }
            Input::Text(text) => tok.encode(text, true, true),
            Input::Tokens(ids) => {
                if let Some((i, t)) = ids
                    .iter()
                    .enumerate()
                    .find(|(_, t)| **t as usize >= self.vocab)
                {
                    return Err(ApiError::bad_field(
                        &format!("prompt[{i}]"),
                        format!("token id {t} is outside the vocabulary of {}", self.vocab),
                    ));
                }
                ids.clone()
            }
        };
        if ids.is_empty() {
            let field = if matches!(input, Input::Messages(_)) {
                "messages"
            } else {
                "prompt"
            };
            return Err(ApiError::bad_field(field, "the prompt has no tokens"));
        }
        Ok(ids)
    }
}

fn render(template: &ChatTemplate, messages: &[Message]) -> Result<String, ApiError> {
    template.render(messages, true).map_err(|e| {
        ApiError::bad_field("messages", format!("the chat template refused them: {e}"))
    })
}
