//! `cargo xtask kernel-stats`: what the Vulkan driver made of kernel variants — the statistics
//! and internal representations a driver reports through `VK_KHR_pipeline_executable_properties`
//! (NVIDIA: registers, shared and local memory; Mesa: instruction counts, spills, NIR). It
//! answers the questions timing alone cannot: whether a variant spills, how many registers its
//! accumulators cost, what a change did to the code.
//!
//! wgpu has no way to ask for these, so this opens its own Vulkan device (ash, the bindings
//! wgpu's Vulkan backend uses), with every feature the adapter has, and builds each variant's
//! pipeline from the SPIR-V wgpu would build it from
//! (`gpuport_kernels::validate::Validated::spirv`).

// Raw Vulkan calls: each `unsafe` block below passes handles this function created and owns,
// with create-info structures that outlive the call.
#![allow(unsafe_code)]

use std::ffi::CStr;
use std::path::PathBuf;

use anyhow::{Context, bail};
use ash::vk;
use gpuport_kernels::{KernelSpec, all_specs, validate};

/// Options of `cargo xtask kernel-stats`.
pub struct Options {
    /// Variants whose label contains every one of these (all when empty).
    pub filters: Vec<String>,
    /// Physical devices whose name contains this (the first with the extension when `None`).
    pub adapter: Option<String>,
    /// Where to write each variant's internal representations (not written when `None`).
    pub out: Option<PathBuf>,
}

pub fn run(opts: Options) -> anyhow::Result<()> {
    let specs: Vec<KernelSpec> = all_specs()
        .into_iter()
        .filter(|s| {
            let label = s.label();
            opts.filters.iter().all(|f| label.contains(f.as_str()))
        })
        .collect();
    if specs.is_empty() {
        bail!(
            "no kernel variant's label contains all of {:?}",
            opts.filters
        );
    }
    if let Some(dir) = &opts.out {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let vk = Vulkan::open(opts.adapter.as_deref())?;
    println!("device: {}", vk.name);
    // Variants come grouped by source: parse and validate each source once.
    let mut current: Option<validate::Validated> = None;
    for spec in &specs {
        let label = spec.label();
        if spec.needs_cooperative_matrix() && !vk.coop {
            println!("{label}: skipped (no VK_KHR_cooperative_matrix)");
            continue;
        }
        let validated = match current.take() {
            Some(v) if v.matches(spec) => current.insert(v),
            _ => current.insert(validate::Validated::new(spec)?),
        };
        let (words, bindings) =
            validated.spirv(spec, gpuport_runtime::pipeline::loop_bounding(spec))?;
        let report = vk
            .report(&words, &bindings)
            .with_context(|| format!("building {label}"))?;
        println!("{label}{}", if report.is_empty() { ": built" } else { "" });
        for exe in &report {
            let stats: Vec<String> = exe
                .stats
                .iter()
                .map(|(name, value)| format!("{name}={value}"))
                .collect();
            println!(
                "  {} (subgroup {}): {}",
                exe.name,
                exe.subgroup_size,
                stats.join(", ")
            );
            if let Some(dir) = &opts.out {
                for (i, (name, text)) in exe.representations.iter().enumerate() {
                    let file = dir.join(format!("{label}.{}.{i}.txt", exe.index));
                    std::fs::write(&file, format!("// {name}\n{text}"))
                        .with_context(|| format!("writing {}", file.display()))?;
                }
            }
        }
    }
    Ok(())
}

/// One executable of a pipeline (a compute pipeline has one on most drivers).
struct Executable {
    index: u32,
    name: String,
    subgroup_size: u32,
    stats: Vec<(String, String)>,
    representations: Vec<(String, String)>,
}

struct Vulkan {
    _entry: ash::Entry,
    instance: ash::Instance,
    device: ash::Device,
    /// The statistics extension, where the device has it.
    exe: Option<ash::khr::pipeline_executable_properties::Device>,
    name: String,
    /// Whether the device has cooperative matrices (the tensor-core variants need them).
    coop: bool,
    /// Stages created with ALLOW_VARYING_SUBGROUP_SIZE, as wgpu does with subgroups on.
    varying_subgroups: bool,
}

impl Drop for Vulkan {
    fn drop(&mut self) {
        // SAFETY: no object created from the device outlives `report`.
        unsafe {
            self.device.destroy_device(None);
            self.instance.destroy_instance(None);
        }
    }
}

fn c_text(chars: &[std::ffi::c_char]) -> String {
    // SAFETY: Vulkan's fixed-size name and description arrays are NUL-terminated.
    unsafe { CStr::from_ptr(chars.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

impl Vulkan {
    fn open(adapter: Option<&str>) -> anyhow::Result<Vulkan> {
        // SAFETY: loads the system's Vulkan loader, as wgpu does.
        let entry = unsafe { ash::Entry::load() }.context("loading the Vulkan loader")?;
        let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_3);
        // SAFETY: `app` outlives the call.
        let instance = unsafe {
            entry.create_instance(
                &vk::InstanceCreateInfo::default().application_info(&app),
                None,
            )
        }
        .context("creating a Vulkan instance")?;
        let wanted = ash::khr::pipeline_executable_properties::NAME;
        let coop = ash::khr::cooperative_matrix::NAME;
        let robust2 = ash::ext::robustness2::NAME;
        // SAFETY: `instance` is live.
        let devices = unsafe { instance.enumerate_physical_devices() }?;
        // The first device (of the name asked for) with the extension; else the first of Vulkan
        // 1.3, where the pipelines are built without statistics (proof the driver takes them).
        let mut chosen = None;
        let mut fallback = None;
        for pd in devices {
            // SAFETY: `pd` comes from `instance`.
            let (props, exts) = unsafe {
                (
                    instance.get_physical_device_properties(pd),
                    instance.enumerate_device_extension_properties(pd)?,
                )
            };
            let name = c_text(&props.device_name);
            let has = |n: &CStr| {
                exts.iter()
                    .any(|e| c_text(&e.extension_name) == n.to_string_lossy())
            };
            let listed = adapter.is_none_or(|a| name.contains(a));
            let v13 = props.api_version >= vk::API_VERSION_1_3;
            let listed_exts = (has(coop), has(robust2));
            if listed && v13 && has(wanted) {
                chosen = Some((pd, name, listed_exts, true));
                break;
            }
            if listed && v13 && fallback.is_none() {
                fallback = Some((pd, name.clone(), listed_exts, false));
            }
            let api = format!(
                "{}.{}",
                vk::api_version_major(props.api_version),
                vk::api_version_minor(props.api_version)
            );
            eprintln!(
                "skipping {name} (Vulkan {api}, pipeline executable properties: {}){}",
                if has(wanted) { "yes" } else { "no" },
                if listed {
                    ""
                } else {
                    ", not the named adapter"
                }
            );
        }
        let Some((pd, name, (has_coop, has_robust2), has_stats)) = chosen.or(fallback) else {
            // SAFETY: nothing was created from the instance.
            unsafe { instance.destroy_instance(None) };
            bail!(
                "no Vulkan 1.3 device{}",
                adapter.map(|a| format!(" named {a}")).unwrap_or_default()
            );
        };
        // Every feature the device has (the SPIR-V may use f16, 16-bit storage, subgroups,
        // cooperative matrices), with robustness as wgpu sets it: robustBufferAccess and
        // robustBufferAccess2 where the device has them (they change the code a driver
        // emits), no robust access for cooperative matrices.
        let mut f11 = vk::PhysicalDeviceVulkan11Features::default();
        let mut f12 = vk::PhysicalDeviceVulkan12Features::default();
        let mut f13 = vk::PhysicalDeviceVulkan13Features::default();
        let mut fexe = vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default();
        let mut fcoop = vk::PhysicalDeviceCooperativeMatrixFeaturesKHR::default();
        let mut frobust2 = vk::PhysicalDeviceRobustness2FeaturesEXT::default();
        let core = {
            let mut query = vk::PhysicalDeviceFeatures2::default()
                .push_next(&mut f11)
                .push_next(&mut f12)
                .push_next(&mut f13);
            if has_stats {
                query = query.push_next(&mut fexe);
            }
            if has_coop {
                query = query.push_next(&mut fcoop);
            }
            if has_robust2 {
                query = query.push_next(&mut frobust2);
            }
            // SAFETY: the chain's structures are live and of the device's API version.
            unsafe { instance.get_physical_device_features2(pd, &mut query) };
            query.features
        };
        // The query linked the structures to one another: unlink them before the device's
        // chain links them again.
        f11.p_next = std::ptr::null_mut();
        f12.p_next = std::ptr::null_mut();
        f13.p_next = std::ptr::null_mut();
        fexe.p_next = std::ptr::null_mut();
        fcoop.p_next = std::ptr::null_mut();
        frobust2.p_next = std::ptr::null_mut();
        // An extension listed but its feature off is no use.
        let stats = has_stats && fexe.pipeline_executable_info == vk::TRUE;
        let coop_on = has_coop && fcoop.cooperative_matrix == vk::TRUE;
        fcoop.cooperative_matrix_robust_buffer_access = vk::FALSE;
        frobust2.null_descriptor = vk::FALSE;
        let varying_subgroups = f13.subgroup_size_control == vk::TRUE;
        if !stats {
            eprintln!("{name} reports no statistics: building the pipelines only");
        }
        let priorities = [1.0f32];
        // SAFETY: `pd` comes from `instance`.
        let queues = unsafe { instance.get_physical_device_queue_family_properties(pd) };
        let family = queues
            .iter()
            .position(|q| q.queue_flags.contains(vk::QueueFlags::COMPUTE))
            .context("no compute queue")? as u32;
        let queue = [vk::DeviceQueueCreateInfo::default()
            .queue_family_index(family)
            .queue_priorities(&priorities)];
        // Extensions whose feature structures are in the chain.
        let mut ext_names = Vec::new();
        if has_stats {
            ext_names.push(wanted.as_ptr());
        }
        if has_coop {
            ext_names.push(coop.as_ptr());
        }
        if has_robust2 {
            ext_names.push(robust2.as_ptr());
        }
        let mut features = vk::PhysicalDeviceFeatures2::default()
            .features(core)
            .push_next(&mut f11)
            .push_next(&mut f12)
            .push_next(&mut f13);
        if has_stats {
            features = features.push_next(&mut fexe);
        }
        if has_coop {
            features = features.push_next(&mut fcoop);
        }
        if has_robust2 {
            features = features.push_next(&mut frobust2);
        }
        let info = vk::DeviceCreateInfo::default()
            .queue_create_infos(&queue)
            .enabled_extension_names(&ext_names)
            .push_next(&mut features);
        // SAFETY: every structure in `info` outlives the call.
        let device = unsafe { instance.create_device(pd, &info, None) }
            .context("creating the Vulkan device")?;
        let exe = stats
            .then(|| ash::khr::pipeline_executable_properties::Device::new(&instance, &device));
        Ok(Vulkan {
            _entry: entry,
            instance,
            device,
            exe,
            name,
            coop: coop_on,
            varying_subgroups,
        })
    }

    /// Builds a compute pipeline from `words` with statistics and internal representations
    /// captured, and reads them.
    fn report(
        &self,
        words: &[u32],
        bindings: &[validate::BufferBinding],
    ) -> anyhow::Result<Vec<Executable>> {
        let d = &self.device;
        let layout_bindings: Vec<vk::DescriptorSetLayoutBinding> = bindings
            .iter()
            .map(|b| {
                vk::DescriptorSetLayoutBinding::default()
                    .binding(b.binding)
                    .descriptor_type(if b.uniform {
                        vk::DescriptorType::UNIFORM_BUFFER
                    } else {
                        vk::DescriptorType::STORAGE_BUFFER
                    })
                    .descriptor_count(1)
                    .stage_flags(vk::ShaderStageFlags::COMPUTE)
            })
            .collect();
        // SAFETY: each object is created from `d`, used only here and destroyed below.
        unsafe {
            let set = d.create_descriptor_set_layout(
                &vk::DescriptorSetLayoutCreateInfo::default().bindings(&layout_bindings),
                None,
            )?;
            let sets = [set];
            let layout = match d.create_pipeline_layout(
                &vk::PipelineLayoutCreateInfo::default().set_layouts(&sets),
                None,
            ) {
                Ok(layout) => layout,
                Err(e) => {
                    d.destroy_descriptor_set_layout(set, None);
                    return Err(e.into());
                }
            };
            let module = match d
                .create_shader_module(&vk::ShaderModuleCreateInfo::default().code(words), None)
            {
                Ok(module) => module,
                Err(e) => {
                    d.destroy_pipeline_layout(layout, None);
                    d.destroy_descriptor_set_layout(set, None);
                    return Err(e.into());
                }
            };
            let stage_flags = if self.varying_subgroups {
                vk::PipelineShaderStageCreateFlags::ALLOW_VARYING_SUBGROUP_SIZE
            } else {
                vk::PipelineShaderStageCreateFlags::empty()
            };
            let stage = vk::PipelineShaderStageCreateInfo::default()
                .flags(stage_flags)
                .stage(vk::ShaderStageFlags::COMPUTE)
                .module(module)
                .name(c"main");
            let flags = if self.exe.is_some() {
                vk::PipelineCreateFlags::CAPTURE_STATISTICS_KHR
                    | vk::PipelineCreateFlags::CAPTURE_INTERNAL_REPRESENTATIONS_KHR
            } else {
                vk::PipelineCreateFlags::empty()
            };
            let info = [vk::ComputePipelineCreateInfo::default()
                .flags(flags)
                .stage(stage)
                .layout(layout)];
            let built = d.create_compute_pipelines(vk::PipelineCache::null(), &info, None);
            let result = match built {
                Ok(p) => {
                    let r = self.read(p[0]);
                    d.destroy_pipeline(p[0], None);
                    r
                }
                Err((made, e)) => {
                    for p in made.into_iter().filter(|p| *p != vk::Pipeline::null()) {
                        d.destroy_pipeline(p, None);
                    }
                    Err(anyhow::anyhow!("vkCreateComputePipelines: {e}"))
                }
            };
            d.destroy_shader_module(module, None);
            d.destroy_pipeline_layout(layout, None);
            d.destroy_descriptor_set_layout(set, None);
            result
        }
    }

    /// # Safety
    /// `pipeline` was created from this device, with both capture flags where it has the
    /// extension.
    unsafe fn read(&self, pipeline: vk::Pipeline) -> anyhow::Result<Vec<Executable>> {
        let mut out = Vec::new();
        let Some(exe) = &self.exe else {
            return Ok(out);
        };
        // SAFETY: as the function's contract.
        let props = unsafe {
            exe.get_pipeline_executable_properties(
                &vk::PipelineInfoKHR::default().pipeline(pipeline),
            )
        }?;
        for (i, p) in props.iter().enumerate() {
            let info = vk::PipelineExecutableInfoKHR::default()
                .pipeline(pipeline)
                .executable_index(i as u32);
            // SAFETY: as the function's contract.
            let stats = unsafe { exe.get_pipeline_executable_statistics(&info) }?
                .iter()
                .map(|s| {
                    // SAFETY: `format` names the union's member the driver wrote.
                    let value = unsafe {
                        match s.format {
                            vk::PipelineExecutableStatisticFormatKHR::BOOL32 => {
                                (s.value.b32 != 0).to_string()
                            }
                            vk::PipelineExecutableStatisticFormatKHR::INT64 => {
                                s.value.i64.to_string()
                            }
                            vk::PipelineExecutableStatisticFormatKHR::UINT64 => {
                                s.value.u64.to_string()
                            }
                            _ => format!("{:.3}", s.value.f64),
                        }
                    };
                    (c_text(&s.name), value)
                })
                .collect();
            // SAFETY: as the function's contract.
            let representations = unsafe { self.representations(exe, &info) }?;
            out.push(Executable {
                index: i as u32,
                name: c_text(&p.name),
                subgroup_size: p.subgroup_size,
                stats,
                representations,
            });
        }
        Ok(out)
    }

    /// The executable's internal representations as (name, text); binary ones as their size.
    ///
    /// # Safety
    /// `info` names an executable of a pipeline built with the capture flags.
    unsafe fn representations(
        &self,
        exe: &ash::khr::pipeline_executable_properties::Device,
        info: &vk::PipelineExecutableInfoKHR<'_>,
    ) -> anyhow::Result<Vec<(String, String)>> {
        let get = exe
            .fp()
            .get_pipeline_executable_internal_representations_khr;
        let device = self.device.handle();
        let mut count = 0u32;
        // SAFETY: the first call only counts.
        unsafe { get(device, info, &mut count, std::ptr::null_mut()) }.result()?;
        let mut reps =
            vec![vk::PipelineExecutableInternalRepresentationKHR::default(); count as usize];
        // SAFETY: `reps` holds `count` structures; data pointers are null, so sizes come back.
        unsafe { get(device, info, &mut count, reps.as_mut_ptr()) }.result()?;
        let mut buffers: Vec<Vec<u8>> = reps.iter().map(|r| vec![0u8; r.data_size]).collect();
        for (r, b) in reps.iter_mut().zip(buffers.iter_mut()) {
            r.p_data = b.as_mut_ptr().cast();
        }
        // SAFETY: each `p_data` points at `data_size` writable bytes owned by `buffers`.
        unsafe { get(device, info, &mut count, reps.as_mut_ptr()) }.result()?;
        Ok(reps
            .iter()
            .zip(&buffers)
            .map(|(r, b)| {
                let text = if r.is_text != 0 {
                    String::from_utf8_lossy(b.split(|&c| c == 0).next().unwrap_or(&[])).into_owned()
                } else {
                    format!("({} bytes of binary)", b.len())
                };
                (c_text(&r.name), text)
            })
            .collect())
    }
}
