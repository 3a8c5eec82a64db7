//! Tokenizers against llama.cpp's on both models' real vocabularies, over the 240-string corpus
//! in `tests/fixtures/llama_cpp/tokenizer_corpus.json` (prose, scripts, emoji, code, whitespace
//! runs, numbers, special-token text, random mixtures): plain text without specials, and text
//! with BOS and special-token parsing. The ids are fixtures written by
//! `tools/llama_reference.py tokenize` (llama-cpp-python 0.3.36). Detokenization, whole and
//! streamed token by token, gives the text back.

#![allow(clippy::unwrap_used)]

use gpuport_testing as support;

use gpuport_llm::{Tokenizer, Utf8Stream};
use gpuport_runtime::gguf::Gguf;
use serde_json::Value;

fn check(file: &str, ids: &str) {
    let Some(path) = support::model(file) else {
        return;
    };
    let fixtures = support::repo_root().join("llm/tests/fixtures/llama_cpp");
    let read = |name: &str| -> Value {
        serde_json::from_slice(&std::fs::read(fixtures.join(name)).unwrap()).unwrap()
    };
    let texts: Vec<String> = serde_json::from_value(read("tokenizer_corpus.json")).unwrap();
    let reference = read(ids);
    let reference = reference["cases"].as_array().unwrap();
    assert_eq!(reference.len(), texts.len());
    let g = Gguf::open(&path).unwrap();
    let tok = Tokenizer::from_gguf(&g).unwrap();
    let mut failures = Vec::new();
    for (case, text) in reference.iter().zip(&texts) {
        let plain: Vec<u32> = serde_json::from_value(case["plain"].clone()).unwrap();
        let special: Vec<u32> = serde_json::from_value(case["special"].clone()).unwrap();
        let got_plain = tok.encode(text, false, false);
        let got_special = tok.encode(text, true, true);
        if got_plain != plain {
            failures.push(format!(
                "{text:?} plain: ours {got_plain:?}, llama.cpp {plain:?}"
            ));
        }
        if got_special != special {
            failures.push(format!(
                "{text:?} special: ours {got_special:?}, llama.cpp {special:?}"
            ));
        }
        // SentencePiece stores spaces as U+2581, so a literal U+2581 decodes as a space (in
        // llama.cpp too): that text cannot round-trip.
        if text.contains('\u{2581}') {
            continue;
        }
        let back = String::from_utf8(tok.decode(&got_plain, false)).unwrap();
        if back != **text {
            failures.push(format!("{text:?} decodes to {back:?}"));
        }
        // Streaming one token at a time gives the same text.
        let mut stream = Utf8Stream::new();
        let mut streamed = String::new();
        for id in &got_plain {
            let mut bytes = Vec::new();
            tok.piece(*id, false, &mut bytes);
            streamed.push_str(&stream.push(&bytes));
        }
        streamed.push_str(&stream.finish());
        if streamed != **text {
            failures.push(format!("{text:?} streams as {streamed:?}"));
        }
    }
    assert!(failures.is_empty(), "{file}:\n{}", failures.join("\n"));
}

#[test]
fn smollm2_bpe_matches_llama_cpp() {
    check("SmolLM2-135M-Instruct.Q4_1.gguf", "smollm2_tokens.json");
}

#[test]
fn qwen2_bpe_matches_llama_cpp() {
    check(
        "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        "qwen2_tokens.json",
    );
}

#[test]
fn gemma3_spm_matches_llama_cpp() {
    check("gemma-3-270m-q4_k_m.gguf", "gemma3_tokens.json");
}
