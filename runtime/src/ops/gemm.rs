//! Tiled GEMM launches (`gpuport_kernels::gemm`): a batch of rows times one matrix.

use gpuport_kernels::gemm::{self, GemmParams, GemmTile};
use gpuport_kernels::gemv::GemvInput;

use super::{elems, matrix, row_chunks, whole};
use crate::device::Gpu;
use crate::error::GpuError;
use crate::recorder::Recorder;
use crate::tensor::Tensor;

/// One GEMM: `Y[t, y_first + r] = (W input(X[t]))[r] (+ residual or bias)` for `tokens` token
/// rows.
#[derive(Clone, Copy)]
pub struct GemmCall<'a> {
    /// The matrix `[rows, cols]`.
    pub w: &'a Tensor,
    /// The input, `tokens` rows of `x_stride` elements (at least `input.x_len(cols)`).
    pub x: &'a Tensor,
    /// The output, `tokens` rows of `y_stride` elements.
    pub y: &'a Tensor,
    /// Tokens (rows of X and Y).
    pub tokens: usize,
    /// Elements per row of X.
    pub x_stride: usize,
    /// Elements per row of Y.
    pub y_stride: usize,
    /// Column of Y the first row of W goes to.
    pub y_first: usize,
    /// Added to the output (same indexing as `y`).
    pub residual: Option<&'a Tensor>,
    /// Added to every token's row: element `y_first + r` to column `y_first + r` (at least
    /// `y_first + rows` elements; a stacked projection's biases side by side). Not with
    /// `residual`.
    pub bias: Option<&'a Tensor>,
    /// Plain or a GLU of each X row's two halves.
    pub input: GemvInput,
}

/// Records one [`GemmCall`] (weights larger than one binding in row chunks).
pub fn gemm(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    call: GemmCall<'_>,
    tile: GemmTile,
) -> Result<(), GpuError> {
    let (ty, rows, cols, row_bytes) = matrix(call.w)?;
    let width = call.input.x_len(cols);
    let rows_of = |t: &Tensor, stride: usize| elems(t) / stride.max(1);
    let ok = gemm::INPUTS.contains(&call.input)
        && call.x_stride >= width
        && call.y_stride >= call.y_first + rows
        && rows_of(call.x, call.x_stride) >= call.tokens
        && rows_of(call.y, call.y_stride) >= call.tokens
        && call.residual.is_none_or(|r| elems(r) == elems(call.y))
        && !call.y.shares_buffer(call.x)
        && call.residual.is_none_or(|r| !call.y.shares_buffer(r))
        && call.bias.is_none_or(|b| {
            call.residual.is_none() && elems(b) >= call.y_first + rows && !call.y.shares_buffer(b)
        })
        && call.tokens as u64 <= u64::from(tile.tm) * u64::from(u16::MAX);
    if !ok {
        return Err(GpuError::Shape(format!(
            "GEMM [{rows}, {cols}] ({:?} input) of {} tokens: x {:?} (stride {}), y {:?} \
             (stride {}, from column {}), residual {:?}, bias {:?}",
            call.input,
            call.tokens,
            call.x.shape,
            call.x_stride,
            call.y.shape,
            call.y_stride,
            call.y_first,
            call.residual.map(|r| &r.shape),
            call.bias.map(|b| &b.shape)
        )));
    }
    let limits = gpu.limits();
    if !GemmTile::all().contains(&tile) {
        return Err(GpuError::Shape(format!(
            "GEMM tile {tile:?}: sides must be among {:?}",
            gemm::TILE_VALUES
        )));
    }
    if tile.workgroup_bytes() > limits.max_compute_workgroup_storage_size {
        return Err(GpuError::Shape(format!(
            "GEMM tile {tile:?} takes {} bytes of workgroup memory, the adapter allows {}",
            tile.workgroup_bytes(),
            limits.max_compute_workgroup_storage_size
        )));
    }
    if rows == 0 || call.tokens == 0 {
        return Ok(());
    }
    let pipeline = gpu.pipeline(&gemm::spec(ty, tile, call.input))?;
    let chunks = row_chunks(
        rows as u64,
        row_bytes as u64,
        limits.max_storage_buffer_binding_size,
        u64::from(limits.min_storage_buffer_offset_alignment),
    )?;
    for (first, n, byte_offset) in chunks {
        let p = GemmParams {
            rows: n as u32,
            cols: cols as u32,
            tokens: call.tokens as u32,
            row_bytes: row_bytes as u32,
            w_offset: 0,
            x_offset: 0,
            x_stride: call.x_stride as u32,
            x_aux: cols as u32,
            y_offset: (call.y_first + first as usize) as u32,
            y_stride: call.y_stride as u32,
            residual: match (call.residual, call.bias) {
                (Some(_), _) => 1,
                (None, Some(_)) => 2,
                (None, None) => 0,
            },
            pad: 0,
        };
        let grid = (
            (n as u32).div_ceil(tile.tn),
            (call.tokens as u32).div_ceil(tile.tm),
        );
        if grid.0 > limits.max_compute_workgroups_per_dimension {
            return Err(GpuError::Shape(format!(
                "GEMM of {n} rows needs {} row tiles, more than the adapter's {}",
                grid.0, limits.max_compute_workgroups_per_dimension
            )));
        }
        let slot = rec.uniform(&p)?;
        let len = (n * row_bytes as u64).div_ceil(4) * 4;
        let bindings = [
            (call.w, byte_offset, len),
            whole(call.x),
            whole(call.y),
            whole(call.residual.or(call.bias).unwrap_or(call.x)),
        ];
        let group = rec.bind_group(&pipeline, slot, &bindings);
        rec.dispatch(&pipeline, &group, (grid.0, grid.1, 1));
    }
    Ok(())
}
