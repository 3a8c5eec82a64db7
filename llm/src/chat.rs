//! Chat templates: the GGUF's `tokenizer.chat_template` (Jinja) rendered with minijinja, with
//! Python string methods (`.strip()`, `.startswith()` …) as Hugging Face templates use them,
//! `raise_exception`, and the BOS/EOS token texts; plus the end-of-generation tokens a chat
//! stops on.

use minijinja::{Environment, Error, ErrorKind, context};

use super::error::LlmError;
use super::tokenizer::{TokenType, Tokenizer};
use gpuport_gguf::{Gguf, Metadata};

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Message {
    /// `system`, `user` or `assistant`.
    pub role: String,
    /// The text.
    pub content: String,
}

impl Message {
    /// A message.
    pub fn new(role: &str, content: &str) -> Message {
        Message {
            role: role.to_string(),
            content: content.to_string(),
        }
    }
}

/// A compiled chat template.
pub struct ChatTemplate {
    env: Environment<'static>,
    bos: String,
    eos: String,
}

impl std::fmt::Debug for ChatTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatTemplate").finish_non_exhaustive()
    }
}

const NAME: &str = "chat_template";

impl ChatTemplate {
    /// The file's template, `Ok(None)` when it has none.
    pub fn from_gguf(g: &Gguf, tok: &Tokenizer) -> Result<Option<ChatTemplate>, LlmError> {
        let Some(source) = g
            .value("tokenizer.chat_template")
            .map(|_| g.str("tokenizer.chat_template"))
            .transpose()?
        else {
            return Ok(None);
        };
        let text = |id: Option<u32>| id.and_then(|i| tok.text(i)).unwrap_or_default().to_string();
        ChatTemplate::new(source, text(tok.bos), text(tok.eos)).map(Some)
    }

    /// Compiles `source`.
    pub fn new(source: &str, bos: String, eos: String) -> Result<ChatTemplate, LlmError> {
        let mut env = Environment::new();
        minijinja_contrib::add_to_environment(&mut env);
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function("raise_exception", |msg: String| -> Result<String, Error> {
            Err(Error::new(ErrorKind::InvalidOperation, msg))
        });
        env.add_template_owned(NAME, source.to_string())
            .map_err(|e| LlmError::Template(e.to_string()))?;
        Ok(ChatTemplate { env, bos, eos })
    }

    /// Renders `messages`, ending with the assistant's turn opener when
    /// `add_generation_prompt`.
    pub fn render(
        &self,
        messages: &[Message],
        add_generation_prompt: bool,
    ) -> Result<String, LlmError> {
        let t = self
            .env
            .get_template(NAME)
            .map_err(|e| LlmError::Template(e.to_string()))?;
        t.render(context! {
            messages => messages,
            add_generation_prompt => add_generation_prompt,
            bos_token => self.bos,
            eos_token => self.eos,
        })
        .map_err(|e| LlmError::Template(e.to_string()))
    }
}

/// Token texts that end a turn in the chat formats llama.cpp knows (its end-of-generation
/// list), besides the file's EOS and EOT ids.
const END_OF_TURN: &[&str] = &[
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "<|eom_id|>",
    "<EOT>",
    "<|end_of_text|>",
];

/// The ids that end generation: EOS, EOT, and control tokens with an end-of-turn text.
pub fn stop_tokens(tok: &Tokenizer) -> Vec<u32> {
    let mut out: Vec<u32> = tok.eos.into_iter().chain(tok.eot).collect();
    for text in END_OF_TURN {
        if let Some(id) = tok.id(text)
            && tok.token_type(id) == Some(TokenType::Control)
        {
            out.push(id);
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}
