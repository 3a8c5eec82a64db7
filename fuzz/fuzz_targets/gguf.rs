//! GGUF bytes: parsing never panics; a file that parses yields in-bounds tensor data, and its
//! tokenizer and model config are built (or refused) without panicking.
#![no_main]

use gpuport_runtime::gguf::Gguf;
use gpuport_runtime::llm::{ModelConfig, Tokenizer};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(g) = Gguf::parse(data.to_vec()) {
        for t in &g.tensors {
            let _ = g.data(t);
        }
        let _ = ModelConfig::from_gguf(&g);
        if let Ok(tok) = Tokenizer::from_gguf(&g) {
            let ids = tok.encode("Hello, world! <|im_start|> 123", true, true);
            let _ = tok.decode(&ids, true);
        }
    }
});
