//! Unit tests of the decoder on hand-built messages; the reference comparison with the `onnx`
//! package is `tests/onnx_reference.rs`.

#![allow(clippy::unwrap_used)]

use super::*;
use proptest::prelude::*;

/// `TensorProto` with `dims`, `data_type` and whatever `extra` adds.
fn tensor(dims: &[i64], data_type: i64, extra: impl FnOnce(&mut Encoder)) -> Encoder {
    let mut t = Encoder::new();
    t.packed_varints(1, dims)
        .varint(2, data_type)
        .bytes(8, b"t");
    extra(&mut t);
    t
}

fn model_with(graph: &Encoder) -> Vec<u8> {
    let mut opset = Encoder::new();
    opset.varint(2, 17);
    let mut m = Encoder::new();
    m.varint(1, 8).message(8, &opset).message(7, graph);
    m.finish()
}

fn model_with_initializer(t: &Encoder) -> Result<OnnxModel, OnnxError> {
    let mut g = Encoder::new();
    g.message(5, t);
    OnnxModel::parse(model_with(&g), None)
}

fn raw(m: &OnnxModel) -> Vec<u8> {
    match m.values(&m.model().graph.initializers[0]).unwrap() {
        Values::Bytes(b) => b.into_owned(),
        Values::Strings(_) => panic!("strings"),
    }
}

#[test]
fn typed_fields_decode_to_the_raw_layout() {
    // float16 bits in int32_data, one element per int32.
    let h = [
        half::f16::from_f32(1.5).to_bits(),
        half::f16::from_f32(-2.0).to_bits(),
    ];
    let t = tensor(&[2], 10, |t| {
        t.packed_varints(5, &[i64::from(h[0]), i64::from(h[1])]);
    });
    let m = model_with_initializer(&t).unwrap();
    let bytes = raw(&m);
    assert_eq!(bytes, [h[0].to_le_bytes(), h[1].to_le_bytes()].concat());
    // int8 from signed int32s; int64 unpacked (one tag per element).
    let t = tensor(&[3], 3, |t| {
        t.packed_varints(5, &[-1, 2, -128]);
    });
    assert_eq!(raw(&model_with_initializer(&t).unwrap()), [0xff, 2, 0x80]);
    let t = tensor(&[2], 7, |t| {
        t.varint(7, -5).varint(7, 6);
    });
    let want: Vec<u8> = [-5i64, 6].iter().flat_map(|v| v.to_le_bytes()).collect();
    assert_eq!(raw(&model_with_initializer(&t).unwrap()), want);
}

#[test]
fn raw_data_is_borrowed_from_the_file() {
    let t = tensor(&[2], 1, |t| {
        t.bytes(9, &[0, 0, 128, 63, 0, 0, 0, 64]);
    });
    let m = model_with_initializer(&t).unwrap();
    let Values::Bytes(std::borrow::Cow::Borrowed(b)) =
        m.values(&m.model().graph.initializers[0]).unwrap()
    else {
        panic!("raw_data was copied");
    };
    let at = b.as_ptr() as usize - m.bytes().as_ptr() as usize;
    assert!(at + b.len() <= m.bytes().len());
}

#[test]
fn bad_tensors_are_refused_with_their_path() {
    let cases: Vec<(Encoder, &str)> = vec![
        (
            tensor(&[2], 1, |t| {
                t.bytes(9, &[0; 7]);
            }),
            "raw_data has 7 bytes, 2 FLOAT elements take 8",
        ),
        (
            tensor(&[3], 1, |t| {
                t.float(4, 1.0);
            }),
            "1 values stored, 3 FLOAT elements need 3",
        ),
        (
            tensor(&[1], 1, |t| {
                t.float(4, 1.0).bytes(9, &[0; 4]);
            }),
            "values in more than one place: float_data, raw_data",
        ),
        (
            tensor(&[1], 1, |t| {
                t.varint(7, 1);
            }),
            "int64_data cannot hold FLOAT values",
        ),
        (
            tensor(&[1], 99, |_| {}),
            "data_type 99 is not an ONNX element type",
        ),
        (tensor(&[-1], 1, |_| {}), "negative dimension"),
        (tensor(&[1 << 40, 1 << 40], 1, |_| {}), "overflow 64 bits"),
    ];
    for (t, want) in cases {
        let e = model_with_initializer(&t).unwrap_err().to_string();
        assert!(e.contains(want), "{e}");
        assert!(e.starts_with("model.graph.initializer[0](t)"), "{e}");
    }
}

#[test]
fn values_out_of_range_for_their_type_are_refused() {
    let t = tensor(&[1], 2, |t| {
        t.packed_varints(5, &[256]);
    });
    let m = model_with_initializer(&t).unwrap();
    let e = m
        .values(&m.model().graph.initializers[0])
        .unwrap_err()
        .to_string();
    assert!(e.contains("int32_data value 256 does not fit UINT8"), "{e}");
}

#[test]
fn wire_errors_name_the_field() {
    // `op_type` (string) sent as a varint.
    let mut node = Encoder::new();
    node.varint(4, 3);
    let mut g = Encoder::new();
    g.message(1, &node);
    let e = OnnxModel::parse(model_with(&g), None)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "model.graph.node[0]: field `op_type` must be length-delimited, found varint"
    );
    // A length past the end.
    let mut bytes = model_with(&Encoder::new());
    bytes.extend_from_slice(&[0x3a, 0x7f]);
    let e = OnnxModel::parse(bytes, None).unwrap_err().to_string();
    assert!(e.contains("truncated: 127 bytes needed"), "{e}");
    // A group.
    let e = OnnxModel::parse(vec![0x0b], None).unwrap_err().to_string();
    assert!(e.contains("wire type 3 of field 1"), "{e}");
    // No graph.
    let e = OnnxModel::parse(vec![0x08, 0x07], None)
        .unwrap_err()
        .to_string();
    assert_eq!(e, "model: no `graph`");
}

#[test]
fn nesting_is_bounded() {
    let mut g = Encoder::new();
    g.bytes(2, b"leaf");
    for _ in 0..model::MAX_DEPTH + 1 {
        let mut attr = Encoder::new();
        attr.bytes(1, b"body").message(6, &g).varint(20, 5);
        let mut node = Encoder::new();
        node.bytes(4, b"If").message(5, &attr);
        g = Encoder::new();
        g.message(1, &node);
    }
    let e = OnnxModel::parse(model_with(&g), None).unwrap_err();
    assert!(matches!(e, OnnxError::TooDeep { .. }), "{e}");
}

#[test]
fn external_data_follows_the_path_rules() {
    let dir = tempfile_dir();
    std::fs::write(dir.join("w.bin"), [1u8, 2, 3, 4, 5, 6, 7, 8, 9]).unwrap();
    let ext = |loc: &str, offset: &str| {
        tensor(&[2], 2, |t| {
            let mut e = Encoder::new();
            e.bytes(1, b"location").bytes(2, loc.as_bytes());
            let mut o = Encoder::new();
            o.bytes(1, b"offset").bytes(2, offset.as_bytes());
            t.message(13, &e).message(13, &o).varint(14, 1);
        })
    };
    let mut g = Encoder::new();
    g.message(5, &ext("w.bin", "7"));
    let m = OnnxModel::parse(model_with(&g), Some(&dir)).unwrap();
    assert_eq!(raw(&m), [8, 9]);
    let mut g = Encoder::new();
    g.message(5, &ext("w.bin", "8"));
    let m = OnnxModel::parse(model_with(&g), Some(&dir)).unwrap();
    let e = m
        .values(&m.model().graph.initializers[0])
        .unwrap_err()
        .to_string();
    assert!(e.contains("bytes 8..10 are outside the file's 9"), "{e}");
    let mut g = Encoder::new();
    g.message(5, &ext("../w.bin", "0"));
    let e = OnnxModel::parse(model_with(&g), Some(&dir))
        .unwrap_err()
        .to_string();
    assert!(e.contains("external data `../w.bin`: path"), "{e}");
}

fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("gpuport-onnx-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = OnnxModel::parse(bytes.clone(), None);
        if let Ok(t) = TensorFile::parse(bytes) {
            let _ = t.values();
        }
    }

    #[test]
    fn mutated_models_never_panic(flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8)) {
        let t = tensor(&[2, 2], 1, |t| { t.bytes(9, &[0; 16]); });
        let mut attr = Encoder::new();
        attr.bytes(1, b"pads").packed_varints(8, &[0, 0, 1, 1]).varint(20, 7);
        let mut node = Encoder::new();
        node.bytes(1, b"x").bytes(2, b"y").bytes(4, b"Conv").message(5, &attr);
        let mut g = Encoder::new();
        g.message(1, &node).message(5, &t);
        let mut bytes = model_with(&g);
        for (at, v) in flips {
            let n = bytes.len();
            bytes[at % n] = v;
        }
        if let Ok(m) = OnnxModel::parse(bytes, None) {
            for t in &m.model().graph.initializers {
                let _ = m.values(t);
            }
        }
    }
}
