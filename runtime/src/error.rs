//! The runtime's typed errors. Each carries a stable code so callers branch without parsing a
//! message.

/// What went wrong on the GPU side.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GpuError {
    /// No adapter matched (no GPU, no driver, or a filter that matched nothing).
    #[error("no GPU adapter: {0}")]
    NoAdapter(String),
    /// The adapter refused the device request.
    #[error("could not open the GPU device: {0}")]
    RequestDevice(String),
    /// The device was lost; every later result would be garbage, so nothing is returned.
    #[error("the GPU device was lost: {0}")]
    DeviceLost(String),
    /// An allocation did not fit.
    #[error("out of GPU memory while {0}")]
    OutOfMemory(String),
    /// wgpu rejected a command or resource (a bug in gpuport, reported rather than ignored).
    #[error("GPU validation error: {0}")]
    Validation(String),
    /// The adapter lacks a feature this operation needs.
    #[error("this adapter lacks {0}")]
    MissingFeature(&'static str),
    /// A buffer or binding larger than the adapter allows.
    #[error("{what} needs {bytes} bytes, the adapter allows {limit}")]
    TooLarge {
        /// What was being created.
        what: String,
        /// Bytes needed.
        bytes: u64,
        /// The adapter's limit.
        limit: u64,
    },
    /// A shape the kernel cannot take.
    #[error("bad shape: {0}")]
    Shape(String),
    /// Mapping a buffer for readback failed.
    #[error("readback failed: {0}")]
    Readback(String),
    /// The disk cache of compiled pipelines could not be written (its path and the cause).
    #[error("pipeline cache: {0}")]
    PipelineCache(String),
}

impl GpuError {
    /// A stable code for callers and JSON output.
    pub fn code(&self) -> &'static str {
        match self {
            GpuError::NoAdapter(_) => "NO_GPU",
            GpuError::RequestDevice(_) => "NO_GPU",
            GpuError::DeviceLost(_) => "DEVICE_LOST",
            GpuError::OutOfMemory(_) => "OUT_OF_MEMORY",
            GpuError::Validation(_) => "GPU_VALIDATION",
            GpuError::MissingFeature(_) => "MISSING_FEATURE",
            GpuError::TooLarge { .. } => "TOO_LARGE",
            GpuError::Shape(_) => "BAD_REQUEST",
            GpuError::Readback(_) => "READBACK_FAILED",
            GpuError::PipelineCache(_) => "PIPELINE_CACHE",
        }
    }
}
