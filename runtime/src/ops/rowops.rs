//! Launches of the row and elementwise kernels (`gpuport_kernels::rowops`).

use gpuport_kernels::grid_2d;
use gpuport_kernels::rowops::{self, ElementOp, NormKind, Q8Out};

use super::{elems, launch, reduction, row_grid};
use crate::device::Gpu;
use crate::error::GpuError;
use crate::recorder::Recorder;
use crate::tensor::{Elem, Tensor};

/// One normalization: `y = norm(x) * w` per row of `cols`.
#[derive(Clone, Copy)]
pub struct Norm<'a> {
    /// RMSNorm (`w` or `1 + w`) or LayerNorm.
    pub kind: NormKind,
    /// The rows.
    pub x: &'a Tensor,
    /// `cols` weights (LayerNorm: weights then biases, `2 cols`).
    pub w: &'a Tensor,
    /// The output, shaped as `x`.
    pub y: &'a Tensor,
    /// Elements per row.
    pub cols: usize,
    /// Added to the variance.
    pub eps: f32,
}

/// Records a [`Norm`].
pub fn norm(gpu: &Gpu, rec: &mut Recorder<'_>, call: Norm<'_>) -> Result<(), GpuError> {
    let rows = norm_rows(&call, elems(call.x))?;
    launch_norm(gpu, rec, call, rows, NormOut::Rows)
}

/// Where [`launch_norm`] puts the normed rows (`rowops::NormOut`, with the residual).
#[derive(Clone, Copy)]
enum NormOut<'a> {
    Rows,
    Blocks,
    Added(&'a Tensor),
}

/// Records a [`Norm`] whose output `y` is the normed rows' int8 blocks, as the int8-input GEMV
/// reads them ([`gpuport_kernels::gemv::GemvInput::Q8Blocks`]: `12 · cols / 32` words a row):
/// one dispatch where [`norm`] and quantizing the row apart are two, with the same numbers.
/// RMSNorms only, `cols` a multiple of 32.
pub fn norm_blocks(gpu: &Gpu, rec: &mut Recorder<'_>, call: Norm<'_>) -> Result<(), GpuError> {
    if call.kind == NormKind::Layer || call.cols == 0 || !call.cols.is_multiple_of(32) {
        return Err(GpuError::Shape(format!(
            "int8 blocks of a {:?} norm of rows of {} (a multiple of 32)",
            call.kind, call.cols
        )));
    }
    let words = elems(call.x) / call.cols * Q8Blocks::words(call.cols);
    let rows = norm_rows(&call, words)?;
    launch_norm(gpu, rec, call, rows, NormOut::Blocks)
}

/// Records a [`Norm`] added to `residual`: `y = residual + norm(x)` row by row (`residual`
/// shaped as `x`, in another buffer than `y`) — a post-projection norm and its residual add
/// (Gemma 3's sandwich norms) in one dispatch.
pub fn norm_add(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    call: Norm<'_>,
    residual: &Tensor,
) -> Result<(), GpuError> {
    let rows = norm_rows(&call, elems(call.x))?;
    if elems(residual) != elems(call.x) || residual.shares_buffer(call.y) {
        return Err(GpuError::Shape(format!(
            "a norm of {:?} added to {:?} into {:?} (the residual shaped as the rows, in \
             another buffer than the output)",
            call.x.shape, residual.shape, call.y.shape
        )));
    }
    launch_norm(gpu, rec, call, rows, NormOut::Added(residual))
}

/// Checks a [`Norm`] whose output should hold `y_elems` elements; returns its rows.
fn norm_rows(call: &Norm<'_>, y_elems: usize) -> Result<usize, GpuError> {
    let Norm {
        kind,
        x,
        w,
        y,
        cols,
        ..
    } = *call;
    let n = elems(x);
    let want_w = if kind == NormKind::Layer {
        2 * cols
    } else {
        cols
    };
    if cols == 0 || !n.is_multiple_of(cols) || elems(w) != want_w || elems(y) != y_elems {
        return Err(GpuError::Shape(format!(
            "norm of {:?} by rows of {cols} with weights {:?} into {:?}",
            x.shape, w.shape, y.shape
        )));
    }
    Ok(n / cols)
}

/// The norm's workgroup size.
const NORM_WG: u32 = 256;

fn launch_norm(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    call: Norm<'_>,
    rows: usize,
    out: NormOut<'_>,
) -> Result<(), GpuError> {
    let blocks = matches!(out, NormOut::Blocks);
    // Blocks: a workgroup per (256-value chunk, row); else one per row.
    let grid = if blocks {
        let chunks = call.cols.div_ceil(NORM_WG as usize) as u32;
        if rows as u32 > gpu.limits().max_compute_workgroups_per_dimension {
            return Err(GpuError::Shape(format!(
                "int8 blocks of {rows} normed rows (one workgroup row each)"
            )));
        }
        (chunks, rows as u32)
    } else {
        row_grid(gpu, rows)
    };
    let p = rowops::NormParams {
        cols: call.cols as u32,
        rows: rows as u32,
        eps: call.eps,
        grid_x: grid.0,
    };
    let (kind, residual) = match out {
        NormOut::Rows => (rowops::NormOut::Rows, call.x),
        NormOut::Blocks => (rowops::NormOut::Blocks, call.x),
        NormOut::Added(r) => (rowops::NormOut::Added, r),
    };
    let spec = rowops::norm_spec(call.kind, NORM_WG, reduction(gpu), kind);
    launch(
        gpu,
        rec,
        &spec,
        &p,
        &[call.x, call.w, call.y, residual],
        grid,
    )
}

/// One elementwise launch: `out = op(a, b)`.
#[derive(Clone, Copy)]
pub struct Elementwise<'a> {
    /// The operation.
    pub op: ElementOp,
    /// The first operand.
    pub a: &'a Tensor,
    /// The second operand (at least as long as `a`; unary ops ignore it: pass `a`).
    pub b: &'a Tensor,
    /// The result, as long as `a`.
    pub out: &'a Tensor,
    /// The scalar of the ops that take one (scale); 1 otherwise.
    pub s: f32,
}

/// Records an [`Elementwise`].
pub fn elementwise(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    call: Elementwise<'_>,
) -> Result<(), GpuError> {
    let Elementwise { op, a, b, out, s } = call;
    let n = elems(a);
    if elems(out) != n || elems(b) < n {
        return Err(GpuError::Shape(format!(
            "{op:?} of {:?} and {:?} into {:?}",
            a.shape, b.shape, out.shape
        )));
    }
    let wg = 256;
    let grid = grid_2d(
        (n as u32).div_ceil(wg),
        gpu.limits().max_compute_workgroups_per_dimension,
    );
    let p = rowops::ElementParams {
        n: n as u32,
        grid_x: grid.0,
        s,
        pad: 0,
    };
    launch(
        gpu,
        rec,
        &rowops::element_spec(op, wg),
        &p,
        &[a, b, out],
        grid,
    )
}

/// Rotates `x` = `[tokens, heads, head_dim]` in place by the positions in `pos` (u32).
pub fn rope(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    x: &Tensor,
    pos: &Tensor,
    mut p: rowops::RopeParams,
    neox: bool,
) -> Result<(), GpuError> {
    let n = (p.tokens * p.heads * p.head_dim) as usize;
    if elems(x) != n
        || elems(pos) < p.tokens as usize
        || !p.rot_dims.is_multiple_of(2)
        || p.rot_dims > p.head_dim
    {
        return Err(GpuError::Shape(format!("rope {p:?} over {:?}", x.shape)));
    }
    let wg = 256;
    let pairs = p.tokens * p.heads * (p.rot_dims / 2);
    let grid = grid_2d(
        pairs.div_ceil(wg),
        gpu.limits().max_compute_workgroups_per_dimension,
    );
    p.grid_x = grid.0;
    launch(gpu, rec, &rowops::rope_spec(neox, wg), &p, &[x, pos], grid)
}

/// Softmax of each row of `cols`, in place, after `scale` and an optional soft cap.
pub fn softmax(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    x: &Tensor,
    cols: usize,
    scale: f32,
    cap: f32,
) -> Result<(), GpuError> {
    let n = elems(x);
    if cols == 0 || !n.is_multiple_of(cols) {
        return Err(GpuError::Shape(format!(
            "softmax of {:?} by rows of {cols}",
            x.shape
        )));
    }
    let rows = n / cols;
    let grid = row_grid(gpu, rows);
    let p = rowops::SoftmaxParams {
        cols: cols as u32,
        rows: rows as u32,
        scale,
        cap,
        grid_x: grid.0,
        pad: [0; 3],
    };
    launch(
        gpu,
        rec,
        &rowops::softmax_spec(256, reduction(gpu)),
        &p,
        &[x],
        grid,
    )
}

/// The index of the largest element of `x` (ties: the smallest), written on the GPU to
/// `tokens[out_index]` and `out[0]` (u32).
#[derive(Clone, Copy)]
pub struct Argmax<'a> {
    /// The values (f32).
    pub x: &'a Tensor,
    /// Scratch of `2 * ARGMAX_GROUPS` u32.
    pub part: &'a Tensor,
    /// The token buffer the id is written into.
    pub tokens: &'a Tensor,
    /// Where in `tokens`.
    pub out_index: usize,
    /// Also gets the id (`out[0]`; at least 2 u32).
    pub out: &'a Tensor,
}

/// Records an [`Argmax`] (two dispatches).
pub fn argmax(gpu: &Gpu, rec: &mut Recorder<'_>, call: Argmax<'_>) -> Result<(), GpuError> {
    let Argmax {
        x,
        part,
        tokens,
        out_index,
        out,
    } = call;
    let groups = rowops::ARGMAX_GROUPS;
    if elems(part) < 2 * groups as usize || elems(tokens) <= out_index || elems(out) < 2 {
        return Err(GpuError::Shape(format!(
            "argmax of {:?} into tokens {:?} at {out_index}",
            x.shape, tokens.shape
        )));
    }
    let p = rowops::ArgmaxParams {
        n: elems(x) as u32,
        groups,
        out_index: out_index as u32,
        x_stride: 0,
        rows: 0,
        rows_first: 0,
        picks: 0,
        pad: 0,
    };
    argmax_launch(gpu, rec, &p, [x, part, tokens, out, x], 1)
}

/// The two argmax dispatches over `rows` rows.
fn argmax_launch(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    p: &rowops::ArgmaxParams,
    bound: [&Tensor; 5],
    rows: u32,
) -> Result<(), GpuError> {
    let spec = |stage| rowops::argmax_spec(256, stage);
    launch(gpu, rec, &spec(0), p, &bound, (p.groups, rows))?;
    launch(gpu, rec, &spec(1), p, &bound, (1, rows))
}

/// Greedy ids of a batch's sampled rows in two dispatches: row `i` of `x` (`vocab` values,
/// `x_stride` apart) is the logits of the row named by word `picks + i` of the row table
/// `table` (an index from the batch's first row `rows_first`; four words per row: position,
/// page-table base, token index, 0), and its id goes to `tokens[token index + 1]`, where a
/// [`Argmax`] per row would put it.
#[derive(Clone, Copy)]
pub struct ArgmaxRows<'a> {
    /// The rows' values (f32).
    pub x: &'a Tensor,
    /// Values per row.
    pub vocab: usize,
    /// Elements from one row to the next.
    pub x_stride: usize,
    /// Rows.
    pub rows: usize,
    /// Scratch of `2 * ARGMAX_GROUPS * rows` u32.
    pub part: &'a Tensor,
    /// The token buffer.
    pub tokens: &'a Tensor,
    /// The row table (u32).
    pub table: &'a Tensor,
    /// The batch's first row in `table`.
    pub rows_first: usize,
    /// Word of `table` where the sampled rows' indices start.
    pub picks: usize,
}

/// Records an [`ArgmaxRows`] (two dispatches).
pub fn argmax_rows(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    call: ArgmaxRows<'_>,
) -> Result<(), GpuError> {
    let ArgmaxRows {
        x,
        vocab,
        x_stride,
        rows,
        part,
        tokens,
        table,
        rows_first,
        picks,
    } = call;
    let groups = rowops::ARGMAX_GROUPS;
    let fits = rows > 0
        && x_stride >= vocab
        && vocab > 0
        && elems(x) >= (rows - 1) * x_stride + vocab
        && elems(part) >= 2 * groups as usize * rows
        && elems(table) >= picks + rows
        && rows as u32 <= gpu.limits().max_compute_workgroups_per_dimension;
    if !fits {
        return Err(GpuError::Shape(format!(
            "argmax of {rows} rows of {vocab} ({x_stride} apart) in {:?}, partials {:?}, \
             row table {:?} from word {picks}",
            x.shape, part.shape, table.shape
        )));
    }
    let p = rowops::ArgmaxParams {
        n: vocab as u32,
        groups,
        out_index: 0,
        x_stride: x_stride as u32,
        rows: 1,
        rows_first: rows_first as u32,
        picks: picks as u32,
        pad: 0,
    };
    // `out` is unwritten with many rows: bound to the partials.
    argmax_launch(gpu, rec, &p, [x, part, tokens, part, table], rows as u32)
}

/// Row `i` of `dst` = row `idx[idx_first + i idx_stride]` of `src`, for `rows` rows of `width`
/// 32-bit words (`src`, `dst` of any 32-bit element type): the token ids of a batch's rows
/// from the token buffer, or the activation rows whose logits are wanted.
#[derive(Clone, Copy)]
pub struct Gather<'a> {
    /// The rows to pick from.
    pub src: &'a Tensor,
    /// Row indices (u32).
    pub idx: &'a Tensor,
    /// The first index used.
    pub idx_first: usize,
    /// Indices apart between consecutive output rows.
    pub idx_stride: usize,
    /// The picked rows (not in `src`'s buffer).
    pub dst: &'a Tensor,
    /// Rows to pick.
    pub rows: usize,
    /// 32-bit words per row.
    pub width: usize,
}

/// Records a [`Gather`].
pub fn gather(gpu: &Gpu, rec: &mut Recorder<'_>, call: Gather<'_>) -> Result<(), GpuError> {
    let Gather {
        src,
        idx,
        idx_first,
        idx_stride,
        dst,
        rows,
        width,
    } = call;
    let last = idx_first + rows.saturating_sub(1) * idx_stride;
    if rows == 0 {
        return Ok(());
    }
    if elems(dst) < rows * width || elems(idx) <= last || width == 0 || dst.shares_buffer(src) {
        return Err(GpuError::Shape(format!(
            "gather of {rows} rows of {width} from {:?} by {:?} (from {idx_first}, stride \
             {idx_stride}) into {:?}",
            src.shape, idx.shape, dst.shape
        )));
    }
    let wg = 256;
    let grid = grid_2d(
        ((rows * width) as u32).div_ceil(wg),
        gpu.limits().max_compute_workgroups_per_dimension,
    );
    let p = rowops::GatherParams {
        rows: rows as u32,
        width: width as u32,
        idx_first: idx_first as u32,
        idx_stride: idx_stride as u32,
        grid_x: grid.0,
        pad: [0; 3],
    };
    launch(
        gpu,
        rec,
        &rowops::gather_spec(wg),
        &p,
        &[src, idx, dst],
        grid,
    )
}

/// Rounds `rows` rows of `cols` f32 values of `x` in place onto the int8 grid the int8-input
/// GEMV sees ([`gpuport_kernels::gemv::GemvInput::Q8Blocks`]): a GEMM whose one-row GEMV
/// takes int8 input reads its rows through this first, so both compute with the same numbers.
#[derive(Clone, Copy)]
pub struct Q8Round<'a> {
    /// The rows, rounded in place.
    pub x: &'a Tensor,
    /// Rows.
    pub rows: usize,
    /// Values per row (a multiple of 32).
    pub cols: usize,
}

/// Records a [`Q8Round`].
pub fn q8_round(gpu: &Gpu, rec: &mut Recorder<'_>, call: Q8Round<'_>) -> Result<(), GpuError> {
    let Q8Round { x, rows, cols } = call;
    q8_rows(gpu, rec, x, (rows, cols, cols), None, (Q8Out::Rounded, x))
}

/// Gated activations of `[gate | up]` rows in place: each of `rows` rows of `2 · width` f32
/// values of `x` gets `gate(gate) · up` in its first `width` values, rounded onto the int8
/// grid when `round` (then a GEMM reads the rows as [`Q8Round`]ed input, `x_stride`
/// `2 · width`).
#[derive(Clone, Copy)]
pub struct GatedRows<'a> {
    /// The rows, rewritten in place.
    pub x: &'a Tensor,
    /// Rows.
    pub rows: usize,
    /// Values per half row (a multiple of 32).
    pub width: usize,
    /// [`ElementOp::SiluMul`] (SwiGLU) or [`ElementOp::GeluMul`] (GeGLU).
    pub gate: ElementOp,
    /// Round the gated values onto the int8-input GEMV's grid.
    pub round: bool,
}

/// Records a [`GatedRows`].
pub fn gated_rows(gpu: &Gpu, rec: &mut Recorder<'_>, call: GatedRows<'_>) -> Result<(), GpuError> {
    let GatedRows {
        x,
        rows,
        width,
        gate,
        round,
    } = call;
    check_gate(gate)?;
    let out = if round { Q8Out::Rounded } else { Q8Out::Formed };
    q8_rows(gpu, rec, x, (rows, width, 2 * width), Some(gate), (out, x))
}

/// Rows of `x` — plain, or `[gate | up]` rows gated by `gate` — written out as the int8-input
/// GEMV's blocks ([`gpuport_kernels::gemv::GemvInput::Q8Blocks`], [`Q8Blocks::words`] per
/// row) with the numbers [`Q8Round`] and [`GatedRows`] round them to: the one-row path's input
/// of a projection that takes int8 blocks, in one dispatch. `x` is left as it is.
#[derive(Clone, Copy)]
pub struct Q8Blocks<'a> {
    /// The rows (`2 · width` values each when gated, else `width`).
    pub x: &'a Tensor,
    /// Rows.
    pub rows: usize,
    /// Values per output row (a multiple of 32).
    pub width: usize,
    /// `None`, or [`ElementOp::SiluMul`] (SwiGLU) or [`ElementOp::GeluMul`] (GeGLU).
    pub gate: Option<ElementOp>,
    /// The blocks.
    pub blocks: &'a Tensor,
}

impl Q8Blocks<'_> {
    /// Words (elements of a 4-byte tensor) of the blocks of a row of `width` values.
    pub fn words(width: usize) -> usize {
        gpuport_kernels::gemv::GemvInput::Q8Blocks.x_len(width)
    }
}

/// Records a [`Q8Blocks`].
pub fn q8_blocks(gpu: &Gpu, rec: &mut Recorder<'_>, call: Q8Blocks<'_>) -> Result<(), GpuError> {
    let Q8Blocks {
        x,
        rows,
        width,
        gate,
        blocks,
    } = call;
    if let Some(g) = gate {
        check_gate(g)?;
    }
    let stride = if gate.is_some() { 2 * width } else { width };
    if elems(blocks) < rows * Q8Blocks::words(width) {
        return Err(GpuError::Shape(format!(
            "int8 blocks of {rows} rows of {width} into {:?}",
            blocks.shape
        )));
    }
    q8_rows(
        gpu,
        rec,
        x,
        (rows, width, stride),
        gate,
        (Q8Out::Blocks, blocks),
    )
}

fn check_gate(gate: ElementOp) -> Result<(), GpuError> {
    if matches!(gate, ElementOp::SiluMul | ElementOp::GeluMul) {
        Ok(())
    } else {
        Err(GpuError::Shape(format!(
            "{gate:?} is not a gated activation"
        )))
    }
}

/// `q8_round.wgsl` over `rows` rows of `cols` output values, `stride` values apart, made into
/// `out` (the blocks' tensor for [`Q8Out::Blocks`], else `x` itself).
fn q8_rows(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    x: &Tensor,
    (rows, cols, stride): (usize, usize, usize),
    gate: Option<ElementOp>,
    (out, dst): (Q8Out, &Tensor),
) -> Result<(), GpuError> {
    if rows == 0 || cols == 0 {
        return Ok(());
    }
    if !cols.is_multiple_of(32) || elems(x) < rows * stride || x.elem != Elem::F32 {
        return Err(GpuError::Shape(format!(
            "{} of {rows} rows of {cols} (a multiple of 32) in {:?} {:?}",
            match gate {
                None => "int8 rounding".to_string(),
                Some(g) => format!("{g:?} rows ({out:?})"),
            },
            x.elem,
            x.shape
        )));
    }
    // A thread per four values, eight per block.
    let wg = 256;
    let blocks = rows * cols / 32;
    let grid = grid_2d(
        (8 * blocks as u32).div_ceil(wg),
        gpu.limits().max_compute_workgroups_per_dimension,
    );
    let p = rowops::Q8RoundParams {
        blocks: blocks as u32,
        grid_x: grid.0,
        row_blocks: (cols / 32) as u32,
        row_stride: (stride / 4) as u32,
    };
    let spec = rowops::q8_round_spec(wg, gate, out);
    launch(gpu, rec, &spec, &p, &[x, dst], grid)
}
