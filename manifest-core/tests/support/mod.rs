//! The ModelPort rule corpus (`tests/cases/modelport.json`): each case is an official example
//! with fields set or removed by JSON pointer, the pointers gpuport must report, and the verdict
//! of the reference validator (`modelport-cli` 0.1.0), with the reason wherever the two differ.

#![allow(dead_code, clippy::unwrap_used)]

use std::path::PathBuf;

use serde::Deserialize;
use serde_json::{Map, Value};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    pub name: String,
    pub base: String,
    #[serde(default)]
    pub set: Map<String, Value>,
    #[serde(default)]
    pub remove: Vec<String>,
    pub expect: Vec<String>,
    pub reference: String,
    pub difference: Option<String>,
}

pub fn cases() -> Vec<Case> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/cases/modelport.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn split(pointer: &str) -> (&str, String) {
    let (parent, last) = pointer.rsplit_once('/').unwrap();
    (parent, last.replace("~1", "/").replace("~0", "~"))
}

/// The case's document: its base with `set` applied, then `remove`.
pub fn document(case: &Case) -> Value {
    let base = repo_root()
        .join("examples/modelport")
        .join(format!("{}.json", case.base));
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(base).unwrap()).unwrap();
    for (pointer, value) in &case.set {
        let (parent, key) = split(pointer);
        match doc
            .pointer_mut(parent)
            .unwrap_or_else(|| panic!("{}: no {parent}", case.name))
        {
            Value::Object(m) => {
                m.insert(key, value.clone());
            }
            Value::Array(a) => {
                let i: usize = key.parse().unwrap();
                if i == a.len() {
                    a.push(value.clone());
                } else {
                    a[i] = value.clone();
                }
            }
            _ => panic!("{}: {parent} is not a container", case.name),
        }
    }
    for pointer in &case.remove {
        let (parent, key) = split(pointer);
        let removed = doc
            .pointer_mut(parent)
            .and_then(Value::as_object_mut)
            .and_then(|m| m.remove(&key));
        assert!(removed.is_some(), "{}: nothing at {pointer}", case.name);
    }
    doc
}

pub use gpuport_testing::references::*;
