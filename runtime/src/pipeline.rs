//! Compiled pipelines, one per kernel variant, created once per device. The key is the full
//! [`KernelSpec`] (family, weight type, reduction, constants); the device fixes the features.

use std::collections::HashMap;
use std::sync::Arc;

use gpuport_kernels::KernelSpec;
use parking_lot::Mutex;

use crate::device::Gpu;
use crate::error::GpuError;

/// A compute pipeline and the layout of its bind group 0.
pub struct Pipeline {
    /// The pipeline.
    pub pipeline: wgpu::ComputePipeline,
    /// Layout of bind group 0 (derived from the bindings the entry point uses).
    pub layout: wgpu::BindGroupLayout,
    /// The variant's label.
    pub label: String,
}

/// Pipelines by kernel variant.
#[derive(Default)]
pub struct PipelineCache {
    pipelines: Mutex<HashMap<KernelSpec, Arc<Pipeline>>>,
}

impl PipelineCache {
    /// How many pipelines are cached.
    pub fn len(&self) -> usize {
        self.pipelines.lock().len()
    }

    /// Whether none is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Gpu {
    /// The pipeline for `spec`, compiled on first use. Subgroup variants need the SUBGROUP
    /// feature; compilation errors come back typed, never as a panic.
    pub fn pipeline(&self, spec: &KernelSpec) -> Result<Arc<Pipeline>, GpuError> {
        if let Some(p) = self.pipelines.pipelines.lock().get(spec) {
            return Ok(p.clone());
        }
        if spec.needs_subgroups() && !self.has_subgroups() {
            return Err(GpuError::MissingFeature(
                "subgroups (needed by a subgroup-reduction kernel)",
            ));
        }
        if spec.needs_cooperative_matrix() && !self.has_coop_f16() {
            return Err(GpuError::MissingFeature(
                "16 × 16 f16 cooperative matrices on 32-lane subgroups (the tensor-core GEMM)",
            ));
        }
        let label = spec.label();
        let wgsl = spec.wgsl();
        let constants: Vec<(&str, f64)> = spec
            .constants
            .iter()
            .map(|(k, v)| (*k, f64::from(*v)))
            .collect();
        let checked = std::env::var_os("GPUPORT_SHADER_CHECKS").is_some();
        if std::env::var_os("GPUPORT_TRACE_PIPELINES").is_some() {
            eprintln!("compiling {label}");
        }
        let pipeline = self.scoped(&format!("compiling {label}"), || {
            let descriptor = wgpu::ShaderModuleDescriptor {
                label: Some(&label),
                source: wgpu::ShaderSource::Wgsl(wgsl.into()),
            };
            let module = if checked {
                self.device.create_shader_module(descriptor)
            } else {
                // naga otherwise clamps every dynamic index, which lands in the innermost loop of
                // each bandwidth-bound kernel. Only index clamps are dropped: with loop bounding
                // off as well, NVIDIA's 580 driver compiler crashed (segfault in
                // libnvidia-gpucomp) on some GEMV variants.
                // Families whose inner loops the driver should unroll
                // (`KernelSpec::unrolled_loops`) also drop loop bounding: its counter keeps a
                // loop from having a known trip count.
                // SAFETY: every kernel of gpuport-kernels indexes only inside ranges the `ops`
                // functions check before dispatch (bindings cover rows x row bytes, x covers the
                // columns, y the rows; loops are bounded by uniform counts or constants). Set
                // GPUPORT_SHADER_CHECKS=1 to compile with checks when debugging a kernel, or
                // GPUPORT_LOOP_BOUNDING=1 to keep loop bounding everywhere.
                #[allow(unsafe_code)]
                unsafe {
                    let bounded = !spec.unrolled_loops()
                        || std::env::var_os("GPUPORT_LOOP_BOUNDING").is_some();
                    let checks = wgpu::ShaderRuntimeChecks {
                        bounds_checks: false,
                        force_loop_bounding: bounded,
                        ..wgpu::ShaderRuntimeChecks::checked()
                    };
                    self.device.create_shader_module_trusted(descriptor, checks)
                }
            };
            self.device
                .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(&label),
                    layout: None,
                    module: &module,
                    entry_point: Some(spec.entry()),
                    compilation_options: wgpu::PipelineCompilationOptions {
                        constants: &constants,
                        zero_initialize_workgroup_memory: false,
                    },
                    cache: None,
                })
        })?;
        let layout = pipeline.get_bind_group_layout(0);
        let p = Arc::new(Pipeline {
            pipeline,
            layout,
            label,
        });
        self.pipelines
            .pipelines
            .lock()
            .insert(spec.clone(), p.clone());
        Ok(p)
    }
}
