//! The ONNX backend node tests (from the `onnx==1.22.0` wheel) through the host evaluator.
//!
//! Every test whose ops are all in [`SUPPORTED_OPS`] runs on each of its data sets and must
//! either match the expected outputs (same type and shape; floats within 1e-4 + 1e-3·|want|,
//! integers and bools exact) or fail with [`EvalError::Unsupported`] — never a wrong answer or
//! another error. The tests that match are exactly `node_allowlist.txt`, so coverage can only
//! change on purpose.

#![allow(clippy::unwrap_used)]

use std::path::Path;

use gpuport_onnx::eval::SUPPORTED_OPS;
use gpuport_onnx::{EvalError, OnnxModel, Type, evaluate};
use gpuport_testing::onnx_node::{allowlist, data_sets, load, mismatch, root};

enum Outcome {
    Pass,
    Unsupported(String),
    Fail(String),
}

fn run_test(dir: &Path) -> Option<Outcome> {
    let m = OnnxModel::open(&dir.join("model.onnx")).ok()?;
    let g = &m.model().graph;
    if g.nodes
        .iter()
        .any(|n| !SUPPORTED_OPS.contains(&n.op_type.as_str()))
    {
        return None;
    }
    let ins: Vec<_> = g.runtime_inputs().cloned().collect();
    if ins
        .iter()
        .chain(&g.outputs)
        .any(|v| !matches!(v.ty, Some(Type::Tensor { .. })))
    {
        return None;
    }
    for set in data_sets(dir) {
        let mut inputs = Vec::new();
        for (i, vi) in ins.iter().enumerate() {
            let p = set.join(format!("input_{i}.pb"));
            if p.exists() {
                match load(&p) {
                    Ok(t) => inputs.push((vi.name.clone(), t)),
                    Err(why) => return Some(Outcome::Unsupported(format!("input {i}: {why}"))),
                }
            }
        }
        let outs = match evaluate(&m, &inputs) {
            Ok(o) => o,
            Err(e @ EvalError::Unsupported { .. }) => {
                return Some(Outcome::Unsupported(e.to_string()));
            }
            Err(e) => return Some(Outcome::Fail(format!("{}: {e}", set.display()))),
        };
        for (i, (name, got)) in outs.iter().enumerate() {
            let want = match load(&set.join(format!("output_{i}.pb"))) {
                Ok(t) => t,
                Err(why) => {
                    return Some(Outcome::Fail(format!("output {i} is {why}, yet evaluated")));
                }
            };
            if let Some(why) = mismatch(got, &want) {
                return Some(Outcome::Fail(format!(
                    "{}: output `{name}`: {why}",
                    set.display()
                )));
            }
        }
    }
    Some(Outcome::Pass)
}

#[test]
fn backend_node_tests_match_or_are_refused() {
    let Some(root) = root() else { return };
    let allow = allowlist();
    let mut names: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    names.sort();
    let (mut passed, mut refused, mut failed) = (Vec::new(), Vec::new(), Vec::new());
    for name in &names {
        match run_test(&root.join(name)) {
            None => {}
            Some(Outcome::Pass) => passed.push(name.as_str()),
            Some(Outcome::Unsupported(why)) => refused.push(format!("{name}: {why}")),
            Some(Outcome::Fail(why)) => failed.push(format!("{name}: {why}")),
        }
    }
    eprintln!(
        "{} passed, {} refused as unsupported:",
        passed.len(),
        refused.len()
    );
    for r in &refused {
        eprintln!("  {r}");
    }
    assert!(
        failed.is_empty(),
        "{} wrong or failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
    let missing: Vec<&String> = allow
        .iter()
        .filter(|a| !passed.contains(&a.as_str()))
        .collect();
    let unlisted: Vec<&&str> = passed
        .iter()
        .filter(|p| !allow.iter().any(|a| a == *p))
        .collect();
    assert!(
        missing.is_empty() && unlisted.is_empty(),
        "allowlisted but not passing: {missing:?}\npassing but not allowlisted: {unlisted:?}"
    );
}
