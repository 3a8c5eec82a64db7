//! GGUF bytes through the reader alone (`gpuport-gguf`, no GPU crate): parsing never panics,
//! and every tensor of a file that parses has exactly its bytes inside the file.
#![no_main]

use gpuport_gguf::Gguf;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(g) = Gguf::parse(data.to_vec()) {
        for t in &g.tensors {
            assert_eq!(g.data(t).len() as u64, t.bytes, "tensor {}", t.name);
        }
    }
});
