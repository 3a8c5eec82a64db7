//! Opening the GPU: the adapter's full limits and the features gpuport uses, device-loss and
//! error tracking, and the adapter report behind `gpuport probe`.

use std::sync::Arc;

use parking_lot::Mutex;
use serde::Serialize;

use crate::error::GpuError;
use crate::pipeline::{DiskPipelines, PipelineCache};
use crate::pool::BufferPool;

/// Features gpuport uses when the adapter has them; none is required.
pub const WANTED_FEATURES: wgpu::Features = wgpu::Features::SHADER_F16
    .union(wgpu::Features::SUBGROUP)
    .union(wgpu::Features::PIPELINE_CACHE)
    .union(wgpu::Features::TIMESTAMP_QUERY)
    .union(wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES)
    .union(wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS);

/// Whether `adapter` can run the tensor-core GEMM: a 16 × 16 × 16 f16 × f16 → f32
/// cooperative-matrix configuration, f16 and subgroups among `features`, subgroups of exactly
/// [`gpuport_kernels::gemm::COOP_SUBGROUP`] lanes; and the user has not turned it off
/// ([`GpuOptions::tensor_cores`], or `GPUPORT_COOP=0`).
fn coop_f16_usable(
    options: &GpuOptions,
    adapter: &wgpu::Adapter,
    features: wgpu::Features,
    info: &wgpu::AdapterInfo,
) -> bool {
    let wanted = options
        .tensor_cores
        .unwrap_or_else(|| std::env::var("GPUPORT_COOP").map_or(true, |v| v != "0"));
    if !wanted {
        return false;
    }
    let lanes = gpuport_kernels::gemm::COOP_SUBGROUP;
    let needed = wgpu::Features::SHADER_F16 | wgpu::Features::SUBGROUP;
    features.contains(needed)
        && adapter
            .features()
            .contains(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX)
        && info.subgroup_min_size == lanes
        && info.subgroup_max_size == lanes
        && adapter.cooperative_matrix_properties().iter().any(|c| {
            c.m_size == 16
                && c.n_size == 16
                && c.k_size == 16
                && c.ab_type == wgpu::CooperativeScalarType::F16
                && c.cr_type == wgpu::CooperativeScalarType::F32
        })
}

/// How to pick an adapter.
#[derive(Debug, Clone, Default)]
pub struct GpuOptions {
    /// Only these backends (default: from `WGPU_BACKEND`, else all).
    pub backends: Option<wgpu::Backends>,
    /// Only an adapter whose name contains this (case-insensitive; default: from
    /// `GPUPORT_ADAPTER`, else the high-performance one).
    pub adapter_name: Option<String>,
    /// Where compiled pipelines are kept between runs (default: from
    /// [`crate::pipeline::PIPELINE_CACHE_ENV`], else the user's cache folder).
    pub pipeline_cache: Option<std::path::PathBuf>,
    /// Whether batches of many rows (prompts, batched decode from
    /// `ops::coop_min_tokens()` rows) run on tensor cores with f16 products where the adapter
    /// has them (default: yes, unless `GPUPORT_COOP=0`). `Some(false)` keeps every product in
    /// f32: a sequence's logits in a batch then differ from its solo run's by summation order
    /// only (about 1e-6 of the largest, not f16's 1e-3), so its sampled draws are its solo
    /// run's but at near-ties (docs/design/batched-forward.md).
    pub tensor_cores: Option<bool>,
}

/// An open device with its queue, caches and health.
pub struct Gpu {
    /// The wgpu device.
    pub device: wgpu::Device,
    /// Its queue.
    pub queue: wgpu::Queue,
    info: wgpu::AdapterInfo,
    features: wgpu::Features,
    limits: wgpu::Limits,
    coop_f16: bool,
    lost: Arc<Mutex<Option<String>>>,
    uncaptured: Arc<Mutex<Vec<String>>>,
    /// Compiled pipelines by kernel variant.
    pub pipelines: PipelineCache,
    /// The driver's compiled pipelines on disk, where the backend keeps them for us.
    disk: Option<DiskPipelines>,
    /// Reusable buffers by size class.
    pub pool: BufferPool,
    /// The partial sums of tensor-core GEMMs split along K (`ops::gemm`): one buffer in use
    /// (the last), grown on demand, used by nothing else (so every use is ordered by the
    /// queue); the ones it replaced are kept (see `Gpu::scratch`).
    pub(crate) split_scratch: Mutex<Vec<Arc<wgpu::Buffer>>>,
    /// The tensor-core GEMM's input rows rounded to f16 (`ops::gemm`), likewise.
    pub(crate) x16_scratch: Mutex<Vec<Arc<wgpu::Buffer>>>,
}

/// What `gpuport probe` reports about an adapter.
#[derive(Debug, Clone, Serialize)]
pub struct AdapterReport {
    /// Adapter name.
    pub name: String,
    /// Backend (vulkan, metal, dx12, gl).
    pub backend: String,
    /// Device class.
    pub device_type: String,
    /// PCI vendor id.
    pub vendor: u32,
    /// PCI device id.
    pub device: u32,
    /// Driver name.
    pub driver: String,
    /// Driver version text.
    pub driver_info: String,
    /// The features gpuport uses that this device has.
    pub features: Vec<String>,
    /// Subgroup size range.
    pub subgroup_sizes: (u32, u32),
    /// The limits gpuport depends on.
    pub max_buffer_size: u64,
    /// Largest storage binding.
    pub max_storage_buffer_binding_size: u64,
    /// Storage binding offset alignment.
    pub min_storage_buffer_offset_alignment: u32,
    /// Workgroups per dimension.
    pub max_compute_workgroups_per_dimension: u32,
    /// Threads per workgroup.
    pub max_compute_invocations_per_workgroup: u32,
    /// Workgroup memory.
    pub max_compute_workgroup_storage_size: u32,
}

impl Gpu {
    /// Opens the best adapter (or the one `options` names) with its full limits.
    pub fn new(options: &GpuOptions) -> Result<Gpu, GpuError> {
        pollster::block_on(Self::open(options))
    }

    async fn open(options: &GpuOptions) -> Result<Gpu, GpuError> {
        // Vulkan, Metal, DX12 first; OpenGL only as a last resort (and when asked for).
        let explicit = options.backends.or_else(wgpu::Backends::from_env);
        let first = explicit.unwrap_or(wgpu::Backends::PRIMARY);
        match Self::open_with(options, first).await {
            Err(GpuError::NoAdapter(_)) if explicit.is_none() => {
                Self::open_with(options, wgpu::Backends::GL).await
            }
            other => other,
        }
    }

    async fn open_with(options: &GpuOptions, backends: wgpu::Backends) -> Result<Gpu, GpuError> {
        let mut descriptor = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
        descriptor.backends = backends;
        let instance = wgpu::Instance::new(descriptor);
        let name = options
            .adapter_name
            .clone()
            .or_else(|| std::env::var("GPUPORT_ADAPTER").ok())
            .map(|n| n.to_lowercase());
        let adapter = match &name {
            Some(wanted) => {
                let adapters = instance.enumerate_adapters(backends).await;
                let names: Vec<String> = adapters.iter().map(|a| a.get_info().name).collect();
                adapters
                    .into_iter()
                    .find(|a| a.get_info().name.to_lowercase().contains(wanted.as_str()))
                    .ok_or_else(|| {
                        GpuError::NoAdapter(format!("none named like `{wanted}` among {names:?}"))
                    })?
            }
            None => instance
                .request_adapter(&wgpu::RequestAdapterOptions {
                    power_preference: wgpu::PowerPreference::HighPerformance,
                    ..Default::default()
                })
                .await
                .map_err(|e| GpuError::NoAdapter(e.to_string()))?,
        };
        let info = adapter.get_info();
        let mut features = adapter.features() & WANTED_FEATURES;
        let coop_f16 = coop_f16_usable(options, &adapter, features, &info);
        if coop_f16 {
            features |= wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX;
        }
        // wgpu's defaults cap buffers far below real hardware: ask for everything the adapter has.
        let limits = adapter.limits();
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("gpuport"),
                required_features: features,
                required_limits: limits.clone(),
                // SAFETY: wgpu marks cooperative matrices experimental; the only use is
                // `gemm_coop.wgsl` (subgroup-scope loads, stores and multiply-adds of 16 × 16
                // f16/f32 fragments from workgroup memory), checked against the CPU reference
                // on the adapters that run it, and `GPUPORT_COOP=0` turns it off.
                experimental_features: if coop_f16 {
                    #[allow(unsafe_code)]
                    unsafe {
                        wgpu::ExperimentalFeatures::enabled()
                    }
                } else {
                    wgpu::ExperimentalFeatures::disabled()
                },
                ..Default::default()
            })
            .await
            .map_err(|e| GpuError::RequestDevice(e.to_string()))?;
        let lost = Arc::new(Mutex::new(None));
        let lost_in_callback = lost.clone();
        device.set_device_lost_callback(move |reason, message| {
            *lost_in_callback.lock() = Some(format!("{reason:?}: {message}"));
        });
        let uncaptured = Arc::new(Mutex::new(Vec::new()));
        let uncaptured_in_handler = uncaptured.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            uncaptured_in_handler.lock().push(e.to_string());
        }));
        let disk = DiskPipelines::open(&device, &info, features, options.pipeline_cache.as_deref());
        Ok(Gpu {
            pipelines: PipelineCache::default(),
            disk,
            pool: BufferPool::default(),
            split_scratch: Mutex::new(Vec::new()),
            x16_scratch: Mutex::new(Vec::new()),
            device,
            queue,
            info,
            features,
            limits,
            coop_f16,
            lost,
            uncaptured,
        })
    }

    /// The adapter's identity.
    pub fn info(&self) -> &wgpu::AdapterInfo {
        &self.info
    }

    /// The disk cache of compiled pipelines, where the backend has one and
    /// [`crate::pipeline::PIPELINE_CACHE_ENV`] does not turn it off.
    pub fn disk_pipelines(&self) -> Option<&DiskPipelines> {
        self.disk.as_ref()
    }

    /// Writes the pipelines compiled so far to the disk cache (see [`DiskPipelines::save`]);
    /// also done when the `Gpu` is dropped. Bytes written: 0 without a disk cache or new
    /// pipelines.
    pub fn save_pipelines(&self) -> Result<usize, GpuError> {
        self.disk.as_ref().map_or(Ok(0), DiskPipelines::save)
    }

    /// The features the device was opened with.
    pub fn features(&self) -> wgpu::Features {
        self.features
    }

    /// The device's limits (the adapter's own).
    pub fn limits(&self) -> &wgpu::Limits {
        &self.limits
    }

    /// Whether the adapter is a CPU (lavapipe, llvmpipe): it runs a few workgroups at a time,
    /// each workgroup's lanes as one thread's vector, and several kernel choices differ there.
    pub fn is_cpu(&self) -> bool {
        self.info.device_type == wgpu::DeviceType::Cpu
    }

    /// Lanes of the adapter's widest subgroup (32 where it does not say).
    pub fn subgroup_width(&self) -> u32 {
        match self.info.subgroup_max_size {
            0 => 32,
            n => n,
        }
    }

    /// Lanes of the adapter's narrowest subgroup (4, the least any backend reports, where it
    /// does not say: a kernel that sizes its work by it must not over-estimate it).
    pub fn subgroup_min_width(&self) -> u32 {
        match self.info.subgroup_min_size {
            0 => 4,
            n => n,
        }
    }

    /// Whether subgroup operations are available.
    pub fn has_subgroups(&self) -> bool {
        self.features.contains(wgpu::Features::SUBGROUP)
    }

    /// Whether the tensor-core GEMM (`gemm_coop.wgsl`) runs here: 16 × 16 × 16 subgroup
    /// matrices of f16 with f32 sums, f16 shader values, and subgroups of exactly 32 lanes.
    pub fn has_coop_f16(&self) -> bool {
        self.coop_f16
    }

    /// The GEMV tunables for `ty` here: the tuning table's entry for this adapter, else the
    /// heuristic default.
    pub fn gemv_tunables(
        &self,
        ty: gpuport_kernels::quant::GgmlType,
    ) -> gpuport_kernels::gemv::GemvTunables {
        self.gemv_tunables_in(&crate::tuning::TuningTable::load(), ty)
    }

    /// [`Gpu::gemv_tunables`] from an already loaded table (callers choosing for many types
    /// read the table once).
    pub fn gemv_tunables_in(
        &self,
        table: &crate::tuning::TuningTable,
        ty: gpuport_kernels::quant::GgmlType,
    ) -> gpuport_kernels::gemv::GemvTunables {
        let default = gpuport_kernels::gemv::GemvTunables::default_for(self.has_subgroups());
        self.table_entry(table, &crate::tuning::gemv_key(ty), default)
    }

    /// The int8-input GEMV's tunables for `ty` here (`gemv_q8.wgsl`): the table's entry,
    /// else the kernel's default.
    pub fn gemv_q8_tunables_in(
        &self,
        table: &crate::tuning::TuningTable,
        ty: gpuport_kernels::quant::GgmlType,
    ) -> gpuport_kernels::gemv::GemvTunables {
        let default = gpuport_kernels::gemv::GemvTunables::q8_default_for(ty, self.has_subgroups());
        self.table_entry(table, &crate::tuning::gemv_q8_key(ty), default)
    }

    /// The prefill GEMM's tile for weights of `ty` here: the table's when this device's
    /// workgroup memory holds it, else the default.
    pub fn gemm_tile_in(
        &self,
        table: &crate::tuning::TuningTable,
        ty: gpuport_kernels::quant::GgmlType,
    ) -> gpuport_kernels::gemm::GemmTile {
        table
            .gemm_variant(&self.info, ty, self.caps())
            .unwrap_or(gpuport_kernels::gemm::GemmTile::DEFAULT)
    }

    /// The table's entry under `key` for this adapter when this device can run it (a
    /// subgroup reduction needs subgroups), else `default`.
    fn table_entry(
        &self,
        table: &crate::tuning::TuningTable,
        key: &str,
        default: gpuport_kernels::gemv::GemvTunables,
    ) -> gpuport_kernels::gemv::GemvTunables {
        table
            .gemv_variant(&self.info, key, self.caps())
            .unwrap_or(default)
    }

    /// What the tuning table's entries are checked against.
    fn caps(&self) -> crate::tuning::DeviceCaps {
        crate::tuning::DeviceCaps {
            subgroups: self.has_subgroups(),
            max_invocations: self.limits.max_compute_invocations_per_workgroup,
            max_workgroup_bytes: self.limits.max_compute_workgroup_storage_size,
        }
    }

    /// Whether passes can carry timestamps.
    pub fn has_timestamps(&self) -> bool {
        self.features.contains(wgpu::Features::TIMESTAMP_QUERY)
    }

    /// Destroys the device now, as a driver reset or a removed GPU would: work in flight is
    /// dropped and every later call on this `Gpu` (or anything made from it) fails with
    /// [`GpuError::DeviceLost`] instead of returning garbage. Tests use it to simulate device
    /// loss; a caller can also use it to stop a device it no longer trusts. Open a new `Gpu`
    /// to continue.
    pub fn destroy(&self) {
        self.lost
            .lock()
            .get_or_insert_with(|| "destroyed by Gpu::destroy".to_owned());
        self.device.destroy();
    }

    /// `Err` if the device was lost or an error escaped every scope since the last check.
    pub fn check(&self) -> Result<(), GpuError> {
        if let Some(reason) = self.lost.lock().clone() {
            return Err(GpuError::DeviceLost(reason));
        }
        let mut errors = self.uncaptured.lock();
        if !errors.is_empty() {
            let all = errors.drain(..).collect::<Vec<_>>().join("; ");
            if all.to_lowercase().contains("out of memory") {
                return Err(GpuError::OutOfMemory(all));
            }
            return Err(GpuError::Validation(all));
        }
        Ok(())
    }

    /// Blocks until all submitted work has finished, then checks the device's health.
    pub fn wait(&self) -> Result<(), GpuError> {
        self.device
            .poll(wgpu::PollType::Wait {
                submission_index: None,
                timeout: None,
            })
            .map_err(|e| match e {
                wgpu::PollError::Timeout => {
                    GpuError::DeviceLost("timed out waiting for the GPU".into())
                }
                other => GpuError::DeviceLost(other.to_string()),
            })?;
        self.check()
    }

    /// Runs `f` inside out-of-memory and validation error scopes and turns a captured error
    /// into a typed one.
    pub fn scoped<T>(&self, what: &str, f: impl FnOnce() -> T) -> Result<T, GpuError> {
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let value = f();
        let validation = pollster::block_on(validation.pop());
        let oom = pollster::block_on(oom.pop());
        if let Some(e) = oom {
            return Err(GpuError::OutOfMemory(format!("{what}: {e}")));
        }
        if let Some(e) = validation {
            return Err(GpuError::Validation(format!("{what}: {e}")));
        }
        self.check()?;
        Ok(value)
    }

    /// The report `gpuport probe` prints.
    pub fn report(&self) -> AdapterReport {
        let l = &self.limits;
        let features = [
            (wgpu::Features::SHADER_F16, "shader-f16"),
            (wgpu::Features::SUBGROUP, "subgroups"),
            (
                wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX,
                "cooperative-matrix-f16",
            ),
            (wgpu::Features::TIMESTAMP_QUERY, "timestamp-query"),
            (
                wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES,
                "timestamp-query-inside-passes",
            ),
            (
                wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS,
                "timestamp-query-inside-encoders",
            ),
        ]
        .into_iter()
        .filter(|(f, _)| self.features.contains(*f))
        .map(|(_, n)| n.to_owned())
        .collect();
        AdapterReport {
            name: self.info.name.clone(),
            backend: format!("{:?}", self.info.backend).to_lowercase(),
            device_type: format!("{:?}", self.info.device_type),
            vendor: self.info.vendor,
            device: self.info.device,
            driver: self.info.driver.clone(),
            driver_info: self.info.driver_info.clone(),
            features,
            subgroup_sizes: (self.info.subgroup_min_size, self.info.subgroup_max_size),
            max_buffer_size: l.max_buffer_size,
            max_storage_buffer_binding_size: l.max_storage_buffer_binding_size,
            min_storage_buffer_offset_alignment: l.min_storage_buffer_offset_alignment,
            max_compute_workgroups_per_dimension: l.max_compute_workgroups_per_dimension,
            max_compute_invocations_per_workgroup: l.max_compute_invocations_per_workgroup,
            max_compute_workgroup_storage_size: l.max_compute_workgroup_storage_size,
        }
    }
}

impl Drop for Gpu {
    /// Writes newly compiled pipelines to the disk cache. A failure costs only the next run's
    /// compile time, so it is reported on stderr rather than lost or fatal.
    fn drop(&mut self) {
        if let Err(e) = self.save_pipelines() {
            eprintln!("gpuport: {e}");
        }
    }
}
