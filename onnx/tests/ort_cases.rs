//! Cases the backend node tests lack but the vision models need — a depthwise 5×5 stride-2
//! convolution with SAME_UPPER (odd total padding), a `[0, 0, 1, 1]` stem pad, Softmax on axis 1
//! of a 4-D tensor, Resize 2× asymmetric/floor from a `scales` initializer, Cast int64 → f32,
//! 1×1 convolutions off the GPU GEMM's tile sizes with a batch of 3 and ReLU6 or SiLU fused, a
//! 3×3 convolution whose K the GPU splits across workgroups, a dilated depthwise convolution
//! with ragged pads and a batch —
//! built by `tools/onnx_cases.py` and checked against onnxruntime's outputs, on the host and on
//! the GPU (which refuses the int64 input rather than guessing).

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use gpuport_onnx::gpu::GpuModel;
use gpuport_onnx::{EvalError, OnnxModel, evaluate, npy};
use gpuport_testing::onnx_node::mismatch;

#[test]
fn cases_match_onnxruntime_on_host_and_gpu() {
    if !gpuport_testing::python_modules_available(&["onnx", "onnxruntime", "numpy"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    gpuport_testing::python_tool("onnx_cases.py", &[dir.path().as_os_str()]);
    let gpu = gpuport_testing::gpu().map(Arc::new);
    let mut cases: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    cases.sort();
    assert_eq!(cases.len(), 9);
    for case in cases {
        let name = case.file_name().unwrap().to_string_lossy().to_string();
        let m = OnnxModel::open(&case.join("model.onnx")).unwrap();
        let input = m
            .model()
            .graph
            .runtime_inputs()
            .next()
            .unwrap()
            .name
            .clone();
        let inputs = [(input, npy::read(&case.join("input_0.npy")).unwrap())];
        let want = npy::read(&case.join("output_0.npy")).unwrap();
        let host = evaluate(&m, &inputs).unwrap();
        assert_eq!(mismatch(&host[0].1, &want), None, "{name} on the host");
        let Some(gpu) = &gpu else { continue };
        match GpuModel::new(gpu.clone(), m).run(&inputs) {
            Ok(out) => assert_eq!(mismatch(&out[0].1, &want), None, "{name} on the GPU"),
            Err(EvalError::Input { what, .. }) if name.starts_with("cast_int64") => {
                assert!(what.contains("FLOAT"), "{what}");
            }
            Err(e) => panic!("{name} on the GPU: {e}"),
        }
    }
}
