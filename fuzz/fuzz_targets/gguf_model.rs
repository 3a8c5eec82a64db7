//! GGUF bytes as a model: whatever parses is handed to the model config and tokenizer
//! builders (hostile metadata: vocabularies, merges, token types, hyperparameters), which
//! build or refuse without panicking; a tokenizer that builds encodes and decodes.
#![no_main]

use gpuport_llm::{ModelConfig, Tokenizer};
use gpuport_runtime::gguf::Gguf;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(g) = Gguf::parse(data.to_vec()) {
        let _ = ModelConfig::from_gguf(&g);
        if let Ok(tok) = Tokenizer::from_gguf(&g) {
            let ids = tok.encode("Hello, world! <|im_start|> 123", true, true);
            let _ = tok.decode(&ids, true);
        }
    }
});
