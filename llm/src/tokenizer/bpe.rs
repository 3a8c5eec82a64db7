//! Byte-level BPE (GGUF `tokenizer.ggml.model = "gpt2"`): the pre-tokenizer regexes named by
//! `tokenizer.ggml.pre`, GPT-2's byte-to-character map, and rank-ordered merges.

use std::collections::{BinaryHeap, HashMap};

use fancy_regex::Regex;

use super::TokenizerError;

/// GPT-2's split of English contractions, letters, numbers, other symbols and whitespace.
const GPT2: &str = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)";

/// The regexes each pre-tokenizer applies in turn (each splits the pieces the previous one
/// left; text between matches stays a piece). The lists are llama.cpp's, by name.
fn pre_tokenizer(name: &str) -> Option<Vec<&'static str>> {
    Some(match name {
        "gpt2" | "gpt-2" | "mpt" | "olmo" | "jais" => vec![GPT2],
        "smollm" | "starcoder" | "refact" | "command-r" | "codeshell" | "exaone" | "minerva" => {
            vec![r"\p{N}", GPT2]
        }
        "llama3" | "llama-v3" | "llama-bpe" | "falcon3" | "pixtral" => vec![
            r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
        ],
        // Qwen2's tokenizer.json pattern: llama3's with single digits.
        "qwen2" | "deepseek-r1-qwen" => vec![
            r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
        ],
        _ => return None,
    })
}

/// GPT-2's reversible map from bytes to printable characters: printable Latin-1 bytes map to
/// themselves, the rest to U+0100 upwards in byte order.
pub(crate) fn byte_to_char() -> [char; 256] {
    let mut table = ['\0'; 256];
    let mut next = 256u32;
    for b in 0..=255u8 {
        let printable = matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
        table[b as usize] = if printable {
            char::from(b)
        } else {
            let c = char::from_u32(next).unwrap_or('\u{FFFD}');
            next += 1;
            c
        };
    }
    table
}

/// The BPE state built from GGUF metadata.
pub(crate) struct Bpe {
    regexes: Vec<Regex>,
    ranks: HashMap<(String, String), u32>,
    byte_char: [char; 256],
    char_byte: HashMap<char, u8>,
}

impl Bpe {
    pub(crate) fn new(pre: &str, merges: &[&str]) -> Result<Bpe, TokenizerError> {
        let patterns = pre_tokenizer(pre).ok_or_else(|| {
            TokenizerError(format!(
                "pre-tokenizer {pre:?} (tokenizer.ggml.pre) is not supported"
            ))
        })?;
        let regexes = patterns
            .iter()
            .map(|p| Regex::new(p).map_err(|e| TokenizerError(format!("regex {p}: {e}"))))
            .collect::<Result<_, _>>()?;
        let mut ranks = HashMap::with_capacity(merges.len());
        for (i, m) in merges.iter().enumerate() {
            // Merge parts never contain a space (spaces are mapped to 'Ġ'); the first part is
            // at least one character, so search from the second byte as llama.cpp does.
            let split = m
                .char_indices()
                .skip(1)
                .find(|(_, c)| *c == ' ')
                .map(|(i, _)| i)
                .ok_or_else(|| {
                    TokenizerError(format!("tokenizer.ggml.merges[{i}] {m:?} has no space"))
                })?;
            ranks
                .entry((m[..split].to_string(), m[split + 1..].to_string()))
                .or_insert(i as u32);
        }
        let byte_char = byte_to_char();
        let char_byte = byte_char
            .iter()
            .enumerate()
            .map(|(b, c)| (*c, b as u8))
            .collect();
        Ok(Bpe {
            regexes,
            ranks,
            byte_char,
            char_byte,
        })
    }

    /// Splits `text` into pre-tokenizer pieces.
    fn pieces<'t>(&self, text: &'t str) -> Vec<&'t str> {
        let mut pieces = vec![text];
        for re in &self.regexes {
            let mut next = Vec::with_capacity(pieces.len());
            for piece in pieces {
                let mut at = 0;
                for m in re.find_iter(piece).flatten() {
                    if m.start() > at {
                        next.push(&piece[at..m.start()]);
                    }
                    if m.end() > m.start() {
                        next.push(m.as_str());
                    }
                    at = m.end();
                }
                if at < piece.len() {
                    next.push(&piece[at..]);
                }
            }
            pieces = next;
        }
        pieces
    }

    /// Encodes raw text (no special tokens) with `lookup` from token text to id.
    pub(crate) fn encode(
        &self,
        text: &str,
        lookup: impl Fn(&str) -> Option<u32>,
        out: &mut Vec<u32>,
    ) {
        for piece in self.pieces(text) {
            let mapped: String = piece.bytes().map(|b| self.byte_char[b as usize]).collect();
            for symbol in self.merge(&mapped) {
                match lookup(&symbol) {
                    Some(id) => out.push(id),
                    // Unreachable with a byte-complete vocabulary; llama.cpp then looks up
                    // each byte of the symbol alone.
                    None => out.extend(symbol.chars().filter_map(|c| lookup(&c.to_string()))),
                }
            }
        }
    }

    /// Applies the merges to one piece: repeatedly the adjacent pair of lowest rank (leftmost
    /// on ties), as the BPE merge list defines.
    fn merge(&self, word: &str) -> Vec<String> {
        let mut syms: Vec<String> = word.chars().map(String::from).collect();
        if syms.len() < 2 {
            return syms;
        }
        // Linked list over `syms`; merged-away symbols become empty.
        let n = syms.len();
        let mut prev: Vec<Option<usize>> = (0..n).map(|i| i.checked_sub(1)).collect();
        let mut next: Vec<Option<usize>> = (0..n).map(|i| (i + 1 < n).then_some(i + 1)).collect();
        let mut heap = BinaryHeap::new();
        let push = |heap: &mut BinaryHeap<_>, syms: &[String], l: usize, r: usize| {
            if let Some(rank) = self.ranks.get(&(syms[l].clone(), syms[r].clone())) {
                // Max-heap on (-rank, -left): lowest rank, then leftmost.
                heap.push((
                    std::cmp::Reverse(*rank),
                    std::cmp::Reverse(l),
                    r,
                    syms[l].len() + syms[r].len(),
                ));
            }
        };
        for i in 0..n - 1 {
            push(&mut heap, &syms, i, i + 1);
        }
        while let Some((_, std::cmp::Reverse(l), r, size)) = heap.pop() {
            // Stale entries: a side was merged since this pair was queued.
            if syms[l].is_empty()
                || syms[r].is_empty()
                || next[l] != Some(r)
                || syms[l].len() + syms[r].len() != size
            {
                continue;
            }
            let right = std::mem::take(&mut syms[r]);
            syms[l].push_str(&right);
            next[l] = next[r];
            if let Some(nr) = next[r] {
                prev[nr] = Some(l);
            }
            if let Some(pl) = prev[l] {
                push(&mut heap, &syms, pl, l);
            }
            if let Some(nl) = next[l] {
                push(&mut heap, &syms, l, nl);
            }
        }
        syms.into_iter().filter(|s| !s.is_empty()).collect()
    }

    /// The bytes a token's text stands for.
    pub(crate) fn decode(&self, text: &str, out: &mut Vec<u8>) {
        for c in text.chars() {
            match self.char_byte.get(&c) {
                Some(b) => out.push(*b),
                None => {
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
            }
        }
    }
}
