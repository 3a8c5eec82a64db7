//! Dequantization and embedding-gather launches (`gpuport_kernels::dequant`).

use gpuport_kernels::{dequant, grid_2d};

use super::{ggml_type, launch, matrix, weight_chunks, whole};
use crate::device::Gpu;
use crate::error::GpuError;
use crate::recorder::Recorder;
use crate::tensor::Tensor;

/// Records the dequantization of `w` (whole blocks) into f32 `out`.
pub fn dequantize(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    w: &Tensor,
    out: &Tensor,
    wg: u32,
) -> Result<(), GpuError> {
    let ty = ggml_type(w)?;
    let elems = w.shape.iter().product::<usize>();
    if out.shape.iter().product::<usize>() != elems {
        return Err(GpuError::Shape(format!(
            "dequantizing {elems} elements into {:?}",
            out.shape
        )));
    }
    let groups = (elems as u32).div_ceil(wg);
    let grid = grid_2d(groups, gpu.limits().max_compute_workgroups_per_dimension);
    let p = dequant::DequantParams {
        elems: elems as u32,
        w_offset: 0,
        grid_x: grid.0,
        pad: 0,
    };
    launch(gpu, rec, &dequant::spec(ty, wg), &p, &[w, out], grid)
}

/// Records the lookup of rows `ids[id_offset..id_offset + tokens]` (u32) of the `[rows, cols]`
/// `table` into f32 `out` (`[tokens, cols]`), scaled by `scale`; ids past the table give zero
/// rows. Tables larger than one storage binding are bound in row chunks, one dispatch each.
#[derive(Clone, Copy)]
pub struct Embed<'a> {
    /// The table `[rows, cols]` (any GGUF type).
    pub table: &'a Tensor,
    /// Token ids (u32).
    pub ids: &'a Tensor,
    /// The first id used.
    pub id_offset: usize,
    /// The rows, f32 `[tokens, cols]`.
    pub out: &'a Tensor,
    /// Multiplier (1 for none).
    pub scale: f32,
}

/// Records an [`Embed`] (tables larger than one storage binding in row chunks).
pub fn embed(gpu: &Gpu, rec: &mut Recorder<'_>, call: Embed<'_>) -> Result<(), GpuError> {
    let limit = gpu.limits().max_storage_buffer_binding_size;
    embed_chunked(gpu, rec, call, limit)
}

/// [`embed()`] with an explicit largest binding (tests force chunking with a small one).
pub fn embed_chunked(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    call: Embed<'_>,
    max_binding: u64,
) -> Result<(), GpuError> {
    let Embed {
        table: w,
        ids,
        id_offset,
        out,
        scale,
    } = call;
    let (ty, rows, cols, row_bytes) = matrix(w)?;
    let tokens = out.shape.iter().product::<usize>() / cols.max(1);
    if out.shape.iter().product::<usize>() != tokens * cols
        || ids.shape.iter().product::<usize>() < id_offset + tokens
    {
        return Err(GpuError::Shape(format!(
            "embedding ids {id_offset}.. of {:?} ({cols} columns) into {:?}",
            ids.shape, out.shape
        )));
    }
    let limits = gpu.limits();
    let chunks = weight_chunks(gpu, w, ty, rows, row_bytes, max_binding)?;
    let wg = 256;
    let grid = grid_2d(
        ((tokens * cols) as u32).div_ceil(wg),
        limits.max_compute_workgroups_per_dimension,
    );
    let pipeline = gpu.pipeline(&dequant::embed_spec(ty, wg))?;
    for (first, n, byte_offset, len) in chunks {
        let p = dequant::EmbedParams {
            tokens: tokens as u32,
            cols: cols as u32,
            row_bytes: row_bytes as u32,
            rows: rows as u32,
            scale,
            grid_x: grid.0,
            first_row: first as u32,
            chunk_rows: n as u32,
            id_offset: id_offset as u32,
            pad: [0; 3],
        };
        let slot = rec.uniform(&p)?;
        let storage = [(w, byte_offset, len), (ids, 0, ids.padded()), whole(out)];
        rec.launch(&pipeline, slot, &storage, (grid.0, grid.1, 1));
    }
    Ok(())
}
