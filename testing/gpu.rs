//! GPU test harness: a test states what it needs; without an adapter (or the feature) it says
//! `SKIPPED` and why, unless `GPUPORT_REQUIRE_GPU=1` (set by `.ci/run`, which installs Mesa's
//! lavapipe), where a missing adapter is a failure.

use gpuport_runtime::{Gpu, GpuOptions};

pub fn gpu() -> Option<Gpu> {
    match Gpu::new(&GpuOptions::default()) {
        Ok(g) => Some(g),
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

/// Whether `gpu` has subgroups; says SKIPPED for the subgroup part when not.
pub fn has_subgroups(gpu: &Gpu) -> bool {
    if !gpu.has_subgroups() {
        eprintln!(
            "SKIPPED (subgroup variants): needs SUBGROUP, which {} lacks",
            gpu.info().name
        );
    }
    gpu.has_subgroups()
}

/// Deterministic f32 values in [-1, 1).
pub fn random_f32(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}
