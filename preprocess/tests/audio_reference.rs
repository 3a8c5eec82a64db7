//! `audio_decode` on stereo sine sweeps (44.1 k int16, 48 k float32, 8 k int24, 22.05 k uint8,
//! 32 k int32) against soxr "VHQ" applied to the channel mean of the same quantized samples
//! (`tools/preprocess_reference.py audio`). The two are different band-limited filters, so they
//! agree to a bound, not bit for bit: see the constants.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use gpuport_manifest_core::mlc::{AudioDecode, AudioFormat};
use gpuport_preprocess::audio::decode_wav;
use gpuport_preprocess::mlc::{AudioDecodeError, audio_decode};
use serde_json::Value;

/// Largest |ours − soxr| away from the ends (signal peak 0.45; measured 6e-5 to 1.3e-4 for the
/// downsampling cases, 1.4e-3 for 8 kHz → 16 kHz, whose sweep reaches 0.8 × its Nyquist).
const INTERIOR_BOUND: f32 = 2e-3;
/// Largest |ours − soxr| in the first and last `EDGE` samples, where the filters' different
/// lengths meet the zero padding differently (measured at most 6e-3).
const EDGE_BOUND: f32 = 1e-2;
const EDGE: usize = 64;

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/audio")
}

fn spec(min: u64, max: u64) -> AudioDecode {
    AudioDecode {
        format: AudioFormat::PcmF32,
        sample_rate_hz: 16000,
        channels: 1,
        min_samples: min,
        max_samples: max,
    }
}

#[test]
fn sweeps_resample_like_soxr_within_the_stated_bound() {
    let cases: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(dir().join("cases.json")).unwrap()).unwrap();
    assert_eq!(cases.len(), 5);
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let wav = std::fs::read(dir().join(case["wav"].as_str().unwrap())).unwrap();
        let expected: Vec<f32> = std::fs::read(dir().join(case["expected"].as_str().unwrap()))
            .unwrap()
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
            .collect();
        let got = audio_decode(&wav, &spec(161, 480_000)).unwrap();
        assert_eq!(got.len(), expected.len(), "{name}");
        let diff = |range: std::ops::Range<usize>| {
            range
                .map(|i| (got[i] - expected[i]).abs())
                .fold(0f32, f32::max)
        };
        let n = got.len();
        let interior = diff(EDGE..n - EDGE);
        let edges = diff(0..EDGE).max(diff(n - EDGE..n));
        eprintln!("{name}: max |diff| interior {interior:.2e}, edges {edges:.2e}");
        assert!(interior <= INTERIOR_BOUND, "{name}: interior {interior}");
        assert!(edges <= EDGE_BOUND, "{name}: edges {edges}");
    }
}

#[test]
fn length_limits_are_enforced_with_clear_errors() {
    let wav = std::fs::read(dir().join("sweep_8000_int24_stereo.wav")).unwrap();
    let short = audio_decode(&wav, &spec(8001, 480_000)).unwrap_err();
    assert!(
        matches!(
            short,
            AudioDecodeError::TooShort {
                samples: 8000,
                min_samples: 8001,
                ..
            }
        ),
        "{short}"
    );
    assert!(short.to_string().contains("too short"));
    let long = audio_decode(&wav, &spec(1, 7999)).unwrap_err();
    assert!(
        matches!(long, AudioDecodeError::TooLong { samples: 8000, .. }),
        "{long}"
    );
    let stereo = AudioDecode {
        channels: 2,
        ..spec(1, 10)
    };
    assert!(matches!(
        audio_decode(&wav, &stereo),
        Err(AudioDecodeError::UnsupportedTarget { .. })
    ));
    assert!(matches!(
        audio_decode(b"RIFF....", &spec(1, 10)),
        Err(AudioDecodeError::Wav(_))
    ));
}

#[test]
fn every_pcm_width_decodes_to_full_scale_fractions() {
    for (bits, format, value, expected) in [
        (8u16, hound::SampleFormat::Int, -64i32, -0.5f32),
        (16, hound::SampleFormat::Int, 16384, 0.5),
        (24, hound::SampleFormat::Int, -4_194_304, -0.5),
        (32, hound::SampleFormat::Int, 1 << 30, 0.5),
    ] {
        let mut bytes = std::io::Cursor::new(Vec::new());
        let spec = hound::WavSpec {
            channels: 3,
            sample_rate: 12345,
            bits_per_sample: bits,
            sample_format: format,
        };
        let mut writer = hound::WavWriter::new(&mut bytes, spec).unwrap();
        for v in [value, 0, value] {
            writer.write_sample(v).unwrap();
        }
        writer.finalize().unwrap();
        let audio = decode_wav(bytes.get_ref()).unwrap();
        assert_eq!(audio.sample_rate, 12345);
        // Mean of (v, 0, v) over three channels.
        assert_eq!(audio.samples, [expected * 2.0 / 3.0], "{bits}-bit");
    }
}
