//! Tensors: a typed, shaped view of a GPU buffer, with upload and readback.

use std::sync::Arc;

use gpuport_kernels::quant::{self, GgmlType};

use crate::device::Gpu;
use crate::error::GpuError;
use crate::pool::size_class;

/// The element type of a tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Elem {
    /// f32.
    F32,
    /// f16.
    F16,
    /// i32.
    I32,
    /// u32.
    U32,
    /// GGUF blocks (quantized or not), uploaded in their GPU layout: as stored but Q6_K, whose
    /// blocks go in groups of eight (`gpuport_kernels::quant::gpu_layout`).
    Ggml(GgmlType),
}

impl Elem {
    /// Bytes of one element; `None` for GGUF blocks (their size is per block).
    pub fn bytes(self) -> Option<u64> {
        match self {
            Elem::F32 | Elem::I32 | Elem::U32 => Some(4),
            Elem::F16 => Some(2),
            Elem::Ggml(_) => None,
        }
    }
}

/// A GPU tensor: buffer, byte offset, byte length, element type, shape.
#[derive(Clone)]
pub struct Tensor {
    /// The buffer (shared: views may alias it).
    pub buffer: Arc<wgpu::Buffer>,
    /// Byte offset of the first element.
    pub offset: u64,
    /// Bytes of data (before padding to words): for GGUF blocks the GPU layout's, so a Q6_K
    /// tensor's bytes are its groups', its last group's zero blocks included.
    pub bytes: u64,
    /// Element type.
    pub elem: Elem,
    /// Dimensions, outermost first.
    pub shape: Vec<usize>,
}

impl Tensor {
    /// Whether `other` lives in the same GPU buffer (a view of it, or it): wgpu refuses one
    /// buffer bound both read-only and read-write in a dispatch.
    pub fn shares_buffer(&self, other: &Tensor) -> bool {
        std::sync::Arc::ptr_eq(&self.buffer, &other.buffer)
    }

    /// The whole tensor as a binding resource.
    pub fn binding(&self) -> wgpu::BindingResource<'_> {
        self.binding_range(0, self.padded())
    }

    /// `len` bytes from `start` (relative to the tensor) as a binding resource.
    pub fn binding_range(&self, start: u64, len: u64) -> wgpu::BindingResource<'_> {
        wgpu::BindingResource::Buffer(wgpu::BufferBinding {
            buffer: &self.buffer,
            offset: self.offset + start,
            size: wgpu::BufferSize::new(len),
        })
    }

    /// Elements `first..first + len` of a 4-byte-element tensor as a 1-D tensor sharing the
    /// buffer. Bound as a storage buffer, its byte offset must meet the adapter's
    /// `min_storage_buffer_offset_alignment` (wgpu rejects it otherwise).
    pub fn view(&self, first: usize, len: usize) -> Tensor {
        Tensor {
            offset: self.offset + 4 * first as u64,
            bytes: 4 * len as u64,
            shape: vec![len],
            ..self.clone()
        }
    }

    /// Bytes rounded up to whole 4-byte words (storage bindings are word arrays).
    pub fn padded(&self) -> u64 {
        self.bytes.div_ceil(4).max(1) * 4
    }
}

/// A readback whose copy is submitted (see [`Gpu::start_readback`]).
pub struct PendingReadback {
    staging: wgpu::Buffer,
    index: wgpu::SubmissionIndex,
    rx: std::sync::mpsc::Receiver<Result<(), wgpu::BufferAsyncError>>,
    bytes: u64,
}

const STORAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::COPY_DST)
    .union(wgpu::BufferUsages::COPY_SRC);

impl Gpu {
    /// A storage buffer of at least `bytes` from the pool, or a new one; refuses sizes past the
    /// adapter's limit with a typed error instead of letting wgpu abort.
    pub fn storage_buffer(&self, bytes: u64, what: &str) -> Result<Arc<wgpu::Buffer>, GpuError> {
        let size = size_class(bytes.div_ceil(4) * 4);
        let limit = self.limits().max_buffer_size;
        if size > limit {
            return Err(GpuError::TooLarge {
                what: what.to_owned(),
                bytes: size,
                limit,
            });
        }
        if let Some(b) = self.pool.take(size, STORAGE) {
            return Ok(Arc::new(b));
        }
        let buffer = self.scoped(what, || {
            self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(what),
                size,
                usage: STORAGE,
                mapped_at_creation: false,
            })
        })?;
        Ok(Arc::new(buffer))
    }

    /// Returns a tensor's buffer to the pool when no other view holds it.
    pub fn recycle(&self, t: Tensor) {
        if let Ok(buffer) = Arc::try_unwrap(t.buffer) {
            self.pool.give(buffer);
        }
    }

    /// Uploads `data` as a tensor. GGUF blocks go up in their GPU layout
    /// ([`gpu_layout`](gpuport_kernels::quant::gpu_layout): Q6_K's in groups of eight, every
    /// other type as stored), so `data` must be whole blocks.
    pub fn upload(
        &self,
        data: &[u8],
        elem: Elem,
        shape: &[usize],
        what: &str,
    ) -> Result<Tensor, GpuError> {
        if let Elem::Ggml(ty) = elem {
            if !data.len().is_multiple_of(ty.block_bytes()) {
                return Err(GpuError::Shape(format!(
                    "{what}: {} bytes are not whole {} blocks of {} bytes",
                    data.len(),
                    ty.name(),
                    ty.block_bytes()
                )));
            }
            if quant::gpu_group_bytes(ty) > 1 && !data.is_empty() {
                return self.upload_laid_out(data, ty, shape, what);
            }
        }
        let buffer = self.storage_buffer(data.len() as u64, what)?;
        let t = Tensor {
            buffer,
            offset: 0,
            bytes: data.len() as u64,
            elem,
            shape: shape.to_vec(),
        };
        let mut padded;
        let words = if data.len().is_multiple_of(4) {
            data
        } else {
            padded = data.to_vec();
            padded.resize(t.padded() as usize, 0);
            &padded[..]
        };
        self.queue.write_buffer(&t.buffer, 0, words);
        Ok(t)
    }

    /// [`Gpu::upload`] of GGUF blocks whose GPU layout reorders them (Q6_K's groups): written
    /// straight into the queue's staging memory.
    fn upload_laid_out(
        &self,
        data: &[u8],
        ty: GgmlType,
        shape: &[usize],
        what: &str,
    ) -> Result<Tensor, GpuError> {
        // Whole groups are whole multiples of 16 bytes: no padding to words.
        let bytes = quant::gpu_layout_bytes(ty, data.len()) as u64;
        let buffer = self.storage_buffer(bytes, what)?;
        let staging = wgpu::BufferSize::new(bytes)
            .and_then(|size| self.queue.write_buffer_with(&buffer, 0, size));
        let Some(mut staging) = staging else {
            return Err(GpuError::Validation(format!(
                "{what}: the queue refused {bytes} bytes of staging"
            )));
        };
        quant::write_gpu_layout(ty, data, |at, bytes| {
            staging.slice(at..at + bytes.len()).copy_from_slice(bytes)
        });
        drop(staging);
        Ok(Tensor {
            buffer,
            offset: 0,
            bytes,
            elem: Elem::Ggml(ty),
            shape: shape.to_vec(),
        })
    }

    /// Uploads f32 values.
    pub fn upload_f32(
        &self,
        data: &[f32],
        shape: &[usize],
        what: &str,
    ) -> Result<Tensor, GpuError> {
        self.upload(bytemuck::cast_slice(data), Elem::F32, shape, what)
    }

    /// At least `elems` f32s of the split-K GEMM's partials scratch ([`Gpu`]'s one buffer,
    /// replaced by a larger one when too small: dispatches recorded on the old one keep it
    /// alive). Only the split tensor-core GEMM and its sum use it.
    pub(crate) fn split_scratch(&self, elems: usize) -> Result<Tensor, GpuError> {
        let buffer = self.scratch(&self.split_scratch, 4 * elems as u64, "gemm split partials")?;
        Ok(Tensor {
            offset: 0,
            bytes: buffer.size(),
            elem: Elem::F32,
            shape: vec![(buffer.size() / 4) as usize],
            buffer,
        })
    }

    /// `elems` f16s of the tensor-core GEMM's f16 input rows ([`Gpu`]'s one buffer, grown as
    /// [`Gpu::split_scratch`]'s). Only that GEMM (`ops::gemm`) uses it: each GEMM's input
    /// rows and product are recorded back to back, so the queue orders every use.
    pub(crate) fn x16_scratch(&self, elems: usize) -> Result<Tensor, GpuError> {
        let bytes = 2 * elems as u64;
        let buffer = self.scratch(&self.x16_scratch, bytes, "gemm f16 input")?;
        Ok(Tensor {
            offset: 0,
            bytes,
            elem: Elem::F16,
            shape: vec![elems],
            buffer,
        })
    }

    /// The last buffer of `held`, or a new one of at least `bytes` pushed after it when it is
    /// smaller. Replaced buffers stay in `held`: a recorder's bind-group cache is keyed by
    /// buffer address, which a freed buffer's successor could reuse (and they are few: a
    /// scratch grows to the largest call it serves).
    fn scratch(
        &self,
        held: &parking_lot::Mutex<Vec<Arc<wgpu::Buffer>>>,
        bytes: u64,
        what: &str,
    ) -> Result<Arc<wgpu::Buffer>, GpuError> {
        let mut held = held.lock();
        if let Some(b) = held.last().filter(|b| b.size() >= bytes) {
            return Ok(b.clone());
        }
        let buffer = self.storage_buffer(bytes, what)?;
        held.push(buffer.clone());
        Ok(buffer)
    }

    /// A zero-filled f32 tensor.
    pub fn zeros_f32(&self, shape: &[usize], what: &str) -> Result<Tensor, GpuError> {
        self.zeros(Elem::F32, shape, what)
    }

    /// A zero-filled tensor of f32, f16, i32 or u32 elements (GGUF blocks have no element
    /// size: refused).
    pub fn zeros(&self, elem: Elem, shape: &[usize], what: &str) -> Result<Tensor, GpuError> {
        let Some(size) = elem.bytes() else {
            return Err(GpuError::Shape(format!(
                "a zero-filled {what} of {elem:?} (zeros are f32, f16, i32 or u32)"
            )));
        };
        let elems: usize = shape.iter().product();
        let bytes = size * elems as u64;
        let buffer = self.storage_buffer(bytes, what)?;
        let t = Tensor {
            buffer,
            offset: 0,
            bytes,
            elem,
            shape: shape.to_vec(),
        };
        let mut enc = self.device.create_command_encoder(&Default::default());
        enc.clear_buffer(&t.buffer, 0, Some(t.padded()));
        self.queue.submit([enc.finish()]);
        Ok(t)
    }

    /// Copies a tensor back to the CPU (waits for all submitted work).
    pub fn readback(&self, t: &Tensor) -> Result<Vec<u8>, GpuError> {
        let pending = self.start_readback(t)?;
        self.finish_readback(pending)
    }

    /// Submits the copy of `t` to a mappable buffer and returns at once; work submitted later
    /// keeps running while [`Gpu::finish_readback`] waits for this copy alone.
    pub fn start_readback(&self, t: &Tensor) -> Result<PendingReadback, GpuError> {
        let size = t.padded();
        let staging = self.scoped("allocating a readback buffer", || {
            self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("readback"),
                size,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        })?;
        let mut enc = self.device.create_command_encoder(&Default::default());
        enc.copy_buffer_to_buffer(&t.buffer, t.offset, &staging, 0, size);
        let index = self.queue.submit([enc.finish()]);
        let (tx, rx) = std::sync::mpsc::channel();
        staging.slice(..).map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        Ok(PendingReadback {
            staging,
            index,
            rx,
            bytes: t.bytes,
        })
    }

    /// Waits for a readback's copy (not for work submitted after it) and returns the bytes.
    pub fn finish_readback(&self, p: PendingReadback) -> Result<Vec<u8>, GpuError> {
        self.device
            .poll(wgpu::PollType::Wait {
                submission_index: Some(p.index),
                timeout: None,
            })
            .map_err(|e| GpuError::DeviceLost(e.to_string()))?;
        self.check()?;
        p.rx.recv()
            .map_err(|e| GpuError::Readback(e.to_string()))?
            .map_err(|e| GpuError::Readback(e.to_string()))?;
        let mut bytes = p
            .staging
            .slice(..)
            .get_mapped_range()
            .map_err(|e| GpuError::Readback(e.to_string()))?
            .to_vec();
        p.staging.unmap();
        bytes.truncate(p.bytes as usize);
        Ok(bytes)
    }

    /// Reads an f32 tensor back.
    pub fn readback_f32(&self, t: &Tensor) -> Result<Vec<f32>, GpuError> {
        let bytes = self.readback(t)?;
        Ok(bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }
}
