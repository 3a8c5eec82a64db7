//! # gpuport-runtime
//!
//! The GPU layer every executor stands on: a wgpu [`Gpu`] opened with the adapter's full limits
//! and the features gpuport uses, [`Tensor`]s with upload and readback, a buffer pool, a
//! pipeline cache keyed by kernel variant, and the [`Recorder`] that keeps one compute pass open
//! until a flush. Device loss and out-of-memory surface as typed [`GpuError`]s.
//!
//! ```no_run
//! use gpuport_runtime::{Gpu, GpuOptions, Recorder, ops};
//! use gpuport_kernels::gemv::GemvTunables;
//!
//! let gpu = Gpu::new(&GpuOptions::default())?;
//! let w = gpu.upload_f32(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], &[2, 4], "w")?;
//! let x = gpu.upload_f32(&[1.0, 1.0, 1.0, 1.0], &[4], "x")?;
//! let y = gpu.zeros_f32(&[2], "y")?;
//! let mut rec = Recorder::new(&gpu);
//! ops::gemv(&gpu, &mut rec, &w, &x, &y, GemvTunables::default_for(gpu.has_subgroups()))?;
//! rec.submit()?;
//! assert_eq!(gpu.readback_f32(&y)?, [10.0, 26.0]);
//! # Ok::<(), gpuport_runtime::GpuError>(())
//! ```

pub mod bench;
pub mod device;
pub mod error;
pub mod ops;
pub mod pipeline;
pub mod pool;
pub mod recorder;
pub mod tensor;
pub mod tuning;

/// The GGUF reader and writer ([`gpuport_gguf`]), re-exported for the executors built on this
/// crate.
pub use gpuport_gguf as gguf;

pub use device::{AdapterReport, Gpu, GpuOptions};
pub use error::GpuError;
pub use recorder::{Recorder, RecorderCache, RecorderStats};
pub use tensor::{Elem, PendingReadback, Tensor};
