//! Property tests: no input makes a parser panic, and valid documents survive random edits
//! without panicking (the fuzzing the CI can run on stable Rust).

#![allow(clippy::unwrap_used)]

mod support;

use gpuport_manifest_core::json::parse_strict;
use gpuport_manifest_core::mlc::{
    parse_package, parse_program, read_package, read_program_document,
};
use gpuport_manifest_core::modelport::{parse_manifest, read_manifest};
use proptest::prelude::*;
use serde_json::Value;

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        "[a-z/._:-]{0,12}".prop_map(Value::String),
        prop_oneof![
            Just("modelport/0.1"),
            Just("modelport/0.2"),
            Just("mlc.model-package"),
            Just("tokenizer"),
            Just("image_decode"),
            Just("detr"),
            Just("-1")
        ]
        .prop_map(|s| Value::String(s.into())),
    ];
    leaf.prop_recursive(5, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    "[a-z_]{1,10}",
                    Just("schema".to_owned()),
                    Just("variants".to_owned()),
                    Just("file".to_owned()),
                    Just("path".to_owned()),
                    Just("tasks".to_owned()),
                    Just("processor".to_owned()),
                    Just("postprocess".to_owned()),
                    Just("type".to_owned()),
                    Just("kind".to_owned()),
                ],
                inner,
                0..6,
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Every pointer to a value inside `v`.
fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    out.push(at.clone());
    match v {
        Value::Object(m) => m.iter().for_each(|(k, x)| {
            pointers(
                x,
                format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")),
                out,
            )
        }),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, x)| pointers(x, format!("{at}/{i}"), out)),
        _ => {}
    }
}

fn seeds() -> Vec<Value> {
    let root = support::repo_root().join("examples");
    let files = [
        "modelport/image-classification.json",
        "modelport/object-detection.json",
        "modelport/text-generation.json",
        "mlc/gemma4-audio/mlc-model-manifest.json",
        "mlc/llava-image/program.json",
    ];
    files
        .iter()
        .map(|f| serde_json::from_str(&std::fs::read_to_string(root.join(f)).unwrap()).unwrap())
        .collect()
}

fn read_all(v: &Value) {
    let _ = read_manifest(v);
    let _ = read_package(v);
    let _ = read_program_document(v);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,200}") {
        let _ = parse_strict(&text);
        let _ = parse_manifest(&text);
        let _ = parse_package(&text);
        let _ = parse_program(&text);
    }

    #[test]
    fn arbitrary_json_never_panics(v in any_json()) {
        read_all(&v);
    }

    #[test]
    fn edited_valid_documents_never_panic(seed in 0usize..5, pick in any::<prop::sample::Index>(), replacement in any_json(), delete in any::<bool>()) {
        let mut doc = seeds().swap_remove(seed);
        let mut all = Vec::new();
        pointers(&doc, String::new(), &mut all);
        let target = pick.get(&all).clone();
        if target.is_empty() {
            doc = replacement;
        } else if delete {
            let (parent, key) = target.rsplit_once('/').unwrap();
            match doc.pointer_mut(parent) {
                Some(Value::Object(m)) => { m.remove(&key.replace("~1", "/").replace("~0", "~")); }
                Some(Value::Array(a)) => { let i: usize = key.parse().unwrap(); a.remove(i); }
                _ => {}
            }
        } else if let Some(slot) = doc.pointer_mut(&target) {
            *slot = replacement;
        }
        read_all(&doc);
    }
}
