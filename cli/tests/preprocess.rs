//! `gpuport preprocess` end to end: the written tensor equals the `modelport.preprocess`
//! reference committed in `preprocess/tests/fixtures/` (raw and `.npy`), MLC image and audio
//! inputs, and failures that exit 2 with a message naming the problem and leave no file.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn fixture(rel: &str) -> PathBuf {
    repo().join("preprocess/tests/fixtures").join(rel)
}

fn gpuport(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gpuport"))
        .args(args)
        .current_dir(repo())
        .output()
        .unwrap()
}

fn os<S: AsRef<std::ffi::OsStr> + ?Sized>(s: &S) -> &std::ffi::OsStr {
    s.as_ref()
}

/// A bundle whose input is the fixture case `bilinear_aa_float16_bgr` (Pillow bilinear,
/// shorter side 36, crop 32×30, BGR, ImageNet mean/std, float16 NCHW).
fn bundle(dir: &Path) -> PathBuf {
    let manifest = r#"{
      "schema": "modelport/0.1", "id": "tiny", "version": "1.0.0",
      "task": "image-classification", "license": "Apache-2.0",
      "variants": [{"id": "onnx", "runtime": "onnx", "precision": "fp32",
        "file": {"path": "model.onnx", "size": 1,
                 "sha256": "0000000000000000000000000000000000000000000000000000000000000000"}}],
      "inputs": [{"name": "pixels", "dtype": "float16", "shape": [1, 3, 32, 30], "layout": "NCHW",
        "preprocess": {"type": "image",
          "resize": {"shorter_side": 36, "method": "bilinear", "antialias": true},
          "center_crop": [32, 30], "color": "BGR",
          "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}}],
      "outputs": [{"name": "logits", "dtype": "float32", "shape": [1, 10],
        "postprocess": {"type": "classification"}}]
    }"#;
    std::fs::write(dir.join("modelport.json"), manifest).unwrap();
    dir.to_owned()
}

#[test]
fn modelport_input_is_written_exactly_raw_and_npy() {
    let tmp = tempfile::tempdir().unwrap();
    let bundle = bundle(tmp.path());
    let image = fixture("image/rgb_160x120.png");
    let expected = std::fs::read(fixture("image/bilinear_aa_float16_bgr.bin")).unwrap();

    let raw = tmp.path().join("pixels.bin");
    let out = gpuport(&[
        os("preprocess"),
        os(&bundle),
        os(&image),
        os("--print"),
        os("-o"),
        os(&raw),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read(&raw).unwrap(), expected);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("input pixels: float16 [1, 3, 32, 30]"),
        "{text}"
    );
    assert!(
        text.contains("transform: 160x120 -> resize 48x36 -> input 30x32 at (9, 2)"),
        "{text}"
    );
    assert!(text.contains("min "), "{text}");

    let npy = tmp.path().join("pixels.npy");
    let out = gpuport(&[
        os("preprocess"),
        os(&bundle.join("modelport.json")),
        os("--image"),
        os(&image),
        os("--input"),
        os("pixels"),
        os("--out"),
        os(&npy),
        os("--json"),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bytes = std::fs::read(&npy).unwrap();
    assert_eq!(&bytes[..6], b"\x93NUMPY");
    let header_len = usize::from(u16::from_le_bytes([bytes[8], bytes[9]]));
    let header = std::str::from_utf8(&bytes[10..10 + header_len]).unwrap();
    assert!(
        header.contains("'descr': '<f2'") && header.contains("'shape': (1, 3, 32, 30)"),
        "{header}"
    );
    assert_eq!(&bytes[10 + header_len..], expected.as_slice());
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["dtype"], "float16");
    assert_eq!(report["shape"], serde_json::json!([1, 3, 32, 30]));
    assert_eq!(report["transform"]["crop_left"], 9);
}

#[test]
fn failures_exit_2_name_the_problem_and_write_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let bundle = bundle(tmp.path());
    let out_file = tmp.path().join("out.bin");
    let not_an_image = tmp.path().join("modelport.json");
    let png = fixture("image/rgb_37x23.png");
    let wav = fixture("audio/sweep_8000_int24_stereo.wav");
    let cases: Vec<(Vec<&std::ffi::OsStr>, &str)> = vec![
        (
            vec![os("--image"), os(&not_an_image)],
            "unsupported image format",
        ),
        (
            vec![os("--image"), os(&png), os("--input"), os("nope")],
            "no input `nope`",
        ),
        (vec![os("--audio"), os(&wav)], "not audio"),
        (vec![], "give IMAGE or --image"),
    ];
    for (extra, message) in cases {
        let mut args = vec![os("preprocess"), os(&bundle), os("-o"), os(&out_file)];
        args.extend(extra);
        let out = gpuport(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(message), "{message}: {stderr}");
        assert!(!out_file.exists(), "{message}: output left behind");
    }
    let only_partial: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(only_partial.len(), 1, "{only_partial:?}");
}

#[test]
fn mlc_image_input_is_widened_by_the_program_and_audio_is_resampled() {
    let tmp = tempfile::tempdir().unwrap();
    let llava = repo().join("examples/mlc/llava-image");
    let image = fixture("image/rgb_160x120.png");
    let out_file = tmp.path().join("image.bin");
    let out = gpuport(&[
        os("preprocess"),
        os(&llava),
        os(&image),
        os("--program"),
        os(&llava.join("program.json")),
        os("-o"),
        os(&out_file),
        os("--json"),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["dtype"], "uint32");
    let shape = report["shape"].clone();
    let bytes = std::fs::read(&out_file).unwrap();
    let n: u64 = shape
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap())
        .product();
    assert_eq!(bytes.len() as u64, n * 4);
    assert!(
        bytes
            .chunks_exact(4)
            .all(|b| u32::from_le_bytes(b.try_into().unwrap()) < 256)
    );

    let gemma = repo().join("examples/mlc/gemma4-audio");
    let wav_out = tmp.path().join("audio.bin");
    let out = gpuport(&[
        os("preprocess"),
        os(&gemma),
        os("--audio"),
        os(&fixture("audio/sweep_44100_int16_stereo.wav")),
        os("-o"),
        os(&wav_out),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Vec<f32> = std::fs::read(&wav_out)
        .unwrap()
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    let soxr: Vec<f32> = std::fs::read(fixture("audio/sweep_44100_int16_stereo.f32"))
        .unwrap()
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    assert_eq!(got.len(), soxr.len());
    assert!(got.iter().zip(&soxr).all(|(a, b)| (a - b).abs() < 1e-2));

    // 50 samples at 8 kHz become 100 at 16 kHz, fewer than min_samples (161).
    let short_wav = tmp.path().join("short.wav");
    let spec = hound_spec();
    std::fs::write(&short_wav, wav_bytes(&spec, &[0i16; 50])).unwrap();
    let short_out = tmp.path().join("short.bin");
    let out = gpuport(&[
        os("preprocess"),
        os(&gemma),
        os("--audio"),
        os(&short_wav),
        os("-o"),
        os(&short_out),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("too short"));
    assert!(!short_out.exists());
}

/// Mono 16-bit 8 kHz.
fn hound_spec() -> (u16, u32) {
    (1, 8000)
}

/// A minimal PCM WAV (RIFF header, `fmt `, `data`).
fn wav_bytes(&(channels, rate): &(u16, u32), samples: &[i16]) -> Vec<u8> {
    let data: Vec<u8> = samples.iter().flat_map(|s| s.to_le_bytes()).collect();
    let block = channels * 2;
    let mut out = Vec::new();
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&(36 + data.len() as u32).to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16u32.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&channels.to_le_bytes());
    out.extend_from_slice(&rate.to_le_bytes());
    out.extend_from_slice(&(rate * u32::from(block)).to_le_bytes());
    out.extend_from_slice(&block.to_le_bytes());
    out.extend_from_slice(&16u16.to_le_bytes());
    out.extend_from_slice(b"data");
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out.extend_from_slice(&data);
    out
}
