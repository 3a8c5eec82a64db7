//! The GPU a test runs on, and what it needs of it — in the spirit of wgpu's `TestParameters`:
//! a test declares its needs ([`Needs`]) and [`gpu_with`] gives it an adapter that meets them.
//! Without an adapter, or with one that lacks a need, the test prints `SKIPPED: needs …` and
//! passes — unless `GPUPORT_REQUIRE_GPU=1` (set by `.ci/run`, which installs Mesa's lavapipe),
//! which declares that this machine runs every GPU test, so a missing adapter or an unmet need
//! is a failure instead of a silent skip.
//!
//! Needs that only decide *which variants* a test covers (subgroup kernels beside the shared
//! memory ones) are asked with [`has_subgroups`]: the rest of the test still runs.

use gpuport_runtime::{Gpu, GpuOptions};

/// What a test needs of the adapter.
#[derive(Debug, Clone, Default)]
pub struct Needs {
    features: wgpu::Features,
    subgroups: bool,
    timestamps: bool,
    storage_binding: u64,
    f32_products: bool,
}

impl Needs {
    /// Nothing beyond an adapter.
    pub fn none() -> Needs {
        Needs::default()
    }

    /// These wgpu features.
    pub fn features(mut self, features: wgpu::Features) -> Needs {
        self.features |= features;
        self
    }

    /// Subgroup operations (as the runtime enables them).
    pub fn subgroups(mut self) -> Needs {
        self.subgroups = true;
        self
    }

    /// GPU timestamps inside passes.
    pub fn timestamps(mut self) -> Needs {
        self.timestamps = true;
        self
    }

    /// Every product in f32: the device opened without its tensor-core paths
    /// (`GpuOptions::tensor_cores` off), for tests that hold a batched sequence to its solo
    /// run draw for draw (on adapters without tensor cores this changes nothing).
    pub fn f32_products(mut self) -> Needs {
        self.f32_products = true;
        self
    }

    /// A storage binding of at least `bytes`.
    pub fn storage_binding(mut self, bytes: u64) -> Needs {
        self.storage_binding = self.storage_binding.max(bytes);
        self
    }

    /// The needs `gpu` does not meet, named (empty when it meets them all).
    pub fn unmet(&self, gpu: &Gpu) -> Vec<String> {
        let mut out = Vec::new();
        let missing = self.features - gpu.features();
        if !missing.is_empty() {
            out.push(format!("features {missing:?}"));
        }
        if self.subgroups && !gpu.has_subgroups() {
            out.push("subgroups".into());
        }
        if self.timestamps && !gpu.has_timestamps() {
            out.push("timestamps inside passes".into());
        }
        let binding = gpu.limits().max_storage_buffer_binding_size;
        if self.storage_binding > binding {
            out.push(format!(
                "a {} byte storage binding (the adapter allows {binding})",
                self.storage_binding
            ));
        }
        out
    }
}

fn gpu_required() -> bool {
    std::env::var_os("GPUPORT_REQUIRE_GPU").is_some()
}

/// An adapter that meets `needs`, or `None` after saying `SKIPPED` and why (a failure under
/// `GPUPORT_REQUIRE_GPU=1`).
pub fn gpu_with(needs: &Needs) -> Option<Gpu> {
    // Tests keep compiled pipelines in the system's temporary folder, not the user's cache.
    let options = GpuOptions {
        pipeline_cache: Some(std::env::temp_dir().join("gpuport-test-pipelines")),
        tensor_cores: needs.f32_products.then_some(false),
        ..GpuOptions::default()
    };
    let gpu = match Gpu::new(&options) {
        Ok(g) => g,
        Err(e) => {
            assert!(!gpu_required(), "GPUPORT_REQUIRE_GPU is set but: {e}");
            eprintln!("SKIPPED: needs a GPU adapter ({e})");
            return None;
        }
    };
    let unmet = needs.unmet(&gpu);
    if unmet.is_empty() {
        return Some(gpu);
    }
    let what = format!("{}, which {} lacks", unmet.join(", "), gpu.info().name);
    assert!(
        !gpu_required(),
        "GPUPORT_REQUIRE_GPU is set but: needs {what}"
    );
    eprintln!("SKIPPED: needs {what}");
    None
}

/// Any adapter ([`gpu_with`] with [`Needs::none`]).
pub fn gpu() -> Option<Gpu> {
    gpu_with(&Needs::none())
}

/// Whether `gpu` has subgroups; says `SKIPPED` for the subgroup variants when not.
pub fn has_subgroups(gpu: &Gpu) -> bool {
    if !gpu.has_subgroups() {
        eprintln!(
            "SKIPPED (subgroup variants): needs subgroups, which {} lacks",
            gpu.info().name
        );
    }
    gpu.has_subgroups()
}

/// Whether `gpu` runs the tensor-core GEMM ([`Gpu::has_coop_f16`]); says `SKIPPED` for its
/// cases when not (lavapipe has no cooperative matrices: those cases run on GPUs that do, by
/// the command in docs/performance.md).
pub fn has_coop_f16(gpu: &Gpu) -> bool {
    if !gpu.has_coop_f16() {
        eprintln!(
            "SKIPPED (tensor-core GEMM cases): needs 16 x 16 f16 cooperative matrices on \
             32-lane subgroups, which {} lacks",
            gpu.info().name
        );
    }
    gpu.has_coop_f16()
}

/// A 4-byte tensor read back as its words (packed int8 blocks, or f32 values compared bit for
/// bit). Panics on a failed readback: tests only.
pub fn readback_words(gpu: &Gpu, t: &gpuport_runtime::Tensor) -> Vec<u32> {
    let bytes = gpu.readback(t).expect("readback");
    bytes
        .chunks_exact(4)
        .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        .collect()
}
