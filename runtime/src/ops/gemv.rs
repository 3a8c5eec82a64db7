//! GEMV launches (`gpuport_kernels::gemv`): one matrix times one vector, with the fused input
//! forms.

use gpuport_kernels::gemv::{self, GemvInput};

use super::{ggml_type, matrix, weight_chunks, whole};
use crate::device::Gpu;
use crate::error::GpuError;
use crate::recorder::Recorder;
use crate::tensor::Tensor;

/// One GEMV launch: `y[y_first..y_first + rows] = W · input(x)`, plus `residual` when set.
#[derive(Clone, Copy)]
pub struct GemvCall<'a> {
    /// The matrix `[rows, cols]`.
    pub w: &'a Tensor,
    /// The input binding: `cols` elements, or `2 cols` for the GLU forms.
    pub x: &'a Tensor,
    /// The output.
    pub y: &'a Tensor,
    /// Element of `y` the first row goes to.
    pub y_first: usize,
    /// Added to the output (same indexing as `y`).
    pub residual: Option<&'a Tensor>,
    /// How the input vector is formed from `x`.
    pub input: GemvInput,
    /// The norm weights (`cols` f32; `2 cols` for the folded forms) and epsilon of the norm
    /// input forms.
    pub norm: Option<(&'a Tensor, f32)>,
    /// The residual stream a folded input form adds the post-norm to, and where the new
    /// residual row goes (one GEMV of the input's projections writes it).
    pub fold: Option<(&'a Tensor, Option<&'a Tensor>)>,
}

impl<'a> GemvCall<'a> {
    /// `y = W x`.
    pub fn new(w: &'a Tensor, x: &'a Tensor, y: &'a Tensor) -> GemvCall<'a> {
        GemvCall {
            w,
            x,
            y,
            y_first: 0,
            residual: None,
            input: GemvInput::Plain,
            norm: None,
            fold: None,
        }
    }
}

/// Records `y = W x` for `w` of shape `[rows, cols]`, f32 `x` of `cols` and f32 `y` of `rows`.
/// Weights larger than one storage binding are bound in row chunks.
pub fn gemv(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    w: &Tensor,
    x: &Tensor,
    y: &Tensor,
    t: gemv::GemvTunables,
) -> Result<(), GpuError> {
    gemv_call(gpu, rec, GemvCall::new(w, x, y), t)
}

/// Records `y = W x + r` (the residual add of a transformer block, fused into the GEMV).
pub fn gemv_residual(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    [w, x, r, y]: [&Tensor; 4],
    t: gemv::GemvTunables,
) -> Result<(), GpuError> {
    let call = GemvCall {
        residual: Some(r),
        ..GemvCall::new(w, x, y)
    };
    gemv_call(gpu, rec, call, t)
}

/// Records one [`GemvCall`].
pub fn gemv_call(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    call: GemvCall<'_>,
    t: gemv::GemvTunables,
) -> Result<(), GpuError> {
    let limit = gpu.limits().max_storage_buffer_binding_size;
    gemv_chunked(gpu, rec, call, t, limit)
}

fn check_gemv(call: &GemvCall<'_>, rows: usize, cols: usize) -> Result<(), GpuError> {
    let n = |t: &Tensor| t.shape.iter().product::<usize>();
    let bad = |what: String| Err(GpuError::Shape(format!("GEMV [{rows}, {cols}]: {what}")));
    // The attention combine reads the first x_len elements of the partials scratch.
    let x_fits = match call.input {
        // Every limit of the form (head width, blocks, workgroup memory) as its constructor
        // checks them: the enum's fields are public.
        gemv::GemvInput::AttnCombine { head_dim, blocks } => {
            let heads = cols / head_dim.max(1) as usize;
            heads * head_dim as usize == cols
                && gemv::GemvInput::attention_combine(heads as u32, head_dim, blocks)
                    == Some(call.input)
                && n(call.x) >= call.input.x_len(cols)
        }
        gemv::GemvInput::Q8Blocks => {
            n(call.x) == call.input.x_len(cols) && cols.is_multiple_of(32) && {
                let ty = ggml_type(call.w)?;
                gemv::takes_q8_input(ty)
            }
        }
        _ => n(call.x) == call.input.x_len(cols),
    };
    if !x_fits {
        return bad(format!("x {:?} for {:?} input", call.x.shape, call.input));
    }
    if n(call.y) < call.y_first + rows {
        return bad(format!(
            "y {:?} from element {}",
            call.y.shape, call.y_first
        ));
    }
    if let Some(r) = call.residual
        && n(r) != n(call.y)
    {
        return bad(format!(
            "residual {:?} for output {:?}",
            r.shape, call.y.shape
        ));
    }
    match (call.input.norm_weights(cols), call.norm) {
        (Some(want), Some((w, _))) if n(w) == want => {}
        (None, None) => {}
        _ => {
            return bad(format!(
                "{:?} input with norm weights {:?}",
                call.input,
                call.norm.map(|(w, _)| &w.shape)
            ));
        }
    }
    match (call.input.is_folded(), call.fold) {
        (false, None) => Ok(()),
        (true, Some((r, out)))
            if n(r) == cols && out.is_none_or(|o| n(o) == cols) && call.residual.is_none() =>
        {
            Ok(())
        }
        _ => bad(format!(
            "{:?} input with folded residual {:?} and an output residual {}",
            call.input,
            call.fold.map(|(r, _)| &r.shape),
            call.residual.is_some()
        )),
    }
}

/// [`gemv_call()`] with an explicit largest binding (tests force splitting with a small one).
pub fn gemv_chunked(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    call: GemvCall<'_>,
    t: gemv::GemvTunables,
    max_binding: u64,
) -> Result<(), GpuError> {
    let (ty, rows, cols, row_bytes) = matrix(call.w)?;
    check_gemv(&call, rows, cols)?;
    let pipeline = gpu.pipeline(&gemv::spec_with(ty, t, call.input, cols))?;
    let row_bytes = row_bytes as u64;
    let limits = gpu.limits();
    let chunks = weight_chunks(gpu, call.w, ty, rows, row_bytes as usize, max_binding)?;
    for (first, n, byte_offset, len) in chunks {
        let (mut p, grid) = gemv::params(
            ty,
            n as u32,
            cols,
            0,
            t,
            limits.max_compute_workgroups_per_dimension,
        )
        .map_err(|e| GpuError::Shape(e.to_string()))?;
        p.y_offset = (call.y_first + first as usize) as u32;
        // The first chunk alone writes a folded form's new residual row.
        let weights = (call.w, byte_offset, len);
        dispatch_gemv(rec, &pipeline, p, &call, weights, call.y, first == 0, grid)?;
    }
    Ok(())
}

/// Records the input vector of `call` (`call.input` applied to `call.x`: what its GEMV
/// multiplies) into `out` in one workgroup, and a folded form's new residual row: for a GEMV
/// of many thousand workgroups, repeating the input form's reductions in each costs more than
/// this dispatch. `out` holds `cols` f32 (follow with a plain GEMV of it), or with `quantized`
/// the int8 blocks of [`gemv::GemvInput::Q8Blocks`] (`cols / 32 * 12` words; follow with
/// that GEMV).
pub fn gemv_input(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    call: GemvCall<'_>,
    t: gemv::GemvTunables,
    out: &Tensor,
    quantized: bool,
) -> Result<(), GpuError> {
    let (ty, rows, cols, row_bytes) = matrix(call.w)?;
    check_gemv(&call, rows, cols)?;
    let want = if quantized {
        cols.is_multiple_of(32)
            .then(|| gemv::GemvInput::Q8Blocks.x_len(cols))
    } else {
        Some(cols)
    };
    if want != Some(out.shape.iter().product::<usize>()) || rows == 0 {
        return Err(GpuError::Shape(format!(
            "the input vector of a GEMV [{rows}, {cols}] into {:?}{}",
            out.shape,
            if quantized { " as int8 blocks" } else { "" }
        )));
    }
    let pipeline = gpu.pipeline(&gemv::input_only_spec(ty, t, call.input, cols, quantized))?;
    let (p, _) = gemv::params(ty, 1, cols, 0, t, 1).map_err(|e| GpuError::Shape(e.to_string()))?;
    let weights = (call.w, 0, (row_bytes as u64).div_ceil(4) * 4);
    dispatch_gemv(rec, &pipeline, p, &call, weights, out, true, (1, 1))
}

/// Fills the input-form fields of `p`, binds `call`'s tensors (weights as given, output `y`)
/// and records the dispatch.
#[allow(clippy::too_many_arguments)]
fn dispatch_gemv(
    rec: &mut Recorder<'_>,
    pipeline: &crate::pipeline::Pipeline,
    mut p: gemv::GemvParams,
    call: &GemvCall<'_>,
    weights: (&Tensor, u64, u64),
    y: &Tensor,
    writes_row: bool,
    grid: (u32, u32),
) -> Result<(), GpuError> {
    let (fold_in, fold_out) = match call.fold {
        Some((r, out)) => (Some(r), out),
        None => (None, None),
    };
    p.residual = u32::from(call.residual.is_some());
    p.x_aux = p.units_per_row * gemv::unit(ggml_type(weights.0)?).0 / 4;
    p.eps = call.norm.map_or(0.0, |(_, eps)| eps);
    p.w_one = call.input.w_one();
    p.write_x = u32::from(fold_out.is_some() && writes_row);
    if let gemv::GemvInput::AttnCombine { head_dim, blocks } = call.input {
        (p.head_dim, p.blocks) = (head_dim, blocks);
    }
    let slot = rec.uniform(&p)?;
    let x = call.x;
    let residual = whole(call.residual.or(fold_in).unwrap_or(x));
    let grid = (grid.0, grid.1, 1);
    if call.input == gemv::GemvInput::Q8Blocks {
        // gemv_q8.wgsl has no input forms: weights, x, y, residual.
        rec.launch(
            pipeline,
            slot,
            &[weights, whole(x), whole(y), residual],
            grid,
        );
    } else {
        let storage = [
            weights,
            whole(x),
            whole(y),
            residual,
            whole(call.norm.map_or(x, |(w, _)| w)),
            whole(fold_out.unwrap_or(y)),
        ];
        rec.launch(pipeline, slot, &storage, grid);
    }
    Ok(())
}
