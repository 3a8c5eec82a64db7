//! Facts about this machine that variant selection needs.

use gpuport_manifest_core::modelport::{Runtime, RuntimeSupport};

/// Runtimes this build of gpuport has executors for. It grows as executors land: the GGUF LLM
/// executor serves `llamacpp`, the ONNX graph executor serves `onnx`; `executorch` has none, so
/// selection skips to the next variant as the spec says.
pub const EXECUTORS: &[Runtime] = &[Runtime::Llamacpp, Runtime::Onnx];

/// The registered runtimes: `overrides` when given, else [`EXECUTORS`].
pub fn registered(overrides: &[Runtime]) -> Vec<RuntimeSupport> {
    let list = if overrides.is_empty() {
        EXECUTORS
    } else {
        overrides
    };
    list.iter()
        .copied()
        .map(RuntimeSupport::any_backend)
        .collect()
}

/// Total RAM of this machine in MiB, when the OS tells it.
pub fn ram_mb() -> Option<u64> {
    gpuport_llm::loader::host_ram_mb()
}
