//! WAV: arbitrary bytes go through MLC `audio_decode` (decode, mono, resample to 16 kHz, length
//! check) without panicking.
#![no_main]

use gpuport_manifest_core::mlc::{AudioDecode, AudioFormat};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let spec = AudioDecode {
        format: AudioFormat::PcmF32,
        sample_rate_hz: 16000,
        channels: 1,
        min_samples: 1,
        max_samples: 480_000,
    };
    let _ = gpuport_preprocess::mlc::audio_decode(data, &spec);
});
