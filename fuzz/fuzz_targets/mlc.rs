//! MLC package manifests, compiled-program documents and tensor-cache manifests: arbitrary
//! text is parsed and validated without panicking.
#![no_main]

use gpuport_manifest_core::mlc;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = mlc::parse_package(text);
        let _ = mlc::parse_program(text);
        let _ = mlc::parse_weights_manifest(text);
    }
});
