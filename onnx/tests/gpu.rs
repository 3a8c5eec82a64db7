//! The GPU executor against the host evaluator and the ONNX backend node tests: every
//! allowlisted node test it can plan must match the expected outputs (the node tests' own
//! tolerance); those it cannot are refused as unsupported, never answered wrongly. Then both
//! vision models (`cargo xtask fetch-models`) on a photo, output for output against the host
//! evaluator.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use gpuport_onnx::gpu::GpuModel;
use gpuport_onnx::{EvalError, HostTensor, OnnxModel, evaluate};
use gpuport_testing::onnx_node::{allowlist, data_sets, load, mismatch, root};

#[test]
fn node_tests_on_the_gpu_match_or_are_refused() {
    let (Some(root), Some(gpu)) = (root(), gpuport_testing::gpu()) else {
        return;
    };
    let gpu = Arc::new(gpu);
    let (mut passed, mut refused, mut failed) = (Vec::new(), Vec::new(), Vec::new());
    for name in allowlist() {
        let dir = root.join(&name);
        let m = OnnxModel::open(&dir.join("model.onnx")).unwrap();
        let ins: Vec<String> = m
            .model()
            .graph
            .runtime_inputs()
            .map(|v| v.name.clone())
            .collect();
        let outs = m.model().graph.outputs.clone();
        let g = GpuModel::new(gpu.clone(), m);
        let mut outcome = Ok(());
        'sets: for set in data_sets(&dir) {
            let mut inputs = Vec::new();
            for (i, input) in ins.iter().enumerate() {
                let pb = set.join(format!("input_{i}.pb"));
                if pb.exists() {
                    inputs.push((input.clone(), load(&pb).unwrap()));
                }
            }
            match g.run(&inputs) {
                Ok(got) => {
                    for (i, (o, (_, t))) in outs.iter().zip(&got).enumerate() {
                        let want = load(&set.join(format!("output_{i}.pb"))).unwrap();
                        if let Some(why) = mismatch(t, &want) {
                            outcome = Err(Some(format!("{name}: output `{}`: {why}", o.name)));
                            break 'sets;
                        }
                    }
                }
                Err(e @ (EvalError::Unsupported { .. } | EvalError::Input { .. })) => {
                    outcome = Err(None);
                    refused.push(format!("{name}: {e}"));
                    break;
                }
                Err(e) => {
                    outcome = Err(Some(format!("{name}: {e}")));
                    break;
                }
            }
        }
        match outcome {
            Ok(()) => passed.push(name),
            Err(None) => {}
            Err(Some(why)) => failed.push(why),
        }
    }
    eprintln!(
        "GPU: {} node tests passed, {} refused",
        passed.len(),
        refused.len()
    );
    assert!(
        failed.is_empty(),
        "{} wrong on the GPU:\n{}",
        failed.len(),
        failed.join("\n")
    );
    assert!(
        passed.len() >= 120,
        "only {} node tests ran on the GPU",
        passed.len()
    );
}

fn photo_input(shape: [usize; 4], seed: u64) -> HostTensor {
    let n: usize = shape.iter().product();
    HostTensor::f32(
        shape.to_vec(),
        gpuport_testing::random_f32(n, seed)
            .iter()
            .map(|v| v.abs())
            .collect(),
    )
    .unwrap()
}

fn model_matches_host(file: &str, input: &str, shape: [usize; 4]) {
    let (Some(path), Some(gpu)) = (gpuport_testing::model(file), gpuport_testing::gpu()) else {
        return;
    };
    let m = OnnxModel::open(&path).unwrap();
    let x = photo_input(shape, 7);
    let want = evaluate(&m, &[(input.to_string(), x.clone())]).unwrap();
    let g = GpuModel::new(Arc::new(gpu), m);
    for _ in 0..2 {
        // Twice: the second run reuses the plan.
        let got = g.run(&[(input.to_string(), x.clone())]).unwrap();
        for ((name, a), (_, b)) in got.iter().zip(&want) {
            assert_eq!(a.shape, b.shape, "{name}");
            let worst = a
                .data
                .to_f64()
                .iter()
                .zip(b.data.to_f64())
                .map(|(x, y)| (x - y).abs() / y.abs().max(1.0))
                .fold(0.0, f64::max);
            eprintln!("{file} {name}: GPU within {worst:.2e} of the host evaluator");
            assert!(worst <= 1e-4, "{file} {name}: off by {worst:e}");
        }
    }
}

#[test]
fn efficientnet_lite0_on_the_gpu_matches_the_host() {
    model_matches_host(
        "efficientnet_lite0/onnx-fp32/model.onnx",
        "pixel_values",
        [1, 3, 224, 224],
    );
}

#[test]
fn yolov8n_on_the_gpu_matches_the_host() {
    model_matches_host(
        "nudenet_320n/onnx-fp32/model.onnx",
        "images",
        [1, 3, 320, 320],
    );
}

#[test]
fn malformed_nodes_are_errors_on_the_gpu_not_panics() {
    use gpuport_onnx::Encoder;
    let Some(gpu) = gpuport_testing::gpu() else {
        return;
    };
    let gpu = Arc::new(gpu);
    // x: float [2]; one node of `op` reading only x, with `outputs` outputs.
    let model = |op: &str, outputs: usize| {
        let mut dim = Encoder::new();
        dim.varint(1, 2);
        let mut shape = Encoder::new();
        shape.message(1, &dim);
        let mut tensor = Encoder::new();
        tensor.varint(1, 1).message(2, &shape);
        let mut ty = Encoder::new();
        ty.message(1, &tensor);
        let mut x = Encoder::new();
        x.bytes(1, b"x").message(2, &ty);
        let mut y = Encoder::new();
        y.bytes(1, b"y");
        let mut node = Encoder::new();
        node.bytes(1, b"x").bytes(4, op.as_bytes());
        for _ in 0..outputs {
            node.bytes(2, b"y");
        }
        let mut g = Encoder::new();
        g.message(1, &node).message(11, &x).message(12, &y);
        let mut opset = Encoder::new();
        opset.varint(2, 17);
        let mut m = Encoder::new();
        m.varint(1, 8).message(8, &opset).message(7, &g);
        OnnxModel::parse(m.finish(), None).unwrap()
    };
    let x = [(
        "x".to_string(),
        HostTensor::f32(vec![2], vec![1.0, 2.0]).unwrap(),
    )];
    for (op, outputs) in [("Add", 1), ("Relu", 0), ("Conv", 1), ("MatMul", 1)] {
        let e = GpuModel::new(gpu.clone(), model(op, outputs))
            .run(&x)
            .unwrap_err();
        assert!(e.to_string().contains("inputs and"), "{op}: {e}");
    }
}
