//! gpuport's GGUF reader against gguf-py (the format's reference reader) on the real model
//! files: every metadata key, type and value (arrays by length and ends), every tensor's name,
//! type, dimensions, absolute offset and size.

#![allow(clippy::unwrap_used)]

use gpuport_testing as support;

use gpuport_runtime::gguf::{Gguf, Value};
use serde_json::Value as Json;

fn json_of(v: &Value) -> Json {
    match v {
        Value::String(s) => Json::from(s.as_str()),
        Value::Bool(b) => Json::from(*b),
        Value::F32(f) => Json::from(f64::from(*f)),
        Value::F64(f) => Json::from(*f),
        other => Json::from(other.as_i128().unwrap() as i64),
    }
}

fn check(file: &str) {
    let Some(path) = support::model(file) else {
        return;
    };
    if !support::python_modules_available(&["gguf"]) {
        return;
    }
    let reference: Json =
        serde_json::from_slice(&support::python_tool("gguf_dump.py", &[path.as_os_str()])).unwrap();
    let g = Gguf::open(&path).unwrap();
    let meta = reference["metadata"].as_array().unwrap();
    assert_eq!(meta.len(), g.metadata.len(), "{file}: metadata count");
    for (want, (key, value)) in meta.iter().zip(&g.metadata) {
        assert_eq!(want["key"], Json::from(key.as_str()), "{file}: key order");
        match value {
            Value::Array(elem, items) => {
                assert_eq!(want["type"], "array", "{key}");
                assert_eq!(want["elem"], Json::from(*elem), "{key}");
                assert_eq!(want["len"], Json::from(items.len()), "{key}");
                if let (Some(first), Some(last)) = (items.first(), items.last()) {
                    assert_eq!(want["first"], json_of(first), "{key} first");
                    assert_eq!(want["last"], json_of(last), "{key} last");
                }
            }
            v => assert_eq!(want["value"], json_of(v), "{key}"),
        }
    }
    let tensors = reference["tensors"].as_array().unwrap();
    assert_eq!(tensors.len(), g.tensors.len(), "{file}: tensor count");
    for (want, t) in tensors.iter().zip(&g.tensors) {
        assert_eq!(want["name"], Json::from(t.name.as_str()));
        assert_eq!(want["type"], Json::from(t.type_id), "{}", t.name);
        assert_eq!(want["dims"], Json::from(t.dims.clone()), "{}", t.name);
        assert_eq!(
            want["offset"],
            Json::from(g.data_offset + t.offset),
            "{}",
            t.name
        );
        assert_eq!(want["bytes"], Json::from(t.bytes), "{}", t.name);
    }
}

#[test]
fn smollm2_matches_gguf_py() {
    check("SmolLM2-135M-Instruct.Q4_1.gguf");
}

#[test]
fn gemma3_matches_gguf_py() {
    check("gemma-3-270m-q4_k_m.gguf");
}
