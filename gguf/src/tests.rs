#![allow(clippy::unwrap_used)]

use super::*;
use proptest::prelude::*;

fn sample() -> GgufWriter {
    let mut w = GgufWriter::new();
    w.meta("general.architecture", Value::String("llama".into()))
        .meta("llama.block_count", Value::U32(2))
        .meta("llama.rope.freq_base", Value::F32(10000.0))
        .meta("x.i64", Value::I64(-5))
        .meta("x.f64", Value::F64(0.25))
        .meta("x.bool", Value::Bool(true))
        .meta(
            "tokenizer.ggml.tokens",
            Value::Array(
                8,
                vec![Value::String("a".into()), Value::String("é".into())],
            ),
        )
        .meta(
            "nested",
            Value::Array(9, vec![Value::Array(4, vec![Value::U32(1), Value::U32(2)])]),
        )
        .tensor("a", &[4, 2], 0, vec![1; 32])
        .tensor("b", &[32], 8, vec![2; 34]);
    w
}

#[test]
fn round_trip() {
    let g = Gguf::parse(sample().to_bytes()).unwrap();
    assert_eq!(g.version, 3);
    assert_eq!(g.str("general.architecture").unwrap(), "llama");
    assert_eq!(g.u32("llama.block_count").unwrap(), 2);
    assert_eq!(g.f32("llama.rope.freq_base").unwrap(), 10000.0);
    assert_eq!(g.f32("x.f64").unwrap(), 0.25);
    assert!(g.bool("x.bool").unwrap());
    assert_eq!(g.str_array("tokenizer.ggml.tokens").unwrap(), ["a", "é"]);
    assert!(matches!(g.u64("x.i64"), Err(GgufError::KeyType { .. })));
    assert!(matches!(g.u32("nope"), Err(GgufError::MissingKey(_))));
    assert_eq!(g.optional("nope", Gguf::u32).unwrap(), None);
    let a = g.tensor("a").unwrap();
    assert_eq!(
        (a.shape(), a.bytes, a.ggml),
        (vec![2, 4], 32, Some(GgmlType::F32))
    );
    assert_eq!(g.data(a), &[1; 32]);
    let b = g.tensor("b").unwrap();
    assert_eq!((b.offset, b.bytes), (32, 34));
    assert_eq!(g.data(b), &[2; 34]);
    assert!(g.data_offset.is_multiple_of(32));
}

#[test]
fn every_truncation_is_a_typed_error() {
    let bytes = sample().to_bytes();
    for cut in 0..bytes.len() {
        let r = Gguf::parse(bytes[..cut].to_vec());
        assert!(
            matches!(
                r,
                Err(GgufError::OutOfBounds { .. }
                    | GgufError::DataPastEnd { .. }
                    | GgufError::Truncated { .. })
            ),
            "cut at {cut}: {r:?}"
        );
    }
}

fn edit(bytes: &mut [u8], at: usize, v: &[u8]) {
    bytes[at..at + v.len()].copy_from_slice(v);
}

#[test]
fn header_errors_are_named() {
    let good = sample().to_bytes();
    let mut b = good.clone();
    edit(&mut b, 0, b"GGUG");
    assert!(matches!(Gguf::parse(b), Err(GgufError::BadMagic(_))));
    for v in [1u32, 4, 0x0300_0000] {
        let mut b = good.clone();
        edit(&mut b, 4, &v.to_le_bytes());
        assert!(matches!(Gguf::parse(b), Err(GgufError::Version(x)) if x == v));
    }
    let mut b = good.clone();
    edit(&mut b, 16, &u64::MAX.to_le_bytes());
    assert!(matches!(Gguf::parse(b), Err(GgufError::Truncated { .. })));
}

#[test]
fn content_errors_are_named() {
    let mut w = GgufWriter::new();
    w.meta("k", Value::U8(1)).meta("k", Value::U8(2));
    assert!(matches!(Gguf::parse(w.to_bytes()), Err(GgufError::DuplicateKey(k)) if k == "k"));

    let mut w = GgufWriter::new();
    w.tensor("t", &[4], 0, vec![0; 16])
        .tensor("t", &[4], 0, vec![0; 16]);
    assert!(matches!(
        Gguf::parse(w.to_bytes()),
        Err(GgufError::DuplicateTensor(_))
    ));

    let mut w = GgufWriter::new();
    w.meta("general.alignment", Value::U32(24));
    assert!(matches!(
        Gguf::parse(w.to_bytes()),
        Err(GgufError::Alignment(24))
    ));

    let mut w = GgufWriter::new();
    w.tensor("q", &[33], 8, vec![0; 34]);
    assert!(
        matches!(Gguf::parse(w.to_bytes()), Err(GgufError::Blocks { name, .. }) if name == "q")
    );

    let mut w = GgufWriter::new();
    w.tensor("u", &[4], 99, vec![0; 16]);
    assert!(matches!(
        Gguf::parse(w.to_bytes()),
        Err(GgufError::TensorType { type_id: 99, .. })
    ));

    let mut w = GgufWriter::new();
    w.tensor("d", &[1, 1, 1, 1, 1], 0, vec![0; 4]);
    assert!(matches!(
        Gguf::parse(w.to_bytes()),
        Err(GgufError::Dims { .. })
    ));

    let mut w = GgufWriter::new();
    w.tensor("big", &[1 << 40, 1 << 40], 0, vec![]);
    assert!(matches!(
        Gguf::parse(w.to_bytes()),
        Err(GgufError::Dims { .. })
    ));

    // Declared bigger than the data present.
    let mut w = GgufWriter::new();
    w.tensor("short", &[64], 0, vec![0; 16]);
    assert!(matches!(
        Gguf::parse(w.to_bytes()),
        Err(GgufError::OutOfBounds { name, .. }) if name == "short"
    ));

    let mut deep = Value::U8(0);
    for _ in 0..5 {
        deep = Value::Array(if matches!(deep, Value::U8(_)) { 0 } else { 9 }, vec![deep]);
    }
    let mut w = GgufWriter::new();
    w.meta("deep", deep);
    assert!(matches!(
        Gguf::parse(w.to_bytes()),
        Err(GgufError::Nesting(_))
    ));

    let mut w = GgufWriter::new();
    w.meta("s", Value::String("ab".into()));
    let mut b = w.to_bytes();
    let at = b.windows(2).position(|w| w == b"ab").unwrap();
    b[at] = 0xff;
    assert!(matches!(Gguf::parse(b), Err(GgufError::Utf8 { .. })));
}

#[test]
fn misaligned_and_overlapping_tensors() {
    let mut w = GgufWriter::new();
    w.tensor("a", &[8], 0, vec![0; 32])
        .tensor("b", &[8], 0, vec![0; 32]);
    let good = w.to_bytes();
    // The second tensor's offset is the last 8 bytes of the tensor infos.
    let pos = good
        .windows(9)
        .rposition(|w| w == b"\x01\x00\x00\x00\x00\x00\x00\x00b")
        .unwrap();
    // name "b" is followed by n_dims (4), dims (8), type (4), offset (8).
    let off_at = pos + 9 + 4 + 8 + 4;
    let mut b = good.clone();
    edit(&mut b, off_at, &16u64.to_le_bytes());
    assert!(matches!(
        Gguf::parse(b),
        Err(GgufError::Misaligned { offset: 16, .. })
    ));
    let mut b = good.clone();
    edit(&mut b, off_at, &0u64.to_le_bytes());
    assert!(matches!(Gguf::parse(b), Err(GgufError::Overlap(..))));
}

/// Fuzzing found this (issue 18): a v2 file whose one tensor is zero-sized and whose aligned
/// data section would start past the end parsed, then `data` panicked.
#[test]
fn zero_sized_tensor_past_the_end_is_refused() {
    let mut w = GgufWriter::new();
    w.tensor("empty", &[0], 0, Vec::new());
    let mut b = w.to_bytes();
    edit(&mut b, 4, &2u32.to_le_bytes());
    // Drop the padding that would start the data section: the file ends inside it.
    let unpadded = b.len() - 1;
    b.truncate(unpadded);
    assert!(matches!(
        Gguf::parse(b.clone()),
        Err(GgufError::DataPastEnd { ref name, .. }) if name == "empty"
    ));
    // With its padding the same file is valid and its tensor is empty.
    let mut padded = b;
    padded.push(0);
    let g = Gguf::parse(padded).unwrap();
    assert!(g.data(&g.tensors[0]).is_empty());
    // A file with no tensors needs no data section.
    let mut b = GgufWriter::new().to_bytes();
    b.truncate(24);
    assert!(Gguf::parse(b).unwrap().tensors.is_empty());
}

/// Every tensor of a parsed file has exactly its bytes inside the file.
fn assert_data_in_bounds(g: &Gguf) {
    for t in &g.tensors {
        assert_eq!(g.data(t).len() as u64, t.bytes, "tensor {}", t.name);
    }
}

#[test]
fn fuzz_regressions_replay() {
    // Inputs libFuzzer found (fuzz/regressions/gguf/), replayed in the ordinary test suite.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/regressions/gguf");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return;
    };
    for e in entries {
        let bytes = std::fs::read(e.unwrap().path()).unwrap();
        if let Ok(g) = Gguf::parse(bytes) {
            assert_data_in_bounds(&g);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let mut b = b"GGUF\x03\x00\x00\x00".to_vec();
        b.extend(bytes);
        if let Ok(g) = Gguf::parse(b) {
            assert_data_in_bounds(&g);
        }
    }

    #[test]
    fn edited_files_never_panic(edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8)) {
        let mut b = sample().to_bytes();
        for (at, v) in edits {
            let n = b.len();
            b[at % n] = v;
        }
        if let Ok(g) = Gguf::parse(b) {
            assert_data_in_bounds(&g);
        }
    }
}
