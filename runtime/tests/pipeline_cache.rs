//! Compiled pipelines on disk: a second device on the same adapter starts from the first one's
//! file, and a damaged file is ignored and rewritten. Needs an adapter whose backend keeps a
//! pipeline cache for the application (Vulkan: lavapipe here, NVIDIA); SKIPPED elsewhere.

use gpuport_kernels::rowops;
use gpuport_runtime::{Gpu, GpuOptions};

fn open(dir: &std::path::Path) -> Option<Gpu> {
    let options = GpuOptions {
        pipeline_cache: Some(dir.to_path_buf()),
        ..GpuOptions::default()
    };
    match Gpu::new(&options) {
        Ok(g) if g.disk_pipelines().is_some() => Some(g),
        Ok(g) => {
            // Not under GPUPORT_REQUIRE_GPU either: lavapipe has one, other CPU adapters
            // (and non-Vulkan backends) need not.
            eprintln!(
                "SKIPPED: needs a backend with a pipeline cache ({})",
                g.info().name
            );
            None
        }
        Err(e) => {
            assert!(
                std::env::var_os("GPUPORT_REQUIRE_GPU").is_none(),
                "GPUPORT_REQUIRE_GPU is set but: {e}"
            );
            eprintln!("SKIPPED: needs a GPU adapter ({e})");
            None
        }
    }
}

#[test]
fn a_second_device_starts_from_the_first_ones_pipelines() {
    let dir = tempfile::tempdir().unwrap();
    let Some(gpu) = open(dir.path()) else { return };
    let spec = rowops::argmax_spec(256, 0);
    gpu.pipeline(&spec).unwrap();
    let written = gpu.save_pipelines().unwrap();
    assert!(written > 0, "the driver's data for one pipeline");
    let path = gpu.disk_pipelines().unwrap().path().to_path_buf();
    assert!(path.starts_with(dir.path()), "{}", path.display());
    // Nothing new since: nothing written.
    assert_eq!(gpu.save_pipelines().unwrap(), 0);
    drop(gpu);

    // A second device reads it, compiles the same pipeline from it, and leaves the file alone.
    let again = open(dir.path()).unwrap();
    assert!(again.disk_pipelines().unwrap().loaded_bytes() > 0);
    let before = std::fs::read(&path).unwrap();
    again.pipeline(&spec).unwrap();
    again.save_pipelines().unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), before);
    drop(again);

    // A damaged file: ignored (no bytes loaded), and the next save replaces it.
    let mut bad = before.clone();
    let last = bad.len() - 1;
    bad[last] ^= 0x5a;
    std::fs::write(&path, &bad).unwrap();
    let third = open(dir.path()).unwrap();
    assert_eq!(third.disk_pipelines().unwrap().loaded_bytes(), 0);
    third.pipeline(&spec).unwrap();
    assert!(third.save_pipelines().unwrap() > 0);
    drop(third);
    assert_ne!(std::fs::read(&path).unwrap(), bad);
}
