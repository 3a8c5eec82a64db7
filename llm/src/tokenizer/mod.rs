//! Tokenizers built from GGUF metadata, matching llama.cpp's: byte-level BPE (`gpt2`) and
//! SentencePiece-style (`llama`); special and control tokens split out of the text first
//! (longest first); BOS/EOS by the file's flags; detokenization to bytes with a streaming UTF-8
//! decoder that never emits half a character.

mod bpe;
mod spm;
mod stream;

use std::collections::HashMap;

use aho_corasick::AhoCorasick;

use gpuport_gguf::{Gguf, GgufError, Metadata};

pub use stream::Utf8Stream;

/// A tokenizer problem (bad or unsupported metadata).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TokenizerError(pub String);

impl From<GgufError> for TokenizerError {
    fn from(e: GgufError) -> Self {
        TokenizerError(e.to_string())
    }
}

/// GGUF token types (`tokenizer.ggml.token_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenType {
    /// Ordinary text.
    Normal,
    /// The unknown token.
    Unknown,
    /// Control (BOS, EOS, chat markers): matched in text only when parsing specials, and
    /// rendered only on request.
    Control,
    /// User-defined: always matched in text, rendered as is.
    UserDefined,
    /// Reserved.
    Unused,
    /// A `<0xXX>` byte token.
    Byte,
}

impl TokenType {
    fn from_id(id: i64) -> TokenType {
        match id {
            2 => TokenType::Unknown,
            3 => TokenType::Control,
            4 => TokenType::UserDefined,
            5 => TokenType::Unused,
            6 => TokenType::Byte,
            _ => TokenType::Normal,
        }
    }
}

enum Model {
    Bpe(Box<bpe::Bpe>),
    Spm {
        scores: Vec<f32>,
        bytes: Box<[Option<u32>; 256]>,
    },
}

/// A tokenizer.
pub struct Tokenizer {
    model: Model,
    tokens: Vec<String>,
    types: Vec<TokenType>,
    index: HashMap<String, u32>,
    /// Special tokens (control, user-defined, unknown) by length, longest first.
    specials: Vec<u32>,
    special_finder: Option<AhoCorasick>,
    /// Beginning-of-sequence token.
    pub bos: Option<u32>,
    /// End-of-sequence token.
    pub eos: Option<u32>,
    /// End-of-turn token, when the file names one.
    pub eot: Option<u32>,
    /// Prepend BOS when encoding with specials.
    pub add_bos: bool,
    /// Append EOS when encoding with specials.
    pub add_eos: bool,
    add_space_prefix: bool,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("tokens", &self.tokens.len())
            .field("bos", &self.bos)
            .field("eos", &self.eos)
            .finish()
    }
}

impl Tokenizer {
    /// Builds the tokenizer a GGUF file describes.
    pub fn from_gguf(g: &Gguf) -> Result<Tokenizer, TokenizerError> {
        let kind = g.str("tokenizer.ggml.model")?;
        let tokens: Vec<String> = g
            .str_array("tokenizer.ggml.tokens")?
            .into_iter()
            .map(String::from)
            .collect();
        let n = tokens.len();
        if n == 0 || n > u32::MAX as usize {
            return Err(TokenizerError(format!(
                "{n} tokens in tokenizer.ggml.tokens"
            )));
        }
        let types = match g.optional("tokenizer.ggml.token_type", Gguf::int_array)? {
            Some(t) if t.len() == n => t.into_iter().map(TokenType::from_id).collect(),
            Some(t) => {
                return Err(TokenizerError(format!(
                    "tokenizer.ggml.token_type has {} entries for {n} tokens",
                    t.len()
                )));
            }
            None => vec![TokenType::Normal; n],
        };
        let mut index = HashMap::with_capacity(n);
        for (i, t) in tokens.iter().enumerate() {
            // The first of duplicate texts wins, as in llama.cpp's map.
            index.entry(t.clone()).or_insert(i as u32);
        }
        let model = match kind {
            "gpt2" => {
                let pre = match g.value("tokenizer.ggml.pre") {
                    Some(_) => g.str("tokenizer.ggml.pre")?,
                    None => "gpt2",
                };
                let merges = g.str_array("tokenizer.ggml.merges")?;
                Model::Bpe(Box::new(bpe::Bpe::new(pre, &merges)?))
            }
            "llama" => {
                let scores = g.f32_array("tokenizer.ggml.scores")?;
                if scores.len() != n {
                    return Err(TokenizerError(format!(
                        "tokenizer.ggml.scores has {} entries for {n} tokens",
                        scores.len()
                    )));
                }
                let mut bytes = Box::new([None; 256]);
                for (b, slot) in bytes.iter_mut().enumerate() {
                    *slot = index.get(&format!("<0x{b:02X}>")).copied();
                }
                Model::Spm { scores, bytes }
            }
            other => {
                return Err(TokenizerError(format!(
                    "tokenizer model {other:?} is not supported (gpt2 and llama are)"
                )));
            }
        };
        let id = |key: &str| -> Result<Option<u32>, TokenizerError> {
            match g.optional(key, Gguf::u32)? {
                Some(v) if (v as usize) < n => Ok(Some(v)),
                Some(v) => Err(TokenizerError(format!("{key} = {v} is not a token id"))),
                None => Ok(None),
            }
        };
        let mut specials: Vec<u32> = (0..n as u32)
            .filter(|i| {
                matches!(
                    types[*i as usize],
                    TokenType::Control | TokenType::UserDefined | TokenType::Unknown
                ) && !tokens[*i as usize].is_empty()
            })
            .collect();
        specials.sort_by_key(|i| std::cmp::Reverse(tokens[*i as usize].len()));
        let special_finder = if specials.is_empty() {
            None
        } else {
            let patterns: Vec<&str> = specials
                .iter()
                .map(|i| tokens[*i as usize].as_str())
                .collect();
            Some(AhoCorasick::new(patterns).map_err(|e| TokenizerError(e.to_string()))?)
        };
        let flag = |key: &str, default: bool| -> Result<bool, TokenizerError> {
            Ok(g.optional(key, Gguf::bool)?.unwrap_or(default))
        };
        let is_spm = matches!(model, Model::Spm { .. });
        Ok(Tokenizer {
            bos: id("tokenizer.ggml.bos_token_id")?,
            eos: id("tokenizer.ggml.eos_token_id")?,
            eot: id("tokenizer.ggml.eot_token_id")?,
            add_bos: flag("tokenizer.ggml.add_bos_token", is_spm)?,
            add_eos: flag("tokenizer.ggml.add_eos_token", false)?,
            add_space_prefix: flag("tokenizer.ggml.add_space_prefix", is_spm)?,
            model,
            tokens,
            types,
            index,
            specials,
            special_finder,
        })
    }

    /// Tokens in the vocabulary.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// Whether the vocabulary is empty (never, once built).
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// A token's text as stored.
    pub fn text(&self, id: u32) -> Option<&str> {
        self.tokens.get(id as usize).map(String::as_str)
    }

    /// A token's type.
    pub fn token_type(&self, id: u32) -> Option<TokenType> {
        self.types.get(id as usize).copied()
    }

    /// The id of a token text.
    pub fn id(&self, text: &str) -> Option<u32> {
        self.index.get(text).copied()
    }

    /// Encodes `text`. With `add_special`, BOS/EOS are added as the file says; with
    /// `parse_special`, control tokens written in the text (`<|im_start|>`) become those
    /// tokens (user-defined tokens always do).
    pub fn encode(&self, text: &str, add_special: bool, parse_special: bool) -> Vec<u32> {
        let mut out = Vec::new();
        if add_special && self.add_bos {
            out.extend(self.bos);
        }
        let mut prev_special = true;
        for frag in self.partition(text, parse_special) {
            match frag {
                Fragment::Token(id) => {
                    out.push(id);
                    prev_special = true;
                }
                Fragment::Text(t) => {
                    self.encode_raw(t, prev_special, &mut out);
                    prev_special = false;
                }
            }
        }
        if add_special && self.add_eos {
            out.extend(self.eos);
        }
        out
    }

    fn encode_raw(&self, text: &str, prev_special: bool, out: &mut Vec<u32>) {
        let lookup = |s: &str| self.index.get(s).copied();
        match &self.model {
            Model::Bpe(b) => b.encode(text, lookup, out),
            Model::Spm { scores, bytes } => {
                let prefixed;
                let text = if self.add_space_prefix && prev_special {
                    prefixed = format!(" {text}");
                    &prefixed
                } else {
                    text
                };
                spm::encode(
                    text,
                    &lookup,
                    &|id| scores[id as usize],
                    &|b| bytes[b as usize],
                    out,
                );
            }
        }
    }

    /// Splits `text` around special tokens as llama.cpp does: each special token, longest
    /// first, is cut out of every text fragment that contains it, left to right.
    fn partition<'t>(&self, text: &'t str, parse_special: bool) -> Vec<Fragment<'t>> {
        let mut frags = vec![Fragment::Text(text)];
        let Some(finder) = &self.special_finder else {
            return frags;
        };
        // Only the specials that occur somewhere in the text can cut it (found in one pass).
        let mut present: Vec<usize> = finder
            .find_overlapping_iter(text)
            .map(|m| m.pattern().as_usize())
            .collect();
        present.sort_unstable();
        present.dedup();
        for p in present {
            let id = self.specials[p];
            if !parse_special
                && matches!(
                    self.types[id as usize],
                    TokenType::Control | TokenType::Unknown
                )
            {
                continue;
            }
            let needle = self.tokens[id as usize].as_str();
            let mut next = Vec::with_capacity(frags.len());
            for f in frags {
                let Fragment::Text(mut t) = f else {
                    next.push(f);
                    continue;
                };
                while let Some(at) = t.find(needle) {
                    if at > 0 {
                        next.push(Fragment::Text(&t[..at]));
                    }
                    next.push(Fragment::Token(id));
                    t = &t[at + needle.len()..];
                }
                if !t.is_empty() {
                    next.push(Fragment::Text(t));
                }
            }
            frags = next;
        }
        frags
    }

    /// The bytes token `id` stands for; control tokens only with `special`.
    pub fn piece(&self, id: u32, special: bool, out: &mut Vec<u8>) {
        let Some(text) = self.tokens.get(id as usize) else {
            return;
        };
        match (self.types[id as usize], &self.model) {
            (TokenType::Control | TokenType::Unknown | TokenType::Unused, _) if !special => {}
            (TokenType::Byte, Model::Spm { .. }) => {
                match u8::from_str_radix(text.trim_start_matches("<0x").trim_end_matches('>'), 16) {
                    Ok(b) => out.push(b),
                    Err(_) => out.extend_from_slice(text.as_bytes()),
                }
            }
            (TokenType::Normal, Model::Spm { .. }) => {
                for c in text.chars() {
                    let c = if c == spm::SPACE { ' ' } else { c };
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
            }
            (TokenType::Normal | TokenType::UserDefined, Model::Bpe(b)) => b.decode(text, out),
            _ => out.extend_from_slice(text.as_bytes()),
        }
    }

    /// The bytes of a token sequence (control tokens only with `special`).
    pub fn decode(&self, ids: &[u32], special: bool) -> Vec<u8> {
        let mut out = Vec::new();
        for id in ids {
            self.piece(*id, special, &mut out);
        }
        out
    }
}

enum Fragment<'t> {
    Text(&'t str),
    Token(u32),
}
