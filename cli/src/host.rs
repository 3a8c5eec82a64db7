//! Facts about this machine that variant selection needs.

use gpuport_manifest_core::modelport::{Runtime, RuntimeSupport};

/// Runtimes this build of gpuport has executors for. It grows as executors land: the GGUF LLM
/// executor serves `llamacpp`, the ONNX graph executor serves `onnx`; `executorch` has none, so
/// selection skips to the next variant as the spec says.
pub const EXECUTORS: &[Runtime] = &[Runtime::Llamacpp];

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

/// Total RAM of this machine in MiB, when the OS tells it (Linux `/proc/meminfo`). Read by hand:
/// one line of one file does not justify a system-information dependency.
pub fn ram_mb() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024)
}
