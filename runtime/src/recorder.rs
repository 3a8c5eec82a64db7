//! The command recorder. Dispatches are appended to one open compute pass; the pass ends only
//! when something needs results — a copy, a readback, a submit. Dispatches inside one pass are
//! already ordered by WebGPU's per-dispatch usage scopes, so extra passes buy no correctness and
//! cost ~100 µs each on some platforms (engine-reference-design.md, "Batching the compute
//! passes"). The recorder counts dispatches, passes and submits so tests can assert the shape of
//! a forward pass, and can timestamp every pass.

use std::collections::HashMap;
use std::sync::Arc;

use bytemuck::Pod;

use crate::device::Gpu;
use crate::error::GpuError;
use crate::pipeline::Pipeline;
use crate::tensor::Tensor;

/// Counts of what a recorder issued.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecorderStats {
    /// Compute dispatches.
    pub dispatches: u64,
    /// Compute passes opened.
    pub passes: u64,
    /// Queue submissions.
    pub submits: u64,
}

/// Bytes of uniform data a recorder packs into one buffer before starting another.
const UNIFORM_CHUNK: u64 = 64 * 1024;
/// Passes a profiling recorder can time between two submits.
const MAX_TIMED_PASSES: u32 = 1024;

struct Profiler {
    queries: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    used: u32,
    /// Nanoseconds per pass, filled by [`Recorder::submit`] once the GPU is done.
    pass_ns: Vec<f64>,
    /// Per-dispatch mode: a timestamp at each pass start and after each dispatch; the label
    /// of each mark (`None` for a pass start).
    marks: Option<Vec<Option<String>>>,
    /// Per-dispatch mode: (label, nanoseconds) of each dispatch of the last submit.
    dispatch_ns: Vec<(String, f64)>,
}

/// Records one command stream. See the module docs.
pub struct Recorder<'g> {
    gpu: &'g Gpu,
    encoder: Option<wgpu::CommandEncoder>,
    pass: Option<wgpu::ComputePass<'static>>,
    stats: RecorderStats,
    uniforms: Vec<u8>,
    uniform_buffers: Vec<wgpu::Buffer>,
    /// Slots of the uniform values placed since the last submit, by content: K decode steps
    /// repeat most per-layer parameter blocks, and equal blocks share a slot.
    uniform_slots: HashMap<Vec<u8>, UniformSlot>,
    /// Bind groups by (pipeline, uniform slot, storage ranges): with shared slots most of a
    /// decode step's bind groups are reused from the previous step instead of re-created
    /// (creating one costs microseconds of CPU; binding one costs almost nothing).
    groups: HashMap<GroupKey, wgpu::BindGroup>,
    profiler: Option<Profiler>,
    /// [`Recorder::compile_only`]: pipelines are compiled, nothing is recorded.
    compile_only: bool,
}

/// What a [`Recorder`] keeps between uses: its uniform buffers and the bind groups made over
/// them. A caller that records the same launches again and again (a planned graph) hands it
/// from one recorder to the next ([`Recorder::into_cache`], [`Recorder::with_cache`]): the
/// uniform values land in the same slots each time, so every bind group is found instead of
/// created (creating one costs microseconds of CPU per launch).
#[derive(Default)]
pub struct RecorderCache {
    uniform_buffers: Vec<wgpu::Buffer>,
    groups: HashMap<GroupKey, wgpu::BindGroup>,
}

impl RecorderCache {
    /// Bind groups held.
    pub fn bind_groups(&self) -> usize {
        self.groups.len()
    }
}

impl<'g> Recorder<'g> {
    /// A recorder on `gpu`.
    pub fn new(gpu: &'g Gpu) -> Self {
        Self::with_cache(gpu, RecorderCache::default())
    }

    /// A recorder on `gpu` that starts from an earlier recorder's buffers and bind groups.
    /// The cache must come from a recorder on the same `gpu`.
    pub fn with_cache(gpu: &'g Gpu, cache: RecorderCache) -> Self {
        Recorder {
            gpu,
            encoder: None,
            pass: None,
            stats: RecorderStats::default(),
            uniforms: Vec::new(),
            uniform_buffers: cache.uniform_buffers,
            uniform_slots: HashMap::new(),
            groups: cache.groups,
            profiler: None,
            compile_only: false,
        }
    }

    /// A recorder that records nothing: every launch recorded against it compiles its
    /// pipeline (the caller's `Gpu::pipeline`) and stops there — no uniforms, bind groups,
    /// passes or commands, and [`Recorder::submit`] sends nothing. Recording a forward pass
    /// into one compiles every kernel variant that forward would run, with no GPU work and no
    /// buffer touched: an engine does it at start for every shape it can reach, so no request
    /// meets a compile (`Batch::precompile`).
    pub fn compile_only(gpu: &'g Gpu) -> Self {
        Recorder {
            compile_only: true,
            ..Self::new(gpu)
        }
    }

    /// Whether this is a [`Recorder::compile_only`] recorder.
    pub fn is_compile_only(&self) -> bool {
        self.compile_only
    }

    /// Gives back the buffers and bind groups for [`Recorder::with_cache`] (after
    /// [`Recorder::submit`]; anything recorded but not submitted is dropped).
    pub fn into_cache(self) -> RecorderCache {
        RecorderCache {
            uniform_buffers: self.uniform_buffers,
            groups: self.groups,
        }
    }

    /// Adds timestamps around every pass (needs TIMESTAMP_QUERY).
    fn add_profiler(&mut self) -> Result<(), GpuError> {
        let gpu = self.gpu;
        if !gpu.has_timestamps() {
            return Err(GpuError::MissingFeature("timestamp-query"));
        }
        let queries = gpu.device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("pass timestamps"),
            ty: wgpu::QueryType::Timestamp,
            count: 2 * MAX_TIMED_PASSES,
        });
        let resolve = gpu.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("timestamp resolve"),
            size: 16 * u64::from(MAX_TIMED_PASSES),
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        self.profiler = Some(Profiler {
            queries,
            resolve,
            used: 0,
            pass_ns: Vec::new(),
            marks: None,
            dispatch_ns: Vec::new(),
        });
        Ok(())
    }

    /// [`Recorder::with_cache`] that timestamps every pass, or with `per_dispatch` every
    /// dispatch (see [`Recorder::profiling`] and [`Recorder::profiling_dispatches`]).
    pub fn profiling_with_cache(
        gpu: &'g Gpu,
        cache: RecorderCache,
        per_dispatch: bool,
    ) -> Result<Self, GpuError> {
        if per_dispatch
            && !gpu
                .features()
                .contains(wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES)
        {
            return Err(GpuError::MissingFeature("timestamp-query-inside-passes"));
        }
        let mut r = Self::with_cache(gpu, cache);
        r.add_profiler()?;
        if let (true, Some(p)) = (per_dispatch, r.profiler.as_mut()) {
            p.marks = Some(Vec::new());
        }
        Ok(r)
    }

    /// A recorder that timestamps every pass (needs TIMESTAMP_QUERY).
    pub fn profiling(gpu: &'g Gpu) -> Result<Self, GpuError> {
        Self::profiling_with_cache(gpu, RecorderCache::default(), false)
    }

    /// A recorder that timestamps every dispatch inside its pass (needs
    /// TIMESTAMP_QUERY_INSIDE_PASSES): [`Recorder::dispatch_times_ns`] then says where a
    /// forward pass spends its time. Up to ~2,000 dispatches per submit are timed.
    pub fn profiling_dispatches(gpu: &'g Gpu) -> Result<Self, GpuError> {
        Self::profiling_with_cache(gpu, RecorderCache::default(), true)
    }

    /// (kernel label, nanoseconds) of each dispatch of the last submit of a
    /// [`Recorder::profiling_dispatches`] recorder.
    pub fn dispatch_times_ns(&self) -> &[(String, f64)] {
        self.profiler.as_ref().map_or(&[], |p| &p.dispatch_ns)
    }

    /// What was issued so far.
    pub fn stats(&self) -> RecorderStats {
        self.stats
    }

    /// Per-pass GPU times (ns) measured by the last submit of a profiling recorder.
    pub fn pass_times_ns(&self) -> &[f64] {
        self.profiler.as_ref().map_or(&[], |p| &p.pass_ns)
    }

    fn encoder(&mut self) -> &mut wgpu::CommandEncoder {
        self.encoder
            .get_or_insert_with(|| self.gpu.device.create_command_encoder(&Default::default()))
    }

    fn end_pass(&mut self) {
        self.pass = None;
    }

    /// Places `value` in this recorder's uniform space and returns a binding for it. The bytes
    /// are uploaded at submit, before the commands that read them run.
    pub fn uniform<T: Pod>(&mut self, value: &T) -> Result<UniformSlot, GpuError> {
        let bytes = bytemuck::bytes_of(value);
        if self.compile_only {
            return Ok(UniformSlot {
                chunk: 0,
                offset: 0,
                size: bytes.len() as u64,
            });
        }
        if let Some(slot) = self.uniform_slots.get(bytes) {
            return Ok(*slot);
        }
        let slot = self.place_uniform(bytes)?;
        self.uniform_slots.insert(bytes.to_vec(), slot);
        Ok(slot)
    }

    /// Binds the uniform `slot` (binding 0) and `storage` (tensor, byte start, byte length; at
    /// bindings 1..) to `pipeline` and appends its dispatch over `grid` to the open pass; a
    /// [`Recorder::compile_only`] recorder does neither.
    pub fn launch(
        &mut self,
        pipeline: &Pipeline,
        slot: UniformSlot,
        storage: &[(&Tensor, u64, u64)],
        grid: (u32, u32, u32),
    ) {
        if self.compile_only {
            return;
        }
        let group = self.bind_group(pipeline, slot, storage);
        self.dispatch(pipeline, &group, grid);
    }

    /// The bind group of `pipeline` with the uniform `slot` at binding 0 and `storage` (tensor,
    /// byte start, byte length) at bindings 1.., from this recorder's cache when it has one.
    fn bind_group(
        &mut self,
        pipeline: &Pipeline,
        slot: UniformSlot,
        storage: &[(&Tensor, u64, u64)],
    ) -> wgpu::BindGroup {
        let key = GroupKey {
            pipeline: std::ptr::from_ref(pipeline) as usize,
            slot: (slot.chunk, slot.offset, slot.size),
            storage: storage
                .iter()
                .map(|(t, start, len)| (Arc::as_ptr(&t.buffer) as usize, t.offset + start, *len))
                .collect(),
        };
        if let Some(g) = self.groups.get(&key) {
            return g.clone();
        }
        let mut entries = vec![wgpu::BindGroupEntry {
            binding: 0,
            resource: self.uniform_binding(slot),
        }];
        entries.extend(storage.iter().enumerate().map(|(i, (t, start, len))| {
            wgpu::BindGroupEntry {
                binding: i as u32 + 1,
                resource: t.binding_range(*start, *len),
            }
        }));
        let group = self
            .gpu
            .device
            .create_bind_group(&wgpu::BindGroupDescriptor {
                label: None,
                layout: &pipeline.layout,
                entries: &entries,
            });
        self.groups.insert(key, group.clone());
        group
    }

    fn place_uniform(&mut self, bytes: &[u8]) -> Result<UniformSlot, GpuError> {
        let align = u64::from(self.gpu.limits().min_uniform_buffer_offset_alignment);
        let start = (self.uniforms.len() as u64).div_ceil(align) * align;
        let chunk = start / UNIFORM_CHUNK;
        let offset = start % UNIFORM_CHUNK;
        let (chunk, offset) = if offset + bytes.len() as u64 > UNIFORM_CHUNK {
            (chunk + 1, 0)
        } else {
            (chunk, offset)
        };
        let at = (chunk * UNIFORM_CHUNK + offset) as usize;
        self.uniforms.resize(at + bytes.len(), 0);
        self.uniforms[at..].copy_from_slice(bytes);
        while self.uniform_buffers.len() <= chunk as usize {
            let b = self.gpu.scoped("allocating uniforms", || {
                self.gpu.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("uniforms"),
                    size: UNIFORM_CHUNK,
                    usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                })
            })?;
            self.uniform_buffers.push(b);
        }
        Ok(UniformSlot {
            chunk: chunk as usize,
            offset,
            size: bytes.len() as u64,
        })
    }

    /// The binding resource of a uniform slot.
    pub fn uniform_binding(&self, slot: UniformSlot) -> wgpu::BindingResource<'_> {
        wgpu::BindingResource::Buffer(wgpu::BufferBinding {
            buffer: &self.uniform_buffers[slot.chunk],
            offset: slot.offset,
            size: wgpu::BufferSize::new(slot.size),
        })
    }

    /// Appends a dispatch to the open pass (opening one if needed).
    fn dispatch(
        &mut self,
        pipeline: &Pipeline,
        bind_group: &wgpu::BindGroup,
        grid: (u32, u32, u32),
    ) {
        let per_dispatch = self.profiler.as_ref().is_some_and(|p| p.marks.is_some());
        if self.pass.is_none() {
            let timestamp_writes = match &mut self.profiler {
                Some(p) if p.used < MAX_TIMED_PASSES && p.marks.is_none() => {
                    p.used += 1;
                    Some((2 * (p.used - 1), 2 * (p.used - 1) + 1))
                }
                _ => None,
            };
            let queries = self.profiler.as_ref().map(|p| p.queries.clone());
            let encoder = self.encoder();
            let writes = match (&queries, timestamp_writes) {
                (Some(q), Some((b, e))) => Some(wgpu::ComputePassTimestampWrites {
                    query_set: q,
                    beginning_of_pass_write_index: Some(b),
                    end_of_pass_write_index: Some(e),
                }),
                _ => None,
            };
            let pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: None,
                timestamp_writes: writes,
            });
            self.pass = Some(pass.forget_lifetime());
            self.stats.passes += 1;
            if per_dispatch {
                self.mark(None);
            }
        }
        if let Some(pass) = self.pass.as_mut() {
            pass.set_pipeline(&pipeline.pipeline);
            pass.set_bind_group(0, bind_group, &[]);
            pass.dispatch_workgroups(grid.0, grid.1, grid.2);
            self.stats.dispatches += 1;
        }
        if per_dispatch {
            self.mark(Some(pipeline.label.clone()));
        }
    }

    /// Writes a per-dispatch timestamp (pass start: `None`).
    fn mark(&mut self, label: Option<String>) {
        let (Some(p), Some(pass)) = (self.profiler.as_mut(), self.pass.as_mut()) else {
            return;
        };
        let Some(marks) = p.marks.as_mut() else {
            return;
        };
        if (marks.len() as u32) < 2 * MAX_TIMED_PASSES {
            pass.write_timestamp(&p.queries, marks.len() as u32);
            marks.push(label);
        }
    }

    /// Copies between buffers (ends the open pass).
    pub fn copy(
        &mut self,
        src: &wgpu::Buffer,
        src_offset: u64,
        dst: &wgpu::Buffer,
        dst_offset: u64,
        size: u64,
    ) {
        if self.compile_only {
            return;
        }
        self.end_pass();
        self.encoder()
            .copy_buffer_to_buffer(src, src_offset, dst, dst_offset, size);
    }

    /// Ends the pass, uploads the uniforms, submits everything recorded, and (when profiling)
    /// waits and reads the pass timestamps.
    pub fn submit(&mut self) -> Result<(), GpuError> {
        if self.compile_only {
            return Ok(());
        }
        self.end_pass();
        let timed = match &self.profiler {
            Some(p) => {
                let n = match &p.marks {
                    Some(m) => m.len() as u32,
                    None => 2 * p.used,
                };
                (n > 0).then(|| (p.queries.clone(), p.resolve.clone(), n))
            }
            None => None,
        };
        let mut readback = None;
        if let Some((queries, resolve, n)) = timed {
            let bytes = 8 * u64::from(n);
            let staging = self.gpu.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("timestamps"),
                size: bytes,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            let enc = self.encoder();
            enc.resolve_query_set(&queries, 0..n, &resolve, 0);
            enc.copy_buffer_to_buffer(&resolve, 0, &staging, 0, bytes);
            readback = Some(staging);
        }
        for (i, chunk) in self.uniforms.chunks(UNIFORM_CHUNK as usize).enumerate() {
            self.gpu
                .queue
                .write_buffer(&self.uniform_buffers[i], 0, chunk);
        }
        let commands = self.encoder.take().map(|e| e.finish());
        self.gpu.queue.submit(commands);
        self.stats.submits += 1;
        self.uniforms.clear();
        self.uniform_slots.clear();
        if let Some(staging) = readback {
            let slice = staging.slice(..);
            let (tx, rx) = std::sync::mpsc::channel();
            slice.map_async(wgpu::MapMode::Read, move |r| {
                let _ = tx.send(r);
            });
            self.gpu.wait()?;
            rx.recv()
                .map_err(|e| GpuError::Readback(e.to_string()))?
                .map_err(|e| GpuError::Readback(e.to_string()))?;
            let view = slice
                .get_mapped_range()
                .map_err(|e| GpuError::Readback(e.to_string()))?;
            let ticks: Vec<u64> = bytemuck::pod_collect_to_vec(&view[..]);
            drop(view);
            let period = f64::from(self.gpu.queue.get_timestamp_period());
            if let Some(p) = self.profiler.as_mut() {
                match p.marks.as_mut() {
                    Some(marks) => {
                        p.dispatch_ns = marks
                            .iter()
                            .zip(&ticks)
                            .zip(ticks.iter().skip(1).zip(marks.iter().skip(1)))
                            .filter_map(|((_, t0), (t1, label))| {
                                label
                                    .clone()
                                    .map(|l| (l, t1.saturating_sub(*t0) as f64 * period))
                            })
                            .collect();
                        marks.clear();
                    }
                    None => {
                        p.pass_ns = ticks
                            .chunks(2)
                            .map(|t| t[1].saturating_sub(t[0]) as f64 * period)
                            .collect();
                        p.used = 0;
                    }
                }
            }
        }
        self.gpu.check()
    }
}

/// What makes two bind groups the same.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct GroupKey {
    pipeline: usize,
    slot: (usize, u64, u64),
    storage: Vec<(usize, u64, u64)>,
}

/// Where a uniform value sits in a recorder's uniform buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UniformSlot {
    chunk: usize,
    offset: u64,
    size: u64,
}
