//! Typed launches of the kernels crate's families onto a [`Recorder`], one module per family
//! of `gpuport_kernels` (`attention`, `dequant`, `gemm`, `gemv`, `rowops`, `sample`,
//! `stream`, `vision`): shapes are checked, tensors larger than one storage binding are split, and grids
//! respect the adapter's limits. Every launch takes its tensors by name (a call struct), never
//! as a positional array.

use gpuport_kernels::quant::GgmlType;
use gpuport_kernels::{KernelSpec, Reduction, grid_2d};

use crate::device::Gpu;
use crate::error::GpuError;
use crate::recorder::Recorder;
use crate::tensor::{Elem, Tensor};

mod attention;
mod dequant;
mod gemm;
mod gemv;
mod rowops;
mod sample;
mod stream;
mod vision;
pub use attention::*;
pub use dequant::*;
pub use gemm::*;
pub use gemv::*;
pub use rowops::*;
pub use sample::*;
pub use stream::*;
pub use vision::*;

/// The GGUF type a weight tensor is stored in (f32/f16 tensors as those types).
pub fn ggml_type(t: &Tensor) -> Result<GgmlType, GpuError> {
    match t.elem {
        Elem::Ggml(ty) => Ok(ty),
        Elem::F32 => Ok(GgmlType::F32),
        Elem::F16 => Ok(GgmlType::F16),
        other => Err(GpuError::Shape(format!(
            "{other:?} weights have no GEMV kernel"
        ))),
    }
}

/// A storage binding of the whole of `t`: (tensor, offset within it, padded length).
pub(crate) fn whole(t: &Tensor) -> (&Tensor, u64, u64) {
    (t, 0, t.padded())
}

/// Uploads `params`, binds `tensors` after it (bindings 1..), and records the dispatch.
pub(crate) fn launch<P: bytemuck::Pod>(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    spec: &KernelSpec,
    params: &P,
    tensors: &[&Tensor],
    grid: (u32, u32),
) -> Result<(), GpuError> {
    launch_3d(gpu, rec, spec, params, tensors, (grid.0, grid.1, 1))
}

/// [`launch`] with a 3-D grid.
pub(crate) fn launch_3d<P: bytemuck::Pod>(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    spec: &KernelSpec,
    params: &P,
    tensors: &[&Tensor],
    grid: (u32, u32, u32),
) -> Result<(), GpuError> {
    let pipeline = gpu.pipeline(spec)?;
    let slot = rec.uniform(params)?;
    let storage: Vec<(&Tensor, u64, u64)> = tensors.iter().map(|t| whole(t)).collect();
    rec.launch(&pipeline, slot, &storage, grid);
    Ok(())
}

/// A 2-D matrix of GGUF rows: `(type, rows, cols, bytes per row)`.
pub(super) fn matrix(w: &Tensor) -> Result<(GgmlType, usize, usize, usize), GpuError> {
    let ty = ggml_type(w)?;
    let [rows, cols] = w.shape[..] else {
        return Err(GpuError::Shape(format!(
            "a weight matrix must be 2-D, got {:?}",
            w.shape
        )));
    };
    let row_bytes = ty.row_bytes(cols).ok_or_else(|| {
        GpuError::Shape(format!(
            "{cols} columns of {} are not whole blocks",
            ty.name()
        ))
    })?;
    Ok((ty, rows, cols, row_bytes))
}

/// Row ranges `(first_row, rows, byte_offset)` of a row-major matrix such that each range fits
/// one storage binding and starts at an offset the adapter accepts. Weight matrices go through
/// [`weight_chunks`], which adds their GPU layout's groups.
pub(crate) fn row_chunks(
    rows: u64,
    row_bytes: u64,
    max_binding: u64,
    align: u64,
) -> Result<Vec<(u64, u64, u64)>, GpuError> {
    if rows * row_bytes <= max_binding {
        return Ok(vec![(0, rows, 0)]);
    }
    if row_bytes > max_binding {
        return Err(GpuError::TooLarge {
            what: "one matrix row".into(),
            bytes: row_bytes,
            limit: max_binding,
        });
    }
    // Chunk starts must be multiples of `align` bytes: step in multiples of this many rows.
    let step = align / gcd(align, row_bytes);
    let per_chunk = (max_binding / row_bytes) / step * step;
    if per_chunk == 0 {
        return Err(GpuError::TooLarge {
            what: format!("{step} aligned rows"),
            bytes: step * row_bytes,
            limit: max_binding,
        });
    }
    let mut out = Vec::new();
    let mut first = 0;
    while first < rows {
        let n = per_chunk.min(rows - first);
        out.push((first, n, first * row_bytes));
        first += n;
    }
    Ok(out)
}

/// Row ranges of the weight matrix `w` of `ty` (`rows` rows of `row_bytes`, GGUF sizes) that
/// each fit one storage binding of `max_binding` bytes: `(first_row, rows, byte_offset,
/// binding_bytes)`. A range starts where the adapter takes a binding offset and on a group of
/// the type's GPU layout (a Q6_K group of eight blocks, `gpuport_kernels::quant::gpu_layout`),
/// and binds the whole groups its rows touch: every range's end is the next one's start but
/// the last's, which binds to the end of the tensor's last group (the range is halved where
/// that would pass `max_binding`).
pub(crate) fn weight_chunks(
    gpu: &Gpu,
    w: &Tensor,
    ty: GgmlType,
    rows: usize,
    row_bytes: usize,
    max_binding: u64,
) -> Result<Vec<(u64, u64, u64, u64)>, GpuError> {
    let group = gpuport_kernels::quant::gpu_group_bytes(ty) as u64;
    let offsets = u64::from(gpu.limits().min_storage_buffer_offset_alignment);
    let align = offsets / gcd(offsets, group) * group;
    let row_bytes = row_bytes as u64;
    let mut chunks = row_chunks(rows as u64, row_bytes, max_binding, align)?;
    let binding = |offset: u64, n: u64| {
        let end = (offset + n * row_bytes)
            .next_multiple_of(group)
            .min(w.padded());
        // A shape that claims more rows than were uploaded binds nothing past the buffer.
        end.saturating_sub(offset).div_ceil(4) * 4
    };
    if let Some(&(first, n, offset)) = chunks.last()
        && binding(offset, n) > max_binding
    {
        // Halve it on an aligned row: the first half ends where the second starts.
        let step = align / gcd(align, row_bytes);
        let half = n / 2 / step * step;
        if half == 0 || binding(offset + half * row_bytes, n - half) > max_binding {
            return Err(GpuError::TooLarge {
                what: format!("{n} rows and their {} group", ty.name()),
                bytes: binding(offset, n),
                limit: max_binding,
            });
        }
        chunks.pop();
        chunks.push((first, half, offset));
        chunks.push((first + half, n - half, offset + half * row_bytes));
    }
    Ok(chunks
        .into_iter()
        .map(|(first, n, offset)| (first, n, offset, binding(offset, n)))
        .collect())
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// The whole-workgroup reduction to use here.
pub(super) fn reduction(gpu: &Gpu) -> Reduction {
    if gpu.has_subgroups() {
        Reduction::Subgroup
    } else {
        Reduction::Shared
    }
}

pub(super) fn elems(t: &Tensor) -> usize {
    t.shape.iter().product()
}

pub(super) fn row_grid(gpu: &Gpu, rows: usize) -> (u32, u32) {
    grid_2d(
        rows as u32,
        gpu.limits().max_compute_workgroups_per_dimension,
    )
}

/// The environment variable `name` parsed, else `default` (unset or unparsable): how a tuning
/// knob (`GPUPORT_…`) is read.
pub fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A tuning knob read once into `cell`: its value when the variable is set and parses, else
/// `None` (the caller's default may then depend on the call).
pub(crate) fn knob_set<T: std::str::FromStr + Copy>(
    cell: &std::sync::OnceLock<Option<T>>,
    name: &str,
) -> Option<T> {
    *cell.get_or_init(|| std::env::var(name).ok()?.parse().ok())
}

/// A tuning knob read once ([`env_or`] into `cell`).
pub(crate) fn knob<T: std::str::FromStr + Copy>(
    cell: &std::sync::OnceLock<T>,
    name: &str,
    default: T,
) -> T {
    *cell.get_or_init(|| env_or(name, default))
}

#[cfg(test)]
mod tests {
    use super::row_chunks;

    #[test]
    fn chunks_fit_bindings_and_alignment() {
        // Gemma 3's Q8_0 embedding: 262144 rows of 680 bytes, lavapipe's 128 MiB bindings.
        let chunks = row_chunks(262_144, 680, 128 << 20, 256).unwrap();
        assert!(chunks.len() == 2);
        for (first, n, off) in &chunks {
            assert_eq!(off % 256, 0);
            assert!(n * 680 <= 128 << 20);
            assert_eq!(*off, first * 680);
        }
        assert_eq!(chunks.iter().map(|c| c.1).sum::<u64>(), 262_144);
        assert!(row_chunks(10, 1 << 30, 1 << 20, 256).is_err());
    }
}
