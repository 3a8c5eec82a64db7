//! Launches of the ONNX vision kernels (`gpuport_kernels::vision`): shapes checked, grids
//! within the adapter's limits, every tensor bound whole (vision activations fit one storage
//! binding; a larger one is a typed error, never a wgpu abort).

use gpuport_kernels::grid_2d;
use gpuport_kernels::vision::{
    self, Activation, BinaryOp, BinaryParams, ConvParams, IndexParams, MatmulParams, PoolParams,
    SoftmaxParams,
};

use super::{elems, launch, launch_3d};
use crate::device::Gpu;
use crate::error::GpuError;
use crate::recorder::Recorder;
use crate::tensor::{Elem, Tensor};

fn grid(gpu: &Gpu, invocations: usize, wg: u32) -> Result<(u32, u32), GpuError> {
    let groups = u32::try_from(invocations.div_ceil(wg as usize))
        .map_err(|_| GpuError::Shape(format!("{invocations} invocations")))?;
    Ok(grid_2d(
        groups,
        gpu.limits().max_compute_workgroups_per_dimension,
    ))
}

fn fits(gpu: &Gpu, tensors: &[&Tensor]) -> Result<(), GpuError> {
    let limit = gpu.limits().max_storage_buffer_binding_size;
    match tensors.iter().find(|t| t.padded() > limit) {
        Some(t) => Err(GpuError::TooLarge {
            what: format!("tensor {:?}", t.shape),
            bytes: t.padded(),
            limit,
        }),
        None => Ok(()),
    }
}

fn u32_of(v: usize, what: &str) -> Result<u32, GpuError> {
    u32::try_from(v).map_err(|_| GpuError::Shape(format!("{what} {v} exceeds u32")))
}

/// A 2-D convolution: `y = act(conv(x, w) + bias)`.
pub struct Conv2d<'a> {
    /// `[N, C, H, W]`.
    pub x: &'a Tensor,
    /// `[M, C / groups, KH, KW]`.
    pub w: &'a Tensor,
    /// `[M]` (zeros when the node has none).
    pub bias: &'a Tensor,
    /// `[N, M, OH, OW]`.
    pub y: &'a Tensor,
    /// `(vertical, horizontal)`.
    pub strides: (usize, usize),
    /// `(vertical, horizontal)`.
    pub dilations: (usize, usize),
    /// Leading pads `(top, left)`; trailing pads follow from the output size.
    pub pads: (usize, usize),
    /// Channel groups.
    pub groups: usize,
    /// Fused activation.
    pub act: Activation,
    /// The partial sums of a split-K convolution: at least [`conv_scratch_elems`] f32s
    /// (`None` when that is 0).
    pub scratch: Option<&'a Tensor>,
}

/// Workgroups a convolution GEMM should have to fill a large GPU (two per multiprocessor of
/// the biggest ones); layers with fewer output tiles split K to get there.
const CONV_GEMM_TARGET_WORKGROUPS: usize = 256;
/// The least K a slice takes (4 steps of the tile's K).
const CONV_GEMM_MIN_SLICE: usize = 64;

/// How the convolution GEMM splits K for an `[n, m, oh, ow]` output with `k` products per
/// output: `(slices, k per slice)`; one slice when the output tiles already fill the GPU.
pub fn conv_gemm_split(n: usize, m: usize, oh: usize, ow: usize, k: usize) -> (usize, usize) {
    let (bm, bn, bk) = vision::CONV_GEMM_TILE;
    let tiles = (n * oh * ow).div_ceil(bn as usize) * m.div_ceil(bm as usize);
    let want = CONV_GEMM_TARGET_WORKGROUPS.div_ceil(tiles.max(1));
    let slices = want.min(k / CONV_GEMM_MIN_SLICE).max(1);
    let chunk = k.div_ceil(slices).div_ceil(bk as usize) * bk as usize;
    (k.div_ceil(chunk.max(1)).max(1), chunk.max(bk as usize))
}

/// The f32s of scratch a [`Conv2d`] of this shape needs (0: none). Only one-group
/// convolutions run as a GEMM and split.
pub fn conv_scratch_elems(
    groups: usize,
    n: usize,
    c: usize,
    m: usize,
    kernel: (usize, usize),
    out: (usize, usize),
) -> usize {
    if groups != 1 {
        return 0;
    }
    let (slices, _) = conv_gemm_split(n, m, out.0, out.1, c * kernel.0 * kernel.1);
    if slices == 1 {
        0
    } else {
        slices * m * n * out.0 * out.1
    }
}

/// Records a [`Conv2d`].
pub fn conv2d(gpu: &Gpu, rec: &mut Recorder<'_>, call: Conv2d<'_>) -> Result<(), GpuError> {
    let Conv2d {
        x,
        w,
        bias,
        y,
        strides,
        dilations,
        pads,
        groups,
        act,
        scratch,
    } = call;
    let ([n, c, h, wd], [m, cg, kh, kw], [yn, ym, oh, ow]) = (
        <[usize; 4]>::try_from(&x.shape[..])
            .map_err(|_| GpuError::Shape(format!("conv input {:?}", x.shape)))?,
        <[usize; 4]>::try_from(&w.shape[..])
            .map_err(|_| GpuError::Shape(format!("conv weights {:?}", w.shape)))?,
        <[usize; 4]>::try_from(&y.shape[..])
            .map_err(|_| GpuError::Shape(format!("conv output {:?}", y.shape)))?,
    );
    if groups == 0 || cg * groups != c || m % groups != 0 || yn != n || ym != m || elems(bias) != m
    {
        return Err(GpuError::Shape(format!(
            "conv {:?} * {:?} (groups {groups}) + {:?} into {:?}",
            x.shape, w.shape, bias.shape, y.shape
        )));
    }
    fits(gpu, &[x, w, bias, y])?;
    let (lo, hi) = act.bounds();
    let shape = vision::ConvShape {
        n: u32_of(n, "batch")?,
        c: u32_of(c, "channels")?,
        h: u32_of(h, "height")?,
        w: u32_of(wd, "width")?,
        m: u32_of(m, "output channels")?,
        oh: u32_of(oh, "output height")?,
        ow: u32_of(ow, "output width")?,
        groups: u32_of(groups, "groups")?,
        kh: u32_of(kh, "kernel height")?,
        kw: u32_of(kw, "kernel width")?,
        sh: u32_of(strides.0, "stride")?,
        sw: u32_of(strides.1, "stride")?,
        dh: u32_of(dilations.0, "dilation")?,
        dw: u32_of(dilations.1, "dilation")?,
        ph: u32_of(pads.0, "pad")?,
        pw: u32_of(pads.1, "pad")?,
    };
    if groups == 1 {
        // One group: an implicit GEMM over K = C·KH·KW, split along K when the output has
        // too few tiles to fill the GPU.
        let k = c * kh * kw;
        let (slices, chunk) = conv_gemm_split(n, m, oh, ow, k);
        let pointwise =
            (kh, kw) == (1, 1) && strides == (1, 1) && pads == (0, 0) && (oh, ow) == (h, wd);
        let p = vision::ConvGemmParams {
            shape,
            k_total: u32_of(k, "products per output")?,
            k_chunk: u32_of(chunk, "products per slice")?,
            slices: u32_of(slices, "slices")?,
            lo,
            hi,
        };
        let (bm, bn, _) = vision::CONV_GEMM_TILE;
        let cols = n * oh * ow;
        let tiles = (
            u32_of(cols.div_ceil(bn as usize), "column tiles")?,
            u32_of(m.div_ceil(bm as usize), "row tiles")?,
            p.slices,
        );
        let limit = gpu.limits().max_compute_workgroups_per_dimension;
        if tiles.0 > limit || tiles.1 > limit || tiles.2 > limit {
            return Err(GpuError::Shape(format!(
                "conv of {:?} into {:?}: {tiles:?} tiles exceed {limit} per dim",
                x.shape, y.shape
            )));
        }
        if slices == 1 {
            return launch_3d(
                gpu,
                rec,
                &vision::conv_gemm_spec(act, pointwise, false),
                &p,
                &[x, w, bias, y],
                tiles,
            );
        }
        let part = scratch
            .filter(|t| elems(t) >= slices * m * cols)
            .ok_or_else(|| {
                GpuError::Shape(format!(
                    "conv of {:?} into {:?} splits K {slices} ways and needs {} f32s of scratch",
                    x.shape,
                    y.shape,
                    slices * m * cols
                ))
            })?;
        fits(gpu, &[part])?;
        launch_3d(
            gpu,
            rec,
            &vision::conv_gemm_spec(act, pointwise, true),
            &p,
            &[x, w, bias, part],
            tiles,
        )?;
        let total = elems(y);
        let grid = grid(gpu, total, vision::WG)?;
        let sum = vision::SliceSumParams {
            m: shape.m,
            cols: u32_of(cols, "columns")?,
            plane: u32_of(oh * ow, "positions")?,
            slices: p.slices,
            total: u32_of(total, "outputs")?,
            grid_x: grid.0,
            lo,
            hi,
        };
        return launch(
            gpu,
            rec,
            &vision::slice_sum_spec(act),
            &sum,
            &[part, bias, y],
            grid,
        );
    }
    let oct = if (m / groups).is_multiple_of(vision::CONV_OCT as usize) {
        vision::CONV_OCT
    } else {
        1
    };
    let total = elems(y) / oct as usize;
    let grid = grid(gpu, total, vision::WG)?;
    let p = ConvParams {
        shape,
        total: u32_of(total, "outputs")?,
        grid_x: grid.0,
        lo,
        hi,
    };
    launch(
        gpu,
        rec,
        &vision::conv_spec(act, oct),
        &p,
        &[x, w, bias, y],
        grid,
    )
}

/// An element-wise op with broadcasting: `out = op(a, b)` (`b` unused by unary ops).
pub struct Broadcast<'a> {
    /// The op.
    pub op: BinaryOp,
    /// First operand.
    pub a: &'a Tensor,
    /// Second operand (unary ops: pass `a`).
    pub b: &'a Tensor,
    /// Result; its shape is the broadcast of both.
    pub out: &'a Tensor,
    /// Clamp bounds (for `Clamp`).
    pub bounds: (f32, f32),
}

/// Strides of `from` read along each dim of `to` (numpy broadcasting, right-aligned).
fn broadcast_strides(from: &[usize], to: &[usize]) -> Option<[u32; vision::MAX_RANK]> {
    let mut out = [0u32; vision::MAX_RANK];
    let off = to.len().checked_sub(from.len())?;
    let mut stride = 1usize;
    for d in (0..to.len()).rev() {
        if d < off {
            continue;
        }
        let f = from[d - off];
        if f == to[d] {
            out[d] = u32::try_from(stride).ok()?;
        } else if f != 1 {
            return None;
        }
        stride *= f;
    }
    Some(out)
}

/// Records a [`Broadcast`].
pub fn broadcast(gpu: &Gpu, rec: &mut Recorder<'_>, call: Broadcast<'_>) -> Result<(), GpuError> {
    let Broadcast {
        op,
        a,
        b,
        out,
        bounds,
    } = call;
    let rank = out.shape.len();
    let bad = || {
        GpuError::Shape(format!(
            "{op:?} of {:?} and {:?} into {:?}",
            a.shape, b.shape, out.shape
        ))
    };
    if rank > vision::MAX_RANK {
        return Err(bad());
    }
    let sa = broadcast_strides(&a.shape, &out.shape).ok_or_else(bad)?;
    let sb = if op.is_binary() {
        broadcast_strides(&b.shape, &out.shape).ok_or_else(bad)?
    } else {
        sa
    };
    fits(gpu, &[a, b, out])?;
    let total = elems(out);
    let grid = grid(gpu, total, vision::WG)?;
    let mut dims = [1u32; vision::MAX_RANK];
    for (d, v) in out.shape.iter().enumerate() {
        dims[d] = u32_of(*v, "dim")?;
    }
    let p = BinaryParams {
        total: u32_of(total, "elements")?,
        rank: rank as u32,
        grid_x: grid.0,
        pad: 0,
        lo: bounds.0,
        hi: bounds.1,
        pad2: [0; 2],
        dims,
        sa,
        sb,
    };
    launch(gpu, rec, &vision::binary_spec(op), &p, &[a, b, out], grid)
}

/// Max or average pooling over 2-D windows.
pub struct Pool2d<'a> {
    /// `[N, C, H, W]`.
    pub x: &'a Tensor,
    /// `[N, C, OH, OW]`.
    pub y: &'a Tensor,
    /// Max (else average).
    pub max: bool,
    /// Averages count the padding.
    pub include_pad: bool,
    /// `(height, width)`.
    pub kernel: (usize, usize),
    /// `(vertical, horizontal)`.
    pub strides: (usize, usize),
    /// `(vertical, horizontal)`.
    pub dilations: (usize, usize),
    /// `(top, left)`.
    pub pads_begin: (usize, usize),
    /// `(bottom, right)`.
    pub pads_end: (usize, usize),
}

/// Records a [`Pool2d`].
pub fn pool2d(gpu: &Gpu, rec: &mut Recorder<'_>, call: Pool2d<'_>) -> Result<(), GpuError> {
    let Pool2d {
        x,
        y,
        max,
        include_pad,
        kernel,
        strides,
        dilations,
        pads_begin,
        pads_end,
    } = call;
    let ([n, c, h, w], [yn, yc, oh, ow]) = match (&x.shape[..], &y.shape[..]) {
        ([a, b, c, d], [e, f, g, h]) => ([*a, *b, *c, *d], [*e, *f, *g, *h]),
        _ => {
            return Err(GpuError::Shape(format!(
                "pool {:?} into {:?}",
                x.shape, y.shape
            )));
        }
    };
    if (yn, yc) != (n, c) {
        return Err(GpuError::Shape(format!(
            "pool {:?} into {:?}",
            x.shape, y.shape
        )));
    }
    fits(gpu, &[x, y])?;
    let total = elems(y);
    let grid = grid(gpu, total, vision::WG)?;
    let p = PoolParams {
        planes: u32_of(n * c, "planes")?,
        h: u32_of(h, "height")?,
        w: u32_of(w, "width")?,
        oh: u32_of(oh, "output height")?,
        ow: u32_of(ow, "output width")?,
        kh: u32_of(kernel.0, "kernel")?,
        kw: u32_of(kernel.1, "kernel")?,
        sh: u32_of(strides.0, "stride")?,
        sw: u32_of(strides.1, "stride")?,
        dh: u32_of(dilations.0, "dilation")?,
        dw: u32_of(dilations.1, "dilation")?,
        ph: u32_of(pads_begin.0, "pad")?,
        pw: u32_of(pads_begin.1, "pad")?,
        eh: u32_of(pads_end.0, "pad")?,
        ew: u32_of(pads_end.1, "pad")?,
        grid_x: grid.0,
    };
    launch(
        gpu,
        rec,
        &vision::pool_spec(max, include_pad),
        &p,
        &[x, y],
        grid,
    )
}

/// `out = alpha · A·B + beta · C` over a batch, operands addressed by strides (in elements).
pub struct Matmul<'a> {
    /// A.
    pub a: &'a Tensor,
    /// B.
    pub b: &'a Tensor,
    /// The bias (any tensor when `beta` is 0).
    pub c: &'a Tensor,
    /// `[batch, m, n]` elements.
    pub out: &'a Tensor,
    /// The kernel's strides and sizes (`grid_x` is filled in here).
    pub params: MatmulParams,
}

/// Records a [`Matmul`].
pub fn matmul(gpu: &Gpu, rec: &mut Recorder<'_>, call: Matmul<'_>) -> Result<(), GpuError> {
    let Matmul {
        a,
        b,
        c,
        out,
        mut params,
    } = call;
    let total = (params.batch as usize) * (params.m as usize) * (params.n as usize);
    if elems(out) != total {
        return Err(GpuError::Shape(format!(
            "matmul into {:?} of {params:?}",
            out.shape
        )));
    }
    fits(gpu, &[a, b, c, out])?;
    let grid = grid(gpu, total, vision::WG)?;
    params.grid_x = grid.0;
    launch(
        gpu,
        rec,
        &vision::matmul_spec(),
        &params,
        &[a, b, c, out],
        grid,
    )
}

/// Softmax of `x`, seen as `[outer, len, inner]`, along the middle dim.
pub fn softmax_axis(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    x: &Tensor,
    y: &Tensor,
    (outer, len, inner): (usize, usize, usize),
) -> Result<(), GpuError> {
    if elems(x) != outer * len * inner || elems(y) != elems(x) {
        return Err(GpuError::Shape(format!(
            "softmax of {:?} into {:?}",
            x.shape, y.shape
        )));
    }
    fits(gpu, &[x, y])?;
    let grid = grid(gpu, outer * inner, vision::SOFTMAX_WG)?;
    let p = SoftmaxParams {
        outer: u32_of(outer, "outer")?,
        len: u32_of(len, "axis")?,
        inner: u32_of(inner, "inner")?,
        grid_x: grid.0,
    };
    launch(gpu, rec, &vision::softmax_spec(), &p, &[x, y], grid)
}

/// Data movement by an index map (`u32`): gather `out[i] = src[map[i]]` (`fill` where the map
/// holds `u32::MAX`), or scatter `out[map[i]] = src[i]`.
pub fn index_copy(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    src: &Tensor,
    map: &Tensor,
    out: &Tensor,
    scatter: bool,
    fill: f32,
) -> Result<(), GpuError> {
    let n = elems(map);
    let ok = map.elem == Elem::U32
        && if scatter {
            elems(src) == n
        } else {
            elems(out) == n
        };
    if !ok {
        return Err(GpuError::Shape(format!(
            "index copy of {:?} by {:?} into {:?}",
            src.shape, map.shape, out.shape
        )));
    }
    fits(gpu, &[src, map, out])?;
    let grid = grid(gpu, n, vision::WG)?;
    let p = IndexParams {
        n: u32_of(n, "elements")?,
        grid_x: grid.0,
        fill,
        pad: 0,
    };
    launch(
        gpu,
        rec,
        &vision::index_spec(scatter),
        &p,
        &[src, map, out],
        grid,
    )
}

#[cfg(test)]
mod tests {
    use super::conv_gemm_split;

    #[test]
    fn split_k_slices_cover_k_exactly_in_whole_steps() {
        let (_, _, bk) = gpuport_kernels::vision::CONV_GEMM_TILE;
        for (n, m, oh, ow, k) in [
            (1, 320, 7, 7, 1152),
            (1, 1280, 7, 7, 320),
            (32, 320, 7, 7, 1152),
            (1, 16, 112, 112, 32),
            (2, 24, 4, 4, 360),
            (1, 1, 1, 1, 1),
            (1, 8, 1, 1, 100_000),
        ] {
            let (slices, chunk) = conv_gemm_split(n, m, oh, ow, k);
            assert!(
                slices >= 1 && chunk.is_multiple_of(bk as usize),
                "{k}: {slices} x {chunk}"
            );
            assert!(
                slices * chunk >= k && (slices - 1) * chunk < k,
                "{k}: {slices} x {chunk}"
            );
            if slices > 1 {
                assert!(chunk >= 64, "{k}: {slices} x {chunk}");
            }
        }
        // Enough tiles already: no split.
        assert_eq!(conv_gemm_split(32, 96, 112, 112, 16).0, 1);
    }
}
