//! `gpuport onnx-run` on the ONNX backend node tests: every allowlisted test's inputs go in as
//! `.npy` files (`--device cpu`), every output comes back as `.npy` equal to the test's expected
//! output; graphs outside the supported set exit 3 saying "unsupported" (on the GPU, the
//! default), and bad inputs are named.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::{Command, Output};

use gpuport_onnx::{OnnxModel, npy};
use gpuport_testing::onnx_node::{allowlist, data_sets, load, mismatch, root};

fn onnx_run(model: &Path, inputs: &[(String, std::path::PathBuf)], out: &Path) -> Output {
    onnx_run_on("gpu", model, inputs, out)
}

fn onnx_run_on(
    device: &str,
    model: &Path,
    inputs: &[(String, std::path::PathBuf)],
    out: &Path,
) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_gpuport"));
    c.arg("onnx-run")
        .arg(model)
        .arg("--output-dir")
        .arg(out)
        .args(["--device", device]);
    for (name, file) in inputs {
        c.arg("--input").arg(format!("{name}={}", file.display()));
    }
    c.output().unwrap()
}

#[test]
fn allowlisted_node_tests_through_the_cli() {
    let Some(root) = root() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let mut runs = 0;
    for name in allowlist() {
        let dir = root.join(&name);
        let model = dir.join("model.onnx");
        let m = OnnxModel::open(&model).unwrap();
        let g = &m.model().graph;
        let ins: Vec<String> = g.runtime_inputs().map(|v| v.name.clone()).collect();
        for (k, set) in data_sets(&dir).iter().enumerate() {
            let work = tmp.path().join(format!("{name}-{k}"));
            std::fs::create_dir_all(&work).unwrap();
            let mut inputs = Vec::new();
            for (i, input) in ins.iter().enumerate() {
                let pb = set.join(format!("input_{i}.pb"));
                if !pb.exists() {
                    continue;
                }
                let file = work.join(format!("input_{i}.npy"));
                npy::write(&file, &load(&pb).unwrap()).unwrap();
                inputs.push((input.clone(), file));
            }
            // The host evaluator runs every allowlisted test (the GPU path takes f32 values only;
            // onnx/tests/gpu.rs runs the node tests it can on the GPU).
            let out = onnx_run_on("cpu", &model, &inputs, &work.join("out"));
            assert!(
                out.status.success(),
                "{name}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            for (i, o) in g.outputs.iter().enumerate() {
                let got = npy::read(&work.join("out").join(format!("{}.npy", o.name))).unwrap();
                let want = load(&set.join(format!("output_{i}.pb"))).unwrap();
                assert_eq!(mismatch(&got, &want), None, "{name} output `{}`", o.name);
            }
            runs += 1;
        }
    }
    assert!(runs >= 250, "only {runs} data sets ran");
}

#[test]
fn unsupported_graphs_exit_3_and_bad_inputs_are_named() {
    let Some(root) = root() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let lstm = root.join("test_lstm_defaults");
    let x = tmp.path().join("x.npy");
    npy::write(&x, &load(&lstm.join("test_data_set_0/input_0.pb")).unwrap()).unwrap();
    let w = tmp.path().join("w.npy");
    npy::write(&w, &load(&lstm.join("test_data_set_0/input_1.pb")).unwrap()).unwrap();
    let r = tmp.path().join("r.npy");
    npy::write(&r, &load(&lstm.join("test_data_set_0/input_2.pb")).unwrap()).unwrap();
    let args = [
        ("X".to_string(), x.clone()),
        ("W".to_string(), w),
        ("R".to_string(), r),
    ];
    let out = onnx_run(&lstm.join("model.onnx"), &args, &tmp.path().join("o"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("unsupported: LSTM at node 0: op `LSTM`"),
        "{err}"
    );

    let relu = root.join("test_relu/model.onnx");
    let xr = tmp.path().join("xr.npy");
    npy::write(
        &xr,
        &load(&root.join("test_relu/test_data_set_0/input_0.pb")).unwrap(),
    )
    .unwrap();
    // A missing input, an input the graph lacks, the wrong type, bad syntax, a missing file.
    let out = onnx_run(&relu, &[], &tmp.path().join("o"));
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("input `x`: not given"));
    let out = onnx_run(
        &relu,
        &[("x".into(), xr.clone()), ("y".into(), xr.clone())],
        &tmp.path().join("o"),
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("input `y`: is not an input of the graph")
    );
    let out = onnx_run(&relu, &[("x".into(), x)], &tmp.path().join("o"));
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the graph declares 3"));
    let out = Command::new(env!("CARGO_BIN_EXE_gpuport"))
        .args([
            "onnx-run",
            relu.to_str().unwrap(),
            "--input",
            "x",
            "--output-dir",
            "o",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = onnx_run(
        &relu,
        &[("x".into(), tmp.path().join("none.npy"))],
        &tmp.path().join("o"),
    );
    assert_eq!(out.status.code(), Some(2));
}
