//! ModelPort manifests: arbitrary text is parsed and validated without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = gpuport_manifest_core::modelport::parse_manifest(text);
    }
});
