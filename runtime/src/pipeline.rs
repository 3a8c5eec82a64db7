//! Compiled pipelines, one per kernel variant, created once per device. The key is the full
//! [`KernelSpec`] (family, weight type, reduction, constants); the device fixes the features.
//! Where the backend keeps compiled pipelines for the application (`wgpu::PipelineCache`:
//! Vulkan), the driver's compiled code also goes to disk ([`DiskPipelines`]), so a second run
//! of a program does not compile its kernels again.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use sha2::{Digest, Sha256};

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
        if spec.needs_f16() && !self.features().contains(wgpu::Features::SHADER_F16) {
            return Err(GpuError::MissingFeature(
                "shader-f16 (needed by an f16 kernel)",
            ));
        }
        if spec.needs_cooperative_matrix() && !self.has_coop_f16() {
            return Err(GpuError::MissingFeature(
                "16 × 16 f16 cooperative matrices on 32-lane subgroups (the tensor-core GEMM and \
                 prompt attention)",
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
        let trace = std::env::var_os("GPUPORT_TRACE_PIPELINES").is_some();
        let started = std::time::Instant::now();
        let pipeline = self.scoped(&format!("compiling {label}"), || {
            let descriptor = wgpu::ShaderModuleDescriptor {
                label: Some(&label),
                source: wgpu::ShaderSource::Wgsl(wgsl.into()),
            };
            let module = if checked {
                self.device.create_shader_module(descriptor)
            } else {
                // naga otherwise clamps every dynamic index, which lands in the innermost loop of
                // each bandwidth-bound kernel. Loop bounding is dropped only where
                // `loop_bounding` says (see there).
                // SAFETY: every kernel of gpuport-kernels indexes only inside ranges the `ops`
                // functions check before dispatch (bindings cover rows x row bytes, x covers the
                // columns, y the rows; loops are bounded by uniform counts or constants). Set
                // GPUPORT_SHADER_CHECKS=1 to compile with checks when debugging a kernel.
                #[allow(unsafe_code)]
                unsafe {
                    let bounded = loop_bounding(spec);
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
                    cache: self.disk_pipelines().map(|d| &d.cache),
                })
        })?;
        if let Some(d) = self.disk_pipelines() {
            d.created.fetch_add(1, Ordering::Relaxed);
        }
        if trace {
            let ms = started.elapsed().as_secs_f64() * 1e3;
            eprintln!("compiled {label} in {ms:.1} ms");
        }
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

/// The environment variable that places the disk cache of compiled pipelines: unset, the user's
/// cache folder (`$XDG_CACHE_HOME/gpuport/pipelines` on Linux); `0` or `off`, no disk cache;
/// anything else, that folder.
pub const PIPELINE_CACHE_ENV: &str = "GPUPORT_PIPELINE_CACHE";

/// The first bytes of a cache file, then the SHA-256 of the rest, then wgpu's cache data.
const DISK_MAGIC: &[u8; 16] = b"gpuport-pipes-1\n";

/// Compiled pipelines kept on disk between runs: wgpu's `PipelineCache` (the driver's own
/// pipeline cache, Vulkan only), read when the device opens and written back by
/// [`Gpu::save_pipelines`] (and when the `Gpu` is dropped) once new pipelines were compiled.
/// One file per adapter and driver (`wgpu::util::pipeline_cache_key`), written to a temporary
/// file and renamed over the old one, so a reader never sees half a file; its SHA-256 is checked
/// before the data reaches the driver, and a file that fails the check (or that wgpu finds made
/// by another driver version) is ignored and rewritten.
pub struct DiskPipelines {
    cache: wgpu::PipelineCache,
    path: PathBuf,
    /// Bytes of driver data read at open (0 when there was no usable file).
    loaded: usize,
    /// SHA-256 of the data in the file (as read or last written).
    on_disk: Mutex<Option<[u8; 32]>>,
    /// Pipelines created since the file was read or last written.
    created: AtomicUsize,
}

impl DiskPipelines {
    /// The disk cache for `device` (opened with `features`, on the adapter `info`) in folder
    /// `dir`, else where [`PIPELINE_CACHE_ENV`] says, else the user's cache folder; `None` where
    /// the backend has none or the environment turns it off.
    pub(crate) fn open(
        device: &wgpu::Device,
        info: &wgpu::AdapterInfo,
        features: wgpu::Features,
        dir: Option<&Path>,
    ) -> Option<DiskPipelines> {
        if !features.contains(wgpu::Features::PIPELINE_CACHE) {
            return None;
        }
        let dir = match (dir, std::env::var_os(PIPELINE_CACHE_ENV)) {
            (Some(d), _) => d.to_path_buf(),
            (None, Some(v)) if v == "0" || v == "off" => return None,
            (None, Some(v)) if !v.is_empty() => PathBuf::from(v),
            _ => dirs::cache_dir()?.join("gpuport").join("pipelines"),
        };
        let path = dir.join(format!("{}.bin", wgpu::util::pipeline_cache_key(info)?));
        let data = read_cache_file(&path);
        // SAFETY: `data` is only ever bytes that `PipelineCache::get_data` returned, written by
        // `DiskPipelines::save` behind a SHA-256 that `read_cache_file` has just checked; wgpu
        // checks its header (adapter, driver version) and, with `fallback`, starts empty on a
        // mismatch rather than failing.
        #[allow(unsafe_code)]
        let cache = unsafe {
            device.create_pipeline_cache(&wgpu::PipelineCacheDescriptor {
                label: Some("gpuport pipelines"),
                data: data.as_deref(),
                fallback: true,
            })
        };
        Some(DiskPipelines {
            cache,
            path,
            loaded: data.as_ref().map_or(0, Vec::len),
            on_disk: Mutex::new(data.map(|d| Sha256::digest(&d).into())),
            created: AtomicUsize::new(0),
        })
    }

    /// The cache file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes of driver data read from the file at open (0: none, or unusable).
    pub fn loaded_bytes(&self) -> usize {
        self.loaded
    }

    /// Writes the cache file if pipelines were created since it was read or written and the
    /// driver's data changed (a run that found every pipeline in the file leaves it alone): the
    /// number of bytes written, 0 when there was nothing new.
    pub fn save(&self) -> Result<usize, GpuError> {
        if self.created.swap(0, Ordering::Relaxed) == 0 {
            return Ok(0);
        }
        let Some(data) = self.cache.get_data() else {
            return Ok(0);
        };
        let digest: [u8; 32] = Sha256::digest(&data).into();
        let mut on_disk = self.on_disk.lock();
        if *on_disk == Some(digest) {
            return Ok(0);
        }
        write_cache_file(&self.path, &data).map_err(|e| {
            GpuError::PipelineCache(format!("writing {}: {e}", self.path.display()))
        })?;
        *on_disk = Some(digest);
        Ok(data.len())
    }
}

/// The driver data in the cache file at `path`, if it is whole (magic, then a SHA-256 that
/// matches the rest).
fn read_cache_file(path: &Path) -> Option<Vec<u8>> {
    let bytes = std::fs::read(path).ok()?;
    let rest = bytes.strip_prefix(DISK_MAGIC.as_slice())?;
    let (sum, data) = rest.split_at_checked(32)?;
    (Sha256::digest(data).as_slice() == sum).then(|| data.to_vec())
}

/// Writes `data` behind the magic and its SHA-256 to a temporary file beside `path`, then
/// renames it over `path`.
fn write_cache_file(path: &Path, data: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(DISK_MAGIC)?;
        f.write_all(&Sha256::digest(data))?;
        f.write_all(data)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Whether `spec` is compiled with naga's loop-bounding counter: [`KernelSpec::loop_bounding`]
/// unless the environment says otherwise for its family. `GPUPORT_LOOP_BOUNDING` keeps the
/// counter (`1` or `all`: every family; else comma-separated family names, e.g.
/// `attn_prefill,attn_decode`); `GPUPORT_UNBOUNDED_LOOPS` drops it (`all`, or names), for A/Bs
/// of what the counter costs a kernel whose loops have constant trip counts. Bounding wins
/// where both name a family.
pub fn loop_bounding(spec: &KernelSpec) -> bool {
    static KNOBS: std::sync::OnceLock<(FamilySet, FamilySet)> = std::sync::OnceLock::new();
    let (bounded, unbounded) = KNOBS.get_or_init(|| {
        (
            FamilySet::from_env("GPUPORT_LOOP_BOUNDING"),
            FamilySet::from_env("GPUPORT_UNBOUNDED_LOOPS"),
        )
    });
    bounded_with(spec, bounded, unbounded)
}

/// [`loop_bounding`]'s rule with the two knobs given.
fn bounded_with(spec: &KernelSpec, bounded: &FamilySet, unbounded: &FamilySet) -> bool {
    let family = spec.family.name();
    bounded.names(family) || (spec.loop_bounding() && !unbounded.names(family))
}

/// Kernel families an environment variable names: `1` or `all` for every one, else
/// comma-separated family names.
struct FamilySet(Vec<String>);

impl FamilySet {
    fn from_env(var: &str) -> Self {
        Self::parse(&std::env::var(var).unwrap_or_default())
    }

    fn parse(value: &str) -> Self {
        Self(
            value
                .split(',')
                .map(|n| n.trim().to_owned())
                .filter(|n| !n.is_empty())
                .collect(),
        )
    }

    fn names(&self, family: &str) -> bool {
        self.0.iter().any(|n| n == family || n == "all" || n == "1")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loop_bounding_knobs_name_families_or_all() {
        use gpuport_kernels::{attention, gemm};
        let attn = attention::prefill_spec(64, 16, 4, gpuport_gguf::GgmlType::F16);
        // The f32 tiled GEMM: a family that keeps the counter.
        let tiled = gemm::spec(
            gpuport_gguf::GgmlType::F32,
            gemm::GemmTile::DEFAULT,
            gpuport_kernels::gemv::GemvInput::Plain,
        );
        // The split sums: a decode family that drops it since v42.
        let splits = gemm::splits_spec(true);
        assert!(
            !attn.loop_bounding() && !splits.loop_bounding() && tiled.loop_bounding(),
            "the defaults"
        );
        let none = FamilySet::parse("");
        assert!(!bounded_with(&attn, &none, &none));
        assert!(bounded_with(&tiled, &none, &none));
        assert!(!bounded_with(&splits, &none, &none));
        for all in ["1", "all", " all "] {
            let all = FamilySet::parse(all);
            assert!(bounded_with(&attn, &all, &none), "bounding everywhere");
            assert!(!bounded_with(&tiled, &none, &all), "bounding nowhere");
        }
        let named = FamilySet::parse("gemv, attn_prefill,");
        assert!(bounded_with(&attn, &named, &none), "attn_prefill named");
        assert!(!bounded_with(&tiled, &none, &FamilySet::parse("gemm")));
        assert!(bounded_with(&tiled, &none, &named), "gemm not named");
        assert!(bounded_with(
            &splits,
            &FamilySet::parse("gemm_splits"),
            &none
        ));
        // Where both knobs name a family, bounding wins.
        assert!(bounded_with(&attn, &named, &named));
    }

    #[test]
    fn cache_files_are_whole_or_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a").join("cache.bin");
        assert_eq!(read_cache_file(&path), None, "absent");
        write_cache_file(&path, b"driver data").unwrap();
        assert_eq!(read_cache_file(&path).as_deref(), Some(&b"driver data"[..]));
        // No temporary file is left beside it.
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["cache.bin"]);
        // A changed byte, a cut file, another magic: ignored.
        let whole = std::fs::read(&path).unwrap();
        let mut flipped = whole.clone();
        *flipped.last_mut().unwrap() ^= 1;
        for bad in [
            flipped,
            whole[..whole.len() - 1].to_vec(),
            b"x".repeat(whole.len()),
        ] {
            std::fs::write(&path, bad).unwrap();
            assert_eq!(read_cache_file(&path), None);
        }
    }
}
