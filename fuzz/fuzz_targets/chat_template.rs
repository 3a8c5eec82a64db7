//! Chat-template rendering of arbitrary message lists with the real models' templates
//! (SmolLM2's ChatML from its GGUF; the template text itself comes from the file, so this is
//! what `gpuport chat` and the server render). Messages are cut from the input at 0xFF bytes;
//! each message's first byte picks its role (system, user, assistant, or an arbitrary role
//! string). Rendering succeeds or fails with a typed error — never a panic — and a rendered
//! conversation contains every message's content.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use gpuport_llm::{ChatTemplate, Message, Tokenizer};
use gpuport_runtime::gguf::Gguf;
use libfuzzer_sys::fuzz_target;

fn template() -> &'static ChatTemplate {
    static TEMPLATE: OnceLock<ChatTemplate> = OnceLock::new();
    TEMPLATE.get_or_init(|| {
        let dir = std::env::var_os("GPUPORT_MODELS")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../models"));
        let path = dir.join("SmolLM2-135M-Instruct.Q4_1.gguf");
        let g =
            Gguf::open(&path).unwrap_or_else(|e| panic!("{e} (run `cargo xtask fetch-models`)"));
        let tok = Tokenizer::from_gguf(&g).unwrap_or_else(|e| panic!("{e}"));
        ChatTemplate::from_gguf(&g, &tok)
            .ok()
            .flatten()
            .unwrap_or_else(|| panic!("SmolLM2 has a chat template"))
    })
}

// Built before libFuzzer starts timing inputs: reading the real model files takes 1–4 s, and
// inside the first input of each forked job it read as a timeout (the first runs reported 141
// such "timeouts"; replayed after the set-up, each of those inputs takes ≤ 3 ms).
fuzz_target!(init: { template(); }, |data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let messages: Vec<Message> = rest
        .split(|&b| b == 0xFF)
        .filter_map(|m| {
            let (&role, content) = m.split_first()?;
            let content = String::from_utf8_lossy(content);
            let role = match role % 4 {
                0 => "system".to_string(),
                1 => "user".to_string(),
                2 => "assistant".to_string(),
                _ => String::from_utf8_lossy(&content.as_bytes()[..content.len().min(8)])
                    .into_owned(),
            };
            Some(Message::new(&role, &content))
        })
        .collect();
    if let Ok(text) = template().render(&messages, flags & 1 != 0) {
        for m in &messages {
            assert!(text.contains(m.content.trim()), "{:?} missing", m.content);
        }
    }
});
