//! naga validation of a kernel variant: parse, validate, apply the override constants, and
//! translate to SPIR-V and MSL — proof the WGSL is well-formed and portable before any adapter
//! sees it.

use naga::ShaderStage;
use naga::valid::{Capabilities, ModuleInfo, ValidationFlags, Validator};

use crate::kernel::KernelSpec;

/// A variant that naga rejects, with the stage that failed.
#[derive(Debug, thiserror::Error)]
pub enum ShaderError {
    /// The WGSL does not parse.
    #[error("{label}: WGSL parse error: {message}")]
    Parse {
        /// Variant label.
        label: String,
        /// naga's message with source location.
        message: String,
    },
    /// Validation, override processing or a backend failed.
    #[error("{label}: {stage}: {message}")]
    Invalid {
        /// Variant label.
        label: String,
        /// `validate`, `overrides`, `spirv` or `msl`.
        stage: &'static str,
        /// naga's message.
        message: String,
    },
}

/// The capabilities a variant may use: `unpack2x16float` (f16 weights and scales read as f32,
/// wgpu's downlevel flag `SHADER_F16_IN_F32`, present on Vulkan, Metal and DX12), plus
/// subgroup operations for subgroup variants, f16 values where [`KernelSpec::needs_f16`], and
/// cooperative matrices for the tensor-core kernels (the GEMM and prompt attention).
pub fn capabilities(spec: &KernelSpec) -> Capabilities {
    let mut caps = Capabilities::SHADER_FLOAT16_IN_FLOAT32;
    if spec.needs_subgroups() {
        caps |= Capabilities::SUBGROUP;
    }
    if spec.needs_f16() {
        caps |= Capabilities::SHADER_FLOAT16;
    }
    if spec.needs_cooperative_matrix() {
        caps |= Capabilities::COOPERATIVE_MATRIX;
    }
    caps
}

/// Validates `spec` and translates it with its constants applied to SPIR-V and MSL. Returns the
/// SPIR-V word count and the MSL length (proof both backends produced output).
pub fn validate(spec: &KernelSpec) -> Result<(usize, usize), ShaderError> {
    Validated::new(spec)?.translate(spec)
}

/// One WGSL source parsed and validated, for translating every variant that differs from it
/// only in override constants (most variants: parsing and validating again per variant would
/// dominate the time).
pub struct Validated {
    source: String,
    module: naga::Module,
    info: ModuleInfo,
}

impl Validated {
    /// Parses and validates the source of `spec`.
    pub fn new(spec: &KernelSpec) -> Result<Validated, ShaderError> {
        let label = spec.label();
        let source = spec.wgsl();
        let module = naga::front::wgsl::parse_str(&source).map_err(|e| ShaderError::Parse {
            label: label.clone(),
            message: e.emit_to_string(&source),
        })?;
        let info: ModuleInfo = Validator::new(ValidationFlags::all(), capabilities(spec))
            .validate(&module)
            .map_err(|e| ShaderError::Invalid {
                label,
                stage: "validate",
                message: format!("{:?}", e.into_inner()),
            })?;
        Ok(Validated {
            source,
            module,
            info,
        })
    }

    /// Whether `spec` has this source (so [`Validated::translate`] applies to it).
    pub fn matches(&self, spec: &KernelSpec) -> bool {
        self.source == spec.wgsl()
    }

    /// Applies the constants of `spec` (which must have this source) and translates the
    /// result to SPIR-V and MSL: the SPIR-V word count and the MSL length.
    pub fn translate(&self, spec: &KernelSpec) -> Result<(usize, usize), ShaderError> {
        let (module, info) = self.specialize(spec)?;
        let spv_options = naga::back::spv::Options {
            lang_version: (1, 3),
            ..Default::default()
        };
        let words = write_spirv(spec, &module, &info, &spv_options)?;
        // naga's Metal backend has simdgroup matrices of 8 × 8 only; the 16 × 16 tensor-core
        // GEMM is a Vulkan kernel.
        if spec.needs_cooperative_matrix() {
            return Ok((words.len(), 0));
        }
        let msl_options = naga::back::msl::Options {
            lang_version: (2, 4),
            ..Default::default()
        };
        let msl_pipeline = naga::back::msl::PipelineOptions {
            entry_point: Some((ShaderStage::Compute, spec.entry().to_owned())),
            ..Default::default()
        };
        let (msl, _) = naga::back::msl::write_string(&module, &info, &msl_options, &msl_pipeline)
            .map_err(|e| invalid(spec, "msl", e.to_string()))?;
        Ok((words.len(), msl.len()))
    }

    /// The module with the constants of `spec` (which must have this source) applied.
    fn specialize(&self, spec: &KernelSpec) -> Result<(naga::Module, ModuleInfo), ShaderError> {
        let mut constants = naga::back::PipelineConstants::default();
        for (name, value) in &spec.constants {
            constants.insert((*name).to_owned(), f64::from(*value));
        }
        let (module, info) = naga::back::pipeline_constants::process_overrides(
            &self.module,
            &self.info,
            Some((ShaderStage::Compute, spec.entry())),
            &constants,
        )
        .map_err(|e| invalid(spec, "overrides", e.to_string()))?;
        Ok((module.into_owned(), info.into_owned()))
    }
}

fn invalid(spec: &KernelSpec, stage: &'static str, message: String) -> ShaderError {
    ShaderError::Invalid {
        label: spec.label(),
        stage,
        message,
    }
}

/// The specialized module of `spec` as SPIR-V words.
fn write_spirv(
    spec: &KernelSpec,
    module: &naga::Module,
    info: &ModuleInfo,
    options: &naga::back::spv::Options<'_>,
) -> Result<Vec<u32>, ShaderError> {
    let pipeline = naga::back::spv::PipelineOptions {
        shader_stage: ShaderStage::Compute,
        entry_point: spec.entry().to_owned(),
    };
    naga::back::spv::write_vec(module, info, options, Some(&pipeline))
        .map_err(|e| invalid(spec, "spirv", e.to_string()))
}

/// A storage or uniform buffer binding of group 0 of a compiled variant ([`Validated::spirv`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BufferBinding {
    /// The binding number.
    pub binding: u32,
    /// A uniform buffer (else a storage buffer).
    pub uniform: bool,
}

impl Validated {
    /// `spec` (which must have this source) compiled to SPIR-V as the runtime has wgpu
    /// compile it for a Vulkan 1.3 device (`runtime/src/pipeline.rs`; SPIR-V 1.6): constants
    /// applied, no index clamps, naga's loop bounding as `loop_bounding` says (the runtime's
    /// choice for the variant: [`KernelSpec::loop_bounding`] unless overridden), workgroup
    /// memory not zeroed. With the buffer bindings of group 0, for a tool that builds the
    /// pipeline itself (`cargo xtask kernel-stats`: what a Vulkan driver made of a variant).
    pub fn spirv(
        &self,
        spec: &KernelSpec,
        loop_bounding: bool,
    ) -> Result<(Vec<u32>, Vec<BufferBinding>), ShaderError> {
        let (module, info) = self.specialize(spec)?;
        let options = naga::back::spv::Options {
            // wgpu's for a Vulkan 1.3 device (the highest that version takes).
            lang_version: (1, 6),
            flags: naga::back::spv::WriterFlags::empty(),
            bounds_check_policies: naga::proc::BoundsCheckPolicies::default(),
            zero_initialize_workgroup_memory:
                naga::back::spv::ZeroInitializeWorkgroupMemoryMode::None,
            force_loop_bounding: loop_bounding,
            ..Default::default()
        };
        let words = write_spirv(spec, &module, &info, &options)?;
        let bindings = module
            .global_variables
            .iter()
            .filter_map(|(_, var)| {
                let b = var.binding.as_ref().filter(|b| b.group == 0)?;
                match var.space {
                    naga::AddressSpace::Uniform => Some(BufferBinding {
                        binding: b.binding,
                        uniform: true,
                    }),
                    naga::AddressSpace::Storage { .. } => Some(BufferBinding {
                        binding: b.binding,
                        uniform: false,
                    }),
                    _ => None,
                }
            })
            .collect();
        Ok((words, bindings))
    }
}
