//! CPU reference implementations of the supported ONNX ops, on [`HostTensor`]s.
//!
//! Written for clarity and exactness, not speed: data movement (Transpose, Slice, Gather,
//! Concat, Pad, Expand, broadcasting) is one index map per op, gathered once; arithmetic is
//! element by element in the tensor's own type. The semantics are the ONNX operator docs';
//! where an op changed across opsets (Softmax's axis at 13, attributes that became inputs)
//! the node's opset decides.

use crate::dtype::DataType;
use crate::eval::{Ctx, EvalError};
use crate::host::{Data, HostTensor};

type R = Result<Vec<HostTensor>, EvalError>;

/// Runs the node in `ctx`, returning its outputs in order.
pub(crate) fn run(ctx: &Ctx<'_>) -> R {
    match ctx.node.op_type.as_str() {
        "Identity" => {
            ctx.known(&[])?;
            Ok(vec![ctx.input(0)?.clone()])
        }
        "Relu" => unary_any(ctx, relu),
        "Sigmoid" => unary_float(ctx, |x| 1.0 / (1.0 + (-x).exp())),
        "Clip" => clip(ctx),
        "Add" | "Sub" | "Mul" | "Div" => binary(ctx),
        "Conv" => conv(ctx),
        "MaxPool" | "AveragePool" => pool(ctx),
        "GlobalAveragePool" => global_average_pool(ctx),
        "BatchNormalization" => batch_norm(ctx),
        "Gemm" => gemm(ctx),
        "MatMul" => matmul(ctx),
        "Softmax" => softmax(ctx),
        "Flatten" => flatten(ctx),
        "Reshape" => reshape(ctx),
        "Squeeze" | "Unsqueeze" => squeeze(ctx),
        "Transpose" => transpose(ctx),
        "Concat" => concat(ctx),
        "Split" => split(ctx),
        "Slice" => slice(ctx),
        "Gather" => gather(ctx),
        "Expand" => expand(ctx),
        "Pad" => pad(ctx),
        "Resize" => resize(ctx),
        "Constant" => constant(ctx),
        "ConstantOfShape" => constant_of_shape(ctx),
        "Shape" => shape_op(ctx),
        "Cast" => cast(ctx),
        "Range" => range(ctx),
        op => Err(ctx.unsupported(format!("op `{op}`"))),
    }
}

// ---------------------------------------------------------------------------------------------
// Shapes and index maps

/// Row-major strides of `shape`.
pub(crate) fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// For every element of `out` (row-major), `base + Σ index[d]·step[d]`: the index map of a
/// strided view (transpose, slice, broadcast).
fn strided(out: &[usize], step: &[isize], base: isize) -> Vec<usize> {
    let n: usize = out.iter().product();
    let mut idx = Vec::with_capacity(n);
    if n == 0 {
        return idx;
    }
    let mut counter = vec![0usize; out.len()];
    let mut at = base;
    for _ in 0..n {
        idx.push(at as usize);
        for d in (0..out.len()).rev() {
            counter[d] += 1;
            at += step[d];
            if counter[d] < out[d] {
                break;
            }
            at -= step[d] * out[d] as isize;
            counter[d] = 0;
        }
    }
    idx
}

/// The multidirectional broadcast of `a` and `b` (numpy rules).
pub(crate) fn broadcast_shape(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let r = a.len().max(b.len());
    (0..r)
        .map(|i| {
            let x = if i + a.len() >= r {
                a[i + a.len() - r]
            } else {
                1
            };
            let y = if i + b.len() >= r {
                b[i + b.len() - r]
            } else {
                1
            };
            match (x, y) {
                (x, y) if x == y => Some(x),
                (1, y) => Some(y),
                (x, 1) => Some(x),
                _ => None,
            }
        })
        .collect()
}

/// The index map that broadcasts a tensor of `from` to `to`.
fn broadcast_index(from: &[usize], to: &[usize]) -> Vec<usize> {
    let off = to.len() - from.len();
    let s = strides(from);
    let step: Vec<isize> = (0..to.len())
        .map(|d| {
            if d < off || from[d - off] == 1 {
                0
            } else {
                s[d - off] as isize
            }
        })
        .collect();
    strided(to, &step, 0)
}

/// Most elements one op may produce (1 GiB of `f32`): a shape computed from hostile data is
/// an error before anything is allocated, never an abort.
pub const MAX_ELEMENTS: usize = 1 << 28;

/// The element count of `shape`, checked against [`MAX_ELEMENTS`].
fn elems(ctx: &Ctx<'_>, shape: &[usize]) -> Result<usize, EvalError> {
    shape
        .iter()
        .try_fold(1usize, |a, d| a.checked_mul(*d))
        .filter(|n| *n <= MAX_ELEMENTS)
        .ok_or_else(|| {
            ctx.invalid(format!(
                "output shape {shape:?} exceeds {MAX_ELEMENTS} elements"
            ))
        })
}

fn tensor(ctx: &Ctx<'_>, shape: Vec<usize>, data: Data) -> Result<HostTensor, EvalError> {
    HostTensor::new(shape, data)
        .ok_or_else(|| ctx.invalid("internal: data does not fill the shape"))
}

fn f32s<'a>(ctx: &Ctx<'_>, t: &'a HostTensor, what: &str) -> Result<&'a [f32], EvalError> {
    match &t.data {
        Data::F32(v) => Ok(v),
        d => Err(ctx.unsupported(format!("{what} of type {}", d.dtype()))),
    }
}

// ---------------------------------------------------------------------------------------------
// Element-wise

fn relu(d: &Data) -> Option<Data> {
    Some(match d {
        Data::F32(v) => Data::F32(v.iter().map(|x| x.max(0.0)).collect()),
        Data::F64(v) => Data::F64(v.iter().map(|x| x.max(0.0)).collect()),
        Data::I8(v) => Data::I8(v.iter().map(|x| (*x).max(0)).collect()),
        Data::I16(v) => Data::I16(v.iter().map(|x| (*x).max(0)).collect()),
        Data::I32(v) => Data::I32(v.iter().map(|x| (*x).max(0)).collect()),
        Data::I64(v) => Data::I64(v.iter().map(|x| (*x).max(0)).collect()),
        _ => return None,
    })
}

fn unary_any(ctx: &Ctx<'_>, f: impl Fn(&Data) -> Option<Data>) -> R {
    ctx.known(&[])?;
    let x = ctx.input(0)?;
    let d = f(&x.data).ok_or_else(|| ctx.unsupported(format!("type {}", x.data.dtype())))?;
    Ok(vec![tensor(ctx, x.shape.clone(), d)?])
}

fn unary_float(ctx: &Ctx<'_>, f: impl Fn(f64) -> f64) -> R {
    ctx.known(&[])?;
    let x = ctx.input(0)?;
    let d = match &x.data {
        Data::F32(v) => Data::F32(v.iter().map(|x| f(f64::from(*x)) as f32).collect()),
        Data::F64(v) => Data::F64(v.iter().map(|x| f(*x)).collect()),
        d => return Err(ctx.unsupported(format!("type {}", d.dtype()))),
    };
    Ok(vec![tensor(ctx, x.shape.clone(), d)?])
}

fn clip(ctx: &Ctx<'_>) -> R {
    let x = ctx.input(0)?;
    // Opset < 11: `min`/`max` attributes; from 11: optional scalar inputs.
    let (lo, hi) = if ctx.opset < 11 {
        ctx.known(&["min", "max"])?;
        (
            Some(f64::from(ctx.float("min", f32::MIN)?)),
            Some(f64::from(ctx.float("max", f32::MAX)?)),
        )
    } else {
        ctx.known(&[])?;
        let scalar = |i: usize| -> Result<Option<f64>, EvalError> {
            match ctx.opt(i) {
                None => Ok(None),
                Some(t) if t.len() == 1 && t.data.dtype() == x.data.dtype() => {
                    Ok(Some(t.data.to_f64()[0]))
                }
                Some(_) => {
                    Err(ctx.invalid(format!("input {i} must be one value of the input's type")))
                }
            }
        };
        (scalar(1)?, scalar(2)?)
    };
    // Through f64: exact for every supported type up to 32 bits; 64-bit integers must keep
    // their bounds within 2^53.
    if matches!(x.data, Data::I64(_) | Data::U64(_))
        && [lo, hi]
            .iter()
            .flatten()
            .any(|b| b.abs() > 9.007_199_254_740_992e15)
    {
        return Err(ctx.unsupported("64-bit integer bounds beyond 2^53"));
    }
    let f = |v: f64| {
        let v = lo.map_or(v, |l| v.max(l));
        hi.map_or(v, |h| v.min(h))
    };
    let d = from_f64(x.data.dtype(), x.data.to_f64().into_iter().map(f).collect())
        .ok_or_else(|| ctx.unsupported(format!("type {}", x.data.dtype())))?;
    Ok(vec![tensor(ctx, x.shape.clone(), d)?])
}

/// Values of `dtype` from `f64`s that are already in its range (floats round to nearest,
/// integers are whole).
fn from_f64(dtype: DataType, v: Vec<f64>) -> Option<Data> {
    Some(match dtype {
        DataType::Float => Data::F32(v.into_iter().map(|x| x as f32).collect()),
        DataType::Double => Data::F64(v),
        DataType::Int8 => Data::I8(v.into_iter().map(|x| x as i8).collect()),
        DataType::Int16 => Data::I16(v.into_iter().map(|x| x as i16).collect()),
        DataType::Int32 => Data::I32(v.into_iter().map(|x| x as i32).collect()),
        DataType::Int64 => Data::I64(v.into_iter().map(|x| x as i64).collect()),
        DataType::Uint8 => Data::U8(v.into_iter().map(|x| x as u8).collect()),
        DataType::Uint16 => Data::U16(v.into_iter().map(|x| x as u16).collect()),
        DataType::Uint32 => Data::U32(v.into_iter().map(|x| x as u32).collect()),
        DataType::Uint64 => Data::U64(v.into_iter().map(|x| x as u64).collect()),
        _ => return None,
    })
}

/// Arithmetic of one element type: floats as IEEE, integers wrapping (two's complement, as
/// C and numpy do), integer division truncating and refusing zero.
trait Arith: Copy {
    fn apply(op: u8, a: Self, b: Self) -> Option<Self>;
}

macro_rules! arith_float {
    ($($t:ty),*) => {$(
        impl Arith for $t {
            fn apply(op: u8, a: Self, b: Self) -> Option<Self> {
                Some(match op { b'+' => a + b, b'-' => a - b, b'*' => a * b, _ => a / b })
            }
        }
    )*};
}
macro_rules! arith_int {
    ($($t:ty),*) => {$(
        impl Arith for $t {
            fn apply(op: u8, a: Self, b: Self) -> Option<Self> {
                match op {
                    b'+' => Some(a.wrapping_add(b)),
                    b'-' => Some(a.wrapping_sub(b)),
                    b'*' => Some(a.wrapping_mul(b)),
                    _ => a.checked_div(b),
                }
            }
        }
    )*};
}
arith_float!(f32, f64);
arith_int!(i8, i16, i32, i64, u8, u16, u32, u64);

fn zip_apply<T: Arith>(op: u8, a: &[T], b: &[T], ia: &[usize], ib: &[usize]) -> Option<Vec<T>> {
    ia.iter()
        .zip(ib)
        .map(|(i, j)| T::apply(op, a[*i], b[*j]))
        .collect()
}

fn binary(ctx: &Ctx<'_>) -> R {
    if ctx.opset < 7 {
        return Err(ctx.unsupported("opset < 7 (the `broadcast` attribute form)"));
    }
    ctx.known(&[])?;
    let (a, b) = (ctx.input(0)?, ctx.input(1)?);
    let shape = broadcast_shape(&a.shape, &b.shape).ok_or_else(|| {
        ctx.invalid(format!(
            "shapes {:?} and {:?} do not broadcast",
            a.shape, b.shape
        ))
    })?;
    elems(ctx, &shape)?;
    let (ia, ib) = (
        broadcast_index(&a.shape, &shape),
        broadcast_index(&b.shape, &shape),
    );
    let op = match ctx.node.op_type.as_str() {
        "Add" => b'+',
        "Sub" => b'-',
        "Mul" => b'*',
        _ => b'/',
    };
    let zero = || ctx.invalid("integer division by zero");
    let d = match (&a.data, &b.data) {
        (Data::F32(x), Data::F32(y)) => Data::F32(zip_apply(op, x, y, &ia, &ib).ok_or_else(zero)?),
        (Data::F64(x), Data::F64(y)) => Data::F64(zip_apply(op, x, y, &ia, &ib).ok_or_else(zero)?),
        (Data::I8(x), Data::I8(y)) => Data::I8(zip_apply(op, x, y, &ia, &ib).ok_or_else(zero)?),
        (Data::I16(x), Data::I16(y)) => Data::I16(zip_apply(op, x, y, &ia, &ib).ok_or_else(zero)?),
        (Data::I32(x), Data::I32(y)) => Data::I32(zip_apply(op, x, y, &ia, &ib).ok_or_else(zero)?),
        (Data::I64(x), Data::I64(y)) => Data::I64(zip_apply(op, x, y, &ia, &ib).ok_or_else(zero)?),
        (Data::U8(x), Data::U8(y)) => Data::U8(zip_apply(op, x, y, &ia, &ib).ok_or_else(zero)?),
        (Data::U16(x), Data::U16(y)) => Data::U16(zip_apply(op, x, y, &ia, &ib).ok_or_else(zero)?),
        (Data::U32(x), Data::U32(y)) => Data::U32(zip_apply(op, x, y, &ia, &ib).ok_or_else(zero)?),
        (Data::U64(x), Data::U64(y)) => Data::U64(zip_apply(op, x, y, &ia, &ib).ok_or_else(zero)?),
        (x, y) if x.dtype() != y.dtype() => {
            return Err(ctx.invalid(format!("operands are {} and {}", x.dtype(), y.dtype())));
        }
        (x, _) => return Err(ctx.unsupported(format!("type {}", x.dtype()))),
    };
    Ok(vec![tensor(ctx, shape, d)?])
}

// ---------------------------------------------------------------------------------------------
// Convolution and pooling

/// Output extent and leading pad per spatial dim, from `kernel_shape`, `strides`,
/// `dilations`, `pads` and `auto_pad` (and `ceil_mode` for pools).
pub(crate) struct Window {
    pub out: Vec<usize>,
    pub pad_begin: Vec<usize>,
    pub pad_end: Vec<usize>,
    pub strides: Vec<usize>,
    pub dilations: Vec<usize>,
    pub kernel: Vec<usize>,
}

pub(crate) fn window(
    ctx: &Ctx<'_>,
    input: &[usize],
    kernel: Vec<usize>,
    ceil_mode: bool,
) -> Result<Window, EvalError> {
    let k = input.len();
    if kernel.contains(&0) {
        return Err(ctx.invalid(format!("kernel {kernel:?} has an empty dim")));
    }
    let positive = |name: &str| -> Result<Vec<usize>, EvalError> {
        match ctx.ints(name)? {
            None => Ok(vec![1; k]),
            Some(v) if v.len() == k && v.iter().all(|x| *x >= 1) => {
                Ok(v.iter().map(|x| *x as usize).collect())
            }
            Some(v) => Err(ctx.invalid(format!("`{name}` {v:?} must be {k} values ≥ 1"))),
        }
    };
    let strides = positive("strides")?;
    let dilations = positive("dilations")?;
    let auto_pad = ctx.string("auto_pad", "NOTSET")?;
    let span: Vec<usize> = (0..k).map(|d| (kernel[d] - 1) * dilations[d] + 1).collect();
    let (mut pad_begin, mut pad_end) = (vec![0; k], vec![0; k]);
    let mut out = vec![0; k];
    match auto_pad.as_str() {
        "NOTSET" => {
            if let Some(p) = ctx.ints("pads")? {
                if p.len() != 2 * k || p.iter().any(|x| *x < 0) {
                    return Err(ctx.invalid(format!("`pads` {p:?} must be {} values ≥ 0", 2 * k)));
                }
                for d in 0..k {
                    pad_begin[d] = p[d] as usize;
                    pad_end[d] = p[d + k] as usize;
                }
            }
            for d in 0..k {
                let padded = input[d] + pad_begin[d] + pad_end[d];
                if padded < span[d] {
                    return Err(ctx.invalid(format!(
                        "window {} is larger than the padded input {padded} in dim {d}",
                        span[d]
                    )));
                }
                let steps = padded - span[d];
                out[d] = if ceil_mode {
                    let mut o = steps.div_ceil(strides[d]) + 1;
                    // The last window must start inside the input or its leading pad.
                    if (o - 1) * strides[d] >= input[d] + pad_begin[d] {
                        o -= 1;
                    }
                    o
                } else {
                    steps / strides[d] + 1
                };
            }
        }
        "VALID" => {
            for d in 0..k {
                if input[d] < span[d] {
                    return Err(ctx.invalid(format!(
                        "window {} is larger than the input {}",
                        span[d], input[d]
                    )));
                }
                out[d] = (input[d] - span[d]) / strides[d] + 1;
            }
        }
        "SAME_UPPER" | "SAME_LOWER" => {
            for d in 0..k {
                out[d] = input[d].div_ceil(strides[d]);
                let total = ((out[d] - 1) * strides[d] + span[d]).saturating_sub(input[d]);
                let small = total / 2;
                if auto_pad == "SAME_UPPER" {
                    (pad_begin[d], pad_end[d]) = (small, total - small);
                } else {
                    (pad_begin[d], pad_end[d]) = (total - small, small);
                }
            }
        }
        other => return Err(ctx.invalid(format!("`auto_pad` {other:?}"))),
    }
    Ok(Window {
        out,
        pad_begin,
        pad_end,
        strides,
        dilations,
        kernel,
    })
}

/// Every multi-index of `shape`, row-major.
fn positions(shape: &[usize]) -> Vec<Vec<usize>> {
    let n: usize = shape.iter().product();
    let mut all = Vec::with_capacity(n);
    let mut c = vec![0usize; shape.len()];
    for _ in 0..n {
        all.push(c.clone());
        for d in (0..shape.len()).rev() {
            c[d] += 1;
            if c[d] < shape[d] {
                break;
            }
            c[d] = 0;
        }
    }
    all
}

/// The flat input offset of output position `o` and kernel position `k`, or `None` in the
/// padding. `padded` also reports whether the position is inside the padded extent.
fn tap(
    w: &Window,
    input: &[usize],
    in_strides: &[usize],
    o: &[usize],
    k: &[usize],
) -> Result<usize, bool> {
    let mut at = 0;
    let mut inside_padded = true;
    let mut inside = true;
    for d in 0..o.len() {
        let p = (o[d] * w.strides[d] + k[d] * w.dilations[d]) as isize - w.pad_begin[d] as isize;
        if p < 0 || p as usize >= input[d] {
            inside = false;
            if p >= (input[d] + w.pad_end[d]) as isize {
                inside_padded = false;
            }
        } else {
            at += p as usize * in_strides[d];
        }
    }
    if inside { Ok(at) } else { Err(inside_padded) }
}

fn conv(ctx: &Ctx<'_>) -> R {
    ctx.known(&[
        "auto_pad",
        "dilations",
        "group",
        "kernel_shape",
        "pads",
        "strides",
    ])?;
    let (x, w) = (ctx.input(0)?, ctx.input(1)?);
    let xs = f32s(ctx, x, "input")?;
    let ws = f32s(ctx, w, "weights")?;
    if x.shape.len() < 3 || w.shape.len() != x.shape.len() {
        return Err(ctx.invalid(format!(
            "input {:?} and weights {:?} ranks",
            x.shape, w.shape
        )));
    }
    let (n, c) = (x.shape[0], x.shape[1]);
    let (m, cg) = (w.shape[0], w.shape[1]);
    let group = ctx.int("group", 1)?;
    if group < 1 || c % group as usize != 0 || m % group as usize != 0 || cg * group as usize != c {
        return Err(ctx.invalid(format!(
            "group {group} with {c} input channels, weights {:?}",
            w.shape
        )));
    }
    let group = group as usize;
    let kernel: Vec<usize> = w.shape[2..].to_vec();
    if let Some(ks) = ctx.ints("kernel_shape")?
        && ks.iter().map(|k| *k as usize).collect::<Vec<_>>() != kernel
    {
        return Err(ctx.invalid(format!(
            "kernel_shape {ks:?} differs from the weights {kernel:?}"
        )));
    }
    let bias = match ctx.opt(2) {
        Some(b) if b.shape == [m] => Some(f32s(ctx, b, "bias")?),
        Some(b) => return Err(ctx.invalid(format!("bias {:?} is not [{m}]", b.shape))),
        None => None,
    };
    let spatial = &x.shape[2..];
    let win = window(ctx, spatial, kernel, false)?;
    let in_strides = strides(spatial);
    let in_plane: usize = spatial.iter().product();
    let k_plane: usize = win.kernel.iter().product();
    let outs = positions(&win.out);
    let taps = positions(&win.kernel);
    elems(ctx, &[n, m, outs.len()])?;
    elems(ctx, &[taps.len(), outs.len()])?;
    // Per kernel tap, the input offset each output position reads (`usize::MAX`: padding):
    // the inner loop is then a gather-multiply-add over one plane.
    let table: Vec<Vec<usize>> = taps
        .iter()
        .map(|k| {
            outs.iter()
                .map(|o| tap(&win, spatial, &in_strides, o, k).unwrap_or(usize::MAX))
                .collect()
        })
        .collect();
    let mut y = Vec::with_capacity(n * m * outs.len());
    let mg = m / group;
    let mut acc = vec![0f64; outs.len()];
    for b in 0..n {
        for oc in 0..m {
            let g = oc / mg;
            acc.fill(bias.map_or(0.0, |b| f64::from(b[oc])));
            for ic in 0..cg {
                let plane = &xs[(b * c + g * cg + ic) * in_plane..][..in_plane];
                for (ki, offsets) in table.iter().enumerate() {
                    let wv = f64::from(ws[(oc * cg + ic) * k_plane + ki]);
                    for (a, &at) in acc.iter_mut().zip(offsets) {
                        if at != usize::MAX {
                            *a += f64::from(plane[at]) * wv;
                        }
                    }
                }
            }
            y.extend(acc.iter().map(|a| *a as f32));
        }
    }
    let mut shape = vec![n, m];
    shape.extend(&win.out);
    Ok(vec![tensor(ctx, shape, Data::F32(y))?])
}

/// A MaxPool or AveragePool node's window over `shape` (`[N, C, spatial…]`): whether it takes
/// the max, whether an average counts the padding, and the geometry. The attributes checked
/// here are those of both the host op and the GPU executor.
pub(crate) fn pool_window(
    ctx: &Ctx<'_>,
    shape: &[usize],
) -> Result<(bool, bool, Window), EvalError> {
    let max = ctx.node.op_type == "MaxPool";
    let last = if max {
        "storage_order"
    } else {
        "count_include_pad"
    };
    ctx.known(&[
        "auto_pad",
        "ceil_mode",
        "dilations",
        "kernel_shape",
        "pads",
        "strides",
        last,
    ])?;
    if max && ctx.outputs() > 1 {
        return Err(ctx.unsupported("the `Indices` output"));
    }
    if shape.len() < 3 {
        return Err(ctx.invalid(format!("input {shape:?} has no spatial dims")));
    }
    let kernel: Vec<usize> = ctx
        .ints("kernel_shape")?
        .ok_or_else(|| ctx.invalid("no `kernel_shape`"))?
        .iter()
        .map(|k| (*k).max(1) as usize)
        .collect();
    let spatial = &shape[2..];
    if kernel.len() != spatial.len() {
        return Err(ctx.invalid(format!("kernel_shape {kernel:?} for input {shape:?}")));
    }
    let ceil_mode = ctx.int("ceil_mode", 0)? != 0;
    let include_pad = ctx.int("count_include_pad", 0)? != 0;
    Ok((max, include_pad, window(ctx, spatial, kernel, ceil_mode)?))
}

fn pool(ctx: &Ctx<'_>) -> R {
    let x = ctx.input(0)?;
    let (max, include_pad, win) = pool_window(ctx, &x.shape)?;
    let spatial = &x.shape[2..];
    let dtype = x.data.dtype();
    if !max && !matches!(dtype, DataType::Float | DataType::Double) {
        return Err(ctx.unsupported(format!("type {dtype}")));
    }
    let xs = x.data.to_f64();
    let in_strides = strides(spatial);
    let in_plane: usize = spatial.iter().product();
    let outs = positions(&win.out);
    let taps = positions(&win.kernel);
    let planes = x.shape[0] * x.shape[1];
    elems(ctx, &[planes, outs.len()])?;
    let mut y = Vec::with_capacity(planes * outs.len());
    for p in 0..planes {
        for o in &outs {
            let (mut best, mut sum, mut count) = (f64::NEG_INFINITY, 0f64, 0usize);
            for k in &taps {
                match tap(&win, spatial, &in_strides, o, k) {
                    Ok(at) => {
                        let v = xs[p * in_plane + at];
                        best = best.max(v);
                        sum += v;
                        count += 1;
                    }
                    Err(inside_padded) => count += usize::from(include_pad && inside_padded),
                }
            }
            y.push(if max { best } else { sum / count.max(1) as f64 });
        }
    }
    let mut shape = x.shape[..2].to_vec();
    shape.extend(&win.out);
    let d = from_f64(dtype, y).ok_or_else(|| ctx.unsupported(format!("type {dtype}")))?;
    Ok(vec![tensor(ctx, shape, d)?])
}

fn global_average_pool(ctx: &Ctx<'_>) -> R {
    ctx.known(&[])?;
    let x = ctx.input(0)?;
    let xs = f32s(ctx, x, "input")?;
    if x.shape.len() < 3 {
        return Err(ctx.invalid(format!("input {:?} has no spatial dims", x.shape)));
    }
    let plane: usize = x.shape[2..].iter().product();
    let y: Vec<f32> = xs
        .chunks(plane.max(1))
        .map(|c| (c.iter().map(|v| f64::from(*v)).sum::<f64>() / plane as f64) as f32)
        .collect();
    let mut shape = x.shape[..2].to_vec();
    shape.extend(vec![1; x.shape.len() - 2]);
    Ok(vec![tensor(ctx, shape, Data::F32(y))?])
}

fn batch_norm(ctx: &Ctx<'_>) -> R {
    ctx.known(&["epsilon", "momentum", "training_mode", "spatial"])?;
    if ctx.int("training_mode", 0)? != 0 || ctx.outputs() > 1 {
        return Err(ctx.unsupported("training mode"));
    }
    if ctx.int("spatial", 1)? != 1 {
        return Err(ctx.unsupported("spatial = 0"));
    }
    let eps = f64::from(ctx.float("epsilon", 1e-5)?);
    let x = ctx.input(0)?;
    let xs = f32s(ctx, x, "input")?;
    let c = *x
        .shape
        .get(1)
        .ok_or_else(|| ctx.invalid("input has no channel dim"))?;
    let param = |i: usize| -> Result<&[f32], EvalError> {
        let t = ctx.input(i)?;
        if t.shape != [c] {
            return Err(ctx.invalid(format!("input {i} {:?} is not [{c}]", t.shape)));
        }
        f32s(ctx, t, "parameters")
    };
    let (scale, bias, mean, var) = (param(1)?, param(2)?, param(3)?, param(4)?);
    let plane: usize = x.shape[2..].iter().product();
    let y = xs
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let ch = (i / plane.max(1)) % c;
            let norm = (f64::from(*v) - f64::from(mean[ch])) / (f64::from(var[ch]) + eps).sqrt();
            (norm * f64::from(scale[ch]) + f64::from(bias[ch])) as f32
        })
        .collect();
    Ok(vec![tensor(ctx, x.shape.clone(), Data::F32(y))?])
}

// ---------------------------------------------------------------------------------------------
// Matrix products and softmax

fn gemm(ctx: &Ctx<'_>) -> R {
    ctx.known(&["alpha", "beta", "transA", "transB"])?;
    let (a, b) = (ctx.input(0)?, ctx.input(1)?);
    let (av, bv) = (f32s(ctx, a, "A")?, f32s(ctx, b, "B")?);
    if a.shape.len() != 2 || b.shape.len() != 2 {
        return Err(ctx.invalid(format!(
            "A {:?} and B {:?} must be matrices",
            a.shape, b.shape
        )));
    }
    let (ta, tb) = (ctx.int("transA", 0)? != 0, ctx.int("transB", 0)? != 0);
    let (m, ka) = if ta {
        (a.shape[1], a.shape[0])
    } else {
        (a.shape[0], a.shape[1])
    };
    let (kb, n) = if tb {
        (b.shape[1], b.shape[0])
    } else {
        (b.shape[0], b.shape[1])
    };
    if ka != kb {
        return Err(ctx.invalid(format!(
            "A {:?} and B {:?} do not multiply",
            a.shape, b.shape
        )));
    }
    let (alpha, beta) = (
        f64::from(ctx.float("alpha", 1.0)?),
        f64::from(ctx.float("beta", 1.0)?),
    );
    let c = match ctx.opt(2) {
        Some(c) => {
            let cv = f32s(ctx, c, "C")?;
            let full = broadcast_shape(&c.shape, &[m, n]).filter(|s| s == &[m, n]);
            if full.is_none() {
                return Err(
                    ctx.invalid(format!("C {:?} does not broadcast to [{m}, {n}]", c.shape))
                );
            }
            Some(
                broadcast_index(&c.shape, &[m, n])
                    .into_iter()
                    .map(|i| cv[i])
                    .collect::<Vec<_>>(),
            )
        }
        None => None,
    };
    elems(ctx, &[m, n])?;
    let mut y = Vec::with_capacity(m * n);
    for i in 0..m {
        for j in 0..n {
            let mut acc = 0f64;
            for k in 0..ka {
                let x = if ta { av[k * m + i] } else { av[i * ka + k] };
                let w = if tb { bv[j * kb + k] } else { bv[k * n + j] };
                acc += f64::from(x) * f64::from(w);
            }
            let bias = c.as_ref().map_or(0.0, |c| beta * f64::from(c[i * n + j]));
            y.push((alpha * acc + bias) as f32);
        }
    }
    Ok(vec![tensor(ctx, vec![m, n], Data::F32(y))?])
}

fn matmul(ctx: &Ctx<'_>) -> R {
    ctx.known(&[])?;
    let (a, b) = (ctx.input(0)?, ctx.input(1)?);
    let (av, bv) = (f32s(ctx, a, "A")?, f32s(ctx, b, "B")?);
    if a.shape.is_empty() || b.shape.is_empty() {
        return Err(ctx.invalid("MatMul of a scalar"));
    }
    // numpy.matmul: 1-D operands gain a dim that is dropped again from the result.
    let ash = if a.shape.len() == 1 {
        vec![1, a.shape[0]]
    } else {
        a.shape.clone()
    };
    let bsh = if b.shape.len() == 1 {
        vec![b.shape[0], 1]
    } else {
        b.shape.clone()
    };
    let (m, k) = (ash[ash.len() - 2], ash[ash.len() - 1]);
    let (k2, n) = (bsh[bsh.len() - 2], bsh[bsh.len() - 1]);
    if k != k2 {
        return Err(ctx.invalid(format!(
            "A {:?} and B {:?} do not multiply",
            a.shape, b.shape
        )));
    }
    let batch = broadcast_shape(&ash[..ash.len() - 2], &bsh[..bsh.len() - 2]).ok_or_else(|| {
        ctx.invalid(format!(
            "batch dims of {:?} and {:?} do not broadcast",
            a.shape, b.shape
        ))
    })?;
    let ia = broadcast_index(&ash[..ash.len() - 2], &batch);
    let ib = broadcast_index(&bsh[..bsh.len() - 2], &batch);
    elems(ctx, &[ia.len(), m, n])?;
    let mut y = Vec::with_capacity(ia.len() * m * n);
    for (pa, pb) in ia.iter().zip(&ib) {
        let (ao, bo) = (pa * m * k, pb * k * n);
        for i in 0..m {
            for j in 0..n {
                let mut acc = 0f64;
                for t in 0..k {
                    acc += f64::from(av[ao + i * k + t]) * f64::from(bv[bo + t * n + j]);
                }
                y.push(acc as f32);
            }
        }
    }
    let mut shape = batch;
    if a.shape.len() > 1 {
        shape.push(m);
    }
    if b.shape.len() > 1 {
        shape.push(n);
    }
    Ok(vec![tensor(ctx, shape, Data::F32(y))?])
}

fn softmax(ctx: &Ctx<'_>) -> R {
    ctx.known(&["axis"])?;
    let x = ctx.input(0)?;
    let xs = f32s(ctx, x, "input")?;
    let r = x.shape.len();
    let axis = ctx.axis(ctx.int("axis", if ctx.opset >= 13 { -1 } else { 1 })?, r)?;
    // Opset 13 normalizes over one axis; earlier opsets over the flattened dims from `axis`.
    let (outer, len, inner) = if ctx.opset >= 13 {
        let outer: usize = x.shape[..axis].iter().product();
        let inner: usize = x.shape[axis + 1..].iter().product();
        (outer, x.shape.get(axis).copied().unwrap_or(1), inner)
    } else {
        (
            x.shape[..axis].iter().product(),
            x.shape[axis..].iter().product(),
            1,
        )
    };
    let mut y = vec![0f32; xs.len()];
    for o in 0..outer {
        for i in 0..inner {
            let at = |t: usize| (o * len + t) * inner + i;
            let max = (0..len)
                .map(|t| xs[at(t)])
                .fold(f32::NEG_INFINITY, f32::max);
            let sum: f64 = (0..len).map(|t| f64::from((xs[at(t)] - max).exp())).sum();
            for t in 0..len {
                y[at(t)] = (f64::from((xs[at(t)] - max).exp()) / sum) as f32;
            }
        }
    }
    Ok(vec![tensor(ctx, x.shape.clone(), Data::F32(y))?])
}

// ---------------------------------------------------------------------------------------------
// Shape ops

fn flatten(ctx: &Ctx<'_>) -> R {
    ctx.known(&["axis"])?;
    let x = ctx.input(0)?;
    let r = x.shape.len() as i64;
    let axis = ctx.int("axis", 1)?;
    if axis < -r || axis > r {
        return Err(ctx.invalid(format!("axis {axis} for rank {r}")));
    }
    let axis = if axis < 0 { axis + r } else { axis } as usize;
    let shape = vec![
        x.shape[..axis].iter().product(),
        x.shape[axis..].iter().product(),
    ];
    Ok(vec![tensor(ctx, shape, x.data.clone())?])
}

fn reshape(ctx: &Ctx<'_>) -> R {
    if ctx.opset < 5 {
        return Err(ctx.unsupported("opset < 5 (the `shape` attribute form)"));
    }
    ctx.known(&["allowzero"])?;
    let x = ctx.input(0)?;
    let want = ctx
        .ints_input(1)?
        .ok_or_else(|| ctx.invalid("no shape input"))?;
    let allow_zero = ctx.int("allowzero", 0)? != 0;
    let mut shape = Vec::with_capacity(want.len());
    let mut infer = None;
    for (i, d) in want.iter().enumerate() {
        match *d {
            -1 if infer.is_none() => {
                infer = Some(i);
                shape.push(1);
            }
            0 if !allow_zero => shape.push(*x.shape.get(i).ok_or_else(|| {
                ctx.invalid(format!("shape {want:?} copies dim {i} of {:?}", x.shape))
            })?),
            d if d >= 0 => shape.push(d as usize),
            _ => return Err(ctx.invalid(format!("shape {want:?}"))),
        }
    }
    if let Some(i) = infer {
        let known = elems(ctx, &shape)?;
        if known == 0 || x.len() % known != 0 {
            return Err(ctx.invalid(format!("shape {want:?} does not fit {} elements", x.len())));
        }
        shape[i] = x.len() / known;
    }
    if elems(ctx, &shape)? != x.len() {
        return Err(ctx.invalid(format!("shape {want:?} does not fit {:?}", x.shape)));
    }
    Ok(vec![tensor(ctx, shape, x.data.clone())?])
}

/// The `axes` of Squeeze/Unsqueeze/ReduceX: an attribute before opset 13, input 1 from it.
fn axes_operand(ctx: &Ctx<'_>) -> Result<Option<Vec<i64>>, EvalError> {
    if ctx.opset < 13 {
        ctx.known(&["axes"])?;
        ctx.ints("axes")
    } else {
        ctx.known(&[])?;
        ctx.ints_input(1)
    }
}

fn squeeze(ctx: &Ctx<'_>) -> R {
    let x = ctx.input(0)?;
    let axes = axes_operand(ctx)?;
    let shape = if ctx.node.op_type == "Squeeze" {
        match axes {
            None => x.shape.iter().copied().filter(|d| *d != 1).collect(),
            Some(axes) => {
                let axes: Vec<usize> = axes
                    .iter()
                    .map(|a| ctx.axis(*a, x.shape.len()))
                    .collect::<Result<_, _>>()?;
                if let Some(a) = axes.iter().find(|a| x.shape[**a] != 1) {
                    return Err(ctx.invalid(format!("dim {a} of {:?} is not 1", x.shape)));
                }
                (0..x.shape.len())
                    .filter(|d| !axes.contains(d))
                    .map(|d| x.shape[d])
                    .collect()
            }
        }
    } else {
        let axes = axes.ok_or_else(|| ctx.invalid("no axes"))?;
        let r = x.shape.len() + axes.len();
        let mut axes: Vec<usize> = axes
            .iter()
            .map(|a| ctx.axis(*a, r))
            .collect::<Result<_, _>>()?;
        axes.sort_unstable();
        if axes.windows(2).any(|w| w[0] == w[1]) {
            return Err(ctx.invalid("repeated axis"));
        }
        let mut dims = x.shape.iter();
        (0..r)
            .map(|d| {
                if axes.contains(&d) {
                    1
                } else {
                    dims.next().copied().unwrap_or(1)
                }
            })
            .collect()
    };
    Ok(vec![tensor(ctx, shape, x.data.clone())?])
}

fn transpose(ctx: &Ctx<'_>) -> R {
    ctx.known(&["perm"])?;
    let x = ctx.input(0)?;
    let r = x.shape.len();
    let perm: Vec<usize> = match ctx.ints("perm")? {
        None => (0..r).rev().collect(),
        Some(p) => p
            .iter()
            .map(|a| ctx.axis(*a, r))
            .collect::<Result<_, _>>()?,
    };
    let mut sorted = perm.clone();
    sorted.sort_unstable();
    if sorted != (0..r).collect::<Vec<_>>() {
        return Err(ctx.invalid(format!("perm {perm:?} is not a permutation of rank {r}")));
    }
    let s = strides(&x.shape);
    let shape: Vec<usize> = perm.iter().map(|p| x.shape[*p]).collect();
    let step: Vec<isize> = perm.iter().map(|p| s[*p] as isize).collect();
    let idx = strided(&shape, &step, 0);
    Ok(vec![tensor(ctx, shape, x.data.gather(&idx))?])
}

fn concat(ctx: &Ctx<'_>) -> R {
    ctx.known(&["axis"])?;
    let parts: Vec<&HostTensor> = (0..ctx.node.inputs.len())
        .map(|i| ctx.input(i))
        .collect::<Result<_, _>>()?;
    let first = parts.first().ok_or_else(|| ctx.invalid("no inputs"))?;
    let r = first.shape.len();
    let axis = ctx.axis(ctx.int("axis", 0)?, r)?;
    let dtype = first.data.dtype();
    for p in &parts {
        if p.data.dtype() != dtype
            || p.shape.len() != r
            || (0..r).any(|d| d != axis && p.shape[d] != first.shape[d])
        {
            return Err(ctx.invalid(format!(
                "{:?} {} does not concatenate with {:?} {dtype}",
                p.shape,
                p.data.dtype(),
                first.shape
            )));
        }
    }
    let outer: usize = first.shape[..axis].iter().product();
    let inner: usize = first.shape[axis + 1..].iter().product();
    let mut shape = first.shape.clone();
    shape[axis] = parts.iter().map(|p| p.shape[axis]).sum();
    // Concatenated as one gather over the inputs laid end to end.
    let mut offsets = Vec::with_capacity(parts.len());
    let mut total = 0;
    for p in &parts {
        offsets.push(total);
        total += p.len();
    }
    let mut idx = Vec::with_capacity(total);
    for o in 0..outer {
        for (p, off) in parts.iter().zip(&offsets) {
            let chunk = p.shape[axis] * inner;
            idx.extend(off + o * chunk..off + (o + 1) * chunk);
        }
    }
    let all = concat_data(&parts.iter().map(|p| &p.data).collect::<Vec<_>>());
    Ok(vec![tensor(ctx, shape, all.gather(&idx))?])
}

/// The values of same-typed `parts` end to end.
fn concat_data(parts: &[&Data]) -> Data {
    let mut out = parts[0].clone();
    for p in &parts[1..] {
        match (&mut out, p) {
            (Data::F32(a), Data::F32(b)) => a.extend_from_slice(b),
            (Data::F64(a), Data::F64(b)) => a.extend_from_slice(b),
            (Data::I8(a), Data::I8(b)) => a.extend_from_slice(b),
            (Data::I16(a), Data::I16(b)) => a.extend_from_slice(b),
            (Data::I32(a), Data::I32(b)) => a.extend_from_slice(b),
            (Data::I64(a), Data::I64(b)) => a.extend_from_slice(b),
            (Data::U8(a), Data::U8(b)) => a.extend_from_slice(b),
            (Data::U16(a), Data::U16(b)) => a.extend_from_slice(b),
            (Data::U32(a), Data::U32(b)) => a.extend_from_slice(b),
            (Data::U64(a), Data::U64(b)) => a.extend_from_slice(b),
            (Data::Bool(a), Data::Bool(b)) => a.extend_from_slice(b),
            _ => unreachable!("concat_data's callers check the types"),
        }
    }
    out
}

fn split(ctx: &Ctx<'_>) -> R {
    let x = ctx.input(0)?;
    let n_out = ctx.node.outputs.len();
    let sizes = if ctx.opset < 13 {
        ctx.known(&["axis", "split"])?;
        ctx.ints("split")?
    } else {
        ctx.known(&["axis", "num_outputs"])?;
        ctx.ints_input(1)?
    };
    let axis = ctx.axis(ctx.int("axis", 0)?, x.shape.len())?;
    let dim = x.shape[axis];
    let sizes: Vec<usize> = match sizes {
        Some(s) => {
            if s.len() != n_out
                || s.iter().any(|v| *v < 0)
                || s.iter().try_fold(0i64, |a, v| a.checked_add(*v)) != Some(dim as i64)
            {
                return Err(ctx.invalid(format!("split {s:?} of dim {dim} into {n_out} outputs")));
            }
            s.iter().map(|v| *v as usize).collect()
        }
        None => {
            let parts = if ctx.opset >= 18 {
                let n = ctx.int("num_outputs", -1)?;
                if n < 1 || n as usize != n_out {
                    return Err(ctx.invalid(format!("num_outputs {n} with {n_out} outputs")));
                }
                n as usize
            } else {
                n_out
            };
            let each = dim.div_ceil(parts.max(1));
            if ctx.opset < 18 && dim % parts.max(1) != 0 {
                return Err(ctx.invalid(format!("dim {dim} does not split evenly into {parts}")));
            }
            (0..parts)
                .map(|i| each.min(dim.saturating_sub(i * each)))
                .collect()
        }
    };
    let outer: usize = x.shape[..axis].iter().product();
    let inner: usize = x.shape[axis + 1..].iter().product();
    let mut start = 0;
    let mut outs = Vec::with_capacity(n_out);
    for s in sizes {
        let mut idx = Vec::with_capacity(outer * s * inner);
        for o in 0..outer {
            let base = (o * dim + start) * inner;
            idx.extend(base..base + s * inner);
        }
        let mut shape = x.shape.clone();
        shape[axis] = s;
        outs.push(tensor(ctx, shape, x.data.gather(&idx))?);
        start += s;
    }
    Ok(outs)
}

fn slice(ctx: &Ctx<'_>) -> R {
    let x = ctx.input(0)?;
    let r = x.shape.len();
    let (starts, ends, axes, steps) = if ctx.opset < 10 {
        ctx.known(&["starts", "ends", "axes"])?;
        (
            ctx.ints("starts")?,
            ctx.ints("ends")?,
            ctx.ints("axes")?,
            None,
        )
    } else {
        ctx.known(&[])?;
        (
            ctx.ints_input(1)?,
            ctx.ints_input(2)?,
            ctx.ints_input(3)?,
            ctx.ints_input(4)?,
        )
    };
    let starts = starts.ok_or_else(|| ctx.invalid("no starts"))?;
    let ends = ends.ok_or_else(|| ctx.invalid("no ends"))?;
    let axes = axes.unwrap_or_else(|| (0..starts.len() as i64).collect());
    let steps = steps.unwrap_or_else(|| vec![1; starts.len()]);
    if ends.len() != starts.len() || axes.len() != starts.len() || steps.len() != starts.len() {
        return Err(ctx.invalid("starts, ends, axes and steps differ in length"));
    }
    let s = strides(&x.shape);
    let mut begin: Vec<i64> = vec![0; r];
    let mut step: Vec<i64> = vec![1; r];
    let mut shape = x.shape.clone();
    let mut seen = vec![false; r];
    for i in 0..starts.len() {
        let a = ctx.axis(axes[i], r)?;
        if std::mem::replace(&mut seen[a], true) {
            return Err(ctx.invalid(format!("axis {a} repeats")));
        }
        let dim = x.shape[a] as i64;
        let st = steps[i];
        if st == 0 {
            return Err(ctx.invalid("step 0"));
        }
        let norm = |v: i64| if v < 0 { v.saturating_add(dim) } else { v };
        let (b, e) = if st > 0 {
            (norm(starts[i]).clamp(0, dim), norm(ends[i]).clamp(0, dim))
        } else {
            (
                // max/min rather than clamp: an empty dim has no valid start.
                norm(starts[i]).max(0).min(dim - 1),
                norm(ends[i]).max(-1).min(dim - 1),
            )
        };
        let n = if st > 0 {
            if e > b { (e - b + st - 1) / st } else { 0 }
        } else if b > e {
            (b - e + (-st) - 1) / (-st)
        } else {
            0
        };
        begin[a] = b.max(0);
        step[a] = st;
        shape[a] = n as usize;
    }
    let base: isize = (0..r).map(|d| begin[d] as isize * s[d] as isize).sum();
    let steps: Vec<isize> = (0..r).map(|d| step[d] as isize * s[d] as isize).collect();
    let idx = if shape.iter().product::<usize>() == 0 {
        Vec::new()
    } else {
        strided(&shape, &steps, base)
    };
    Ok(vec![tensor(ctx, shape, x.data.gather(&idx))?])
}

fn gather(ctx: &Ctx<'_>) -> R {
    ctx.known(&["axis"])?;
    let (x, ind) = (ctx.input(0)?, ctx.input(1)?);
    let indices = match &ind.data {
        Data::I32(_) | Data::I64(_) => ind.data.to_i64().unwrap_or_default(),
        d => return Err(ctx.invalid(format!("indices of type {}", d.dtype()))),
    };
    let axis = ctx.axis(ctx.int("axis", 0)?, x.shape.len())?;
    let dim = x.shape[axis] as i64;
    let outer: usize = x.shape[..axis].iter().product();
    let inner: usize = x.shape[axis + 1..].iter().product();
    elems(ctx, &[outer, indices.len(), inner])?;
    let mut idx = Vec::with_capacity(outer * indices.len() * inner);
    for o in 0..outer {
        for &i in &indices {
            if i < -dim || i >= dim {
                return Err(ctx.invalid(format!("index {i} is out of bounds for dim {dim}")));
            }
            let i = if i < 0 { i + dim } else { i } as usize;
            let base = (o * x.shape[axis] + i) * inner;
            idx.extend(base..base + inner);
        }
    }
    let mut shape = x.shape[..axis].to_vec();
    shape.extend(&ind.shape);
    shape.extend(&x.shape[axis + 1..]);
    Ok(vec![tensor(ctx, shape, x.data.gather(&idx))?])
}

fn expand(ctx: &Ctx<'_>) -> R {
    ctx.known(&[])?;
    let x = ctx.input(0)?;
    let want = ctx
        .ints_input(1)?
        .ok_or_else(|| ctx.invalid("no shape input"))?;
    if want.iter().any(|d| *d < 0) {
        return Err(ctx.invalid(format!("shape {want:?}")));
    }
    let want: Vec<usize> = want.iter().map(|d| *d as usize).collect();
    let shape = broadcast_shape(&x.shape, &want)
        .ok_or_else(|| ctx.invalid(format!("{:?} does not expand to {want:?}", x.shape)))?;
    elems(ctx, &shape)?;
    let idx = broadcast_index(&x.shape, &shape);
    Ok(vec![tensor(ctx, shape, x.data.gather(&idx))?])
}

fn pad(ctx: &Ctx<'_>) -> R {
    let x = ctx.input(0)?;
    let r = x.shape.len();
    let (mode, pads, value, axes) = if ctx.opset < 11 {
        ctx.known(&["mode", "pads", "value"])?;
        let pads = ctx.ints("pads")?.ok_or_else(|| ctx.invalid("no pads"))?;
        (
            ctx.string("mode", "constant")?,
            pads,
            Some(f64::from(ctx.float("value", 0.0)?)),
            None,
        )
    } else {
        ctx.known(&["mode"])?;
        let pads = ctx.ints_input(1)?.ok_or_else(|| ctx.invalid("no pads"))?;
        let value = match ctx.opt(2) {
            Some(v) if v.len() == 1 && v.data.dtype() == x.data.dtype() => Some(v.data.to_f64()[0]),
            Some(_) => {
                return Err(ctx.invalid("constant_value must be one value of the input's type"));
            }
            None => None,
        };
        (
            ctx.string("mode", "constant")?,
            pads,
            value,
            ctx.ints_input(3)?,
        )
    };
    let axes: Vec<usize> = match axes {
        None => (0..r).collect(),
        Some(a) => a
            .iter()
            .map(|a| ctx.axis(*a, r))
            .collect::<Result<_, _>>()?,
    };
    if pads.len() != 2 * axes.len() {
        return Err(ctx.invalid(format!("pads {pads:?} for {} axes", axes.len())));
    }
    let (mut before, mut after) = (vec![0i64; r], vec![0i64; r]);
    for (i, a) in axes.iter().enumerate() {
        before[*a] = pads[i];
        after[*a] = pads[i + axes.len()];
    }
    let shape: Vec<usize> = (0..r)
        .map(|d| {
            (x.shape[d] as i64)
                .checked_add(before[d])
                .and_then(|v| v.checked_add(after[d]))
                .unwrap_or(-1)
        })
        .map(|d| {
            usize::try_from(d)
                .map_err(|_| ctx.invalid(format!("pads {pads:?} remove more than the input")))
        })
        .collect::<Result<_, _>>()?;
    if mode != "constant" && shape.iter().product::<usize>() > 0 && x.shape.contains(&0) {
        return Err(ctx.invalid(format!("mode {mode} on an empty input")));
    }
    let s = strides(&x.shape);
    // Source index per output element, or `None` for the constant.
    let mut idx: Vec<Option<usize>> = Vec::with_capacity(elems(ctx, &shape)?);
    for p in positions(&shape) {
        let mut at = Some(0usize);
        for d in 0..r {
            let n = x.shape[d] as i64;
            let i = p[d] as i64 - before[d];
            let src = match mode.as_str() {
                _ if (0..n).contains(&i) => Some(i),
                "constant" => None,
                "edge" => Some(i.clamp(0, n - 1)),
                "reflect" if n == 1 => Some(0),
                "reflect" => {
                    let period = 2 * (n - 1);
                    let m = i.rem_euclid(period);
                    Some(if m < n { m } else { period - m })
                }
                "wrap" => Some(i.rem_euclid(n)),
                other => return Err(ctx.unsupported(format!("mode {other:?}"))),
            };
            at = match (at, src) {
                (Some(a), Some(i)) => Some(a + i as usize * s[d]),
                _ => None,
            };
        }
        idx.push(at);
    }
    let fill = value.unwrap_or(0.0);
    let vals = x.data.to_f64();
    // Through f64 is exact for the types it accepts here; 64-bit integers are moved directly.
    let d = match &x.data {
        Data::I64(v) => Data::I64(
            idx.iter()
                .map(|i| i.map_or(fill as i64, |i| v[i]))
                .collect(),
        ),
        Data::U64(v) => Data::U64(
            idx.iter()
                .map(|i| i.map_or(fill as u64, |i| v[i]))
                .collect(),
        ),
        Data::Bool(v) => Data::Bool(
            idx.iter()
                .map(|i| i.map_or(fill != 0.0, |i| v[i]))
                .collect(),
        ),
        other => from_f64(
            other.dtype(),
            idx.iter().map(|i| i.map_or(fill, |i| vals[i])).collect(),
        )
        .ok_or_else(|| ctx.unsupported(format!("type {}", other.dtype())))?,
    };
    Ok(vec![tensor(ctx, shape, d)?])
}

fn resize(ctx: &Ctx<'_>) -> R {
    if ctx.opset < 11 {
        return Err(ctx.unsupported("opset < 11 (Resize-10's input layout)"));
    }
    ctx.known(&[
        "mode",
        "coordinate_transformation_mode",
        "nearest_mode",
        "cubic_coeff_a",
        "exclude_outside",
        "extrapolation_value",
        "antialias",
        "axes",
        "keep_aspect_ratio_policy",
    ])?;
    let mode = ctx.string("mode", "nearest")?;
    if mode != "nearest" {
        return Err(ctx.unsupported(format!("mode {mode:?}")));
    }
    let coord = ctx.string("coordinate_transformation_mode", "half_pixel")?;
    let nearest = ctx.string("nearest_mode", "round_prefer_floor")?;
    let x = ctx.input(0)?;
    let r = x.shape.len();
    let axes: Vec<usize> = match ctx.ints("axes")? {
        None => (0..r).collect(),
        Some(a) => a
            .iter()
            .map(|a| ctx.axis(*a, r))
            .collect::<Result<_, _>>()?,
    };
    let floats = |i: usize| -> Result<Option<Vec<f64>>, EvalError> {
        match ctx.opt(i) {
            Some(t) if t.is_empty() => Ok(None),
            Some(t) => match &t.data {
                Data::F32(_) | Data::F64(_) => Ok(Some(t.data.to_f64())),
                d => Err(ctx.invalid(format!("input {i} of type {}", d.dtype()))),
            },
            None => Ok(None),
        }
    };
    let roi = floats(1)?;
    let scales_in = floats(2)?;
    let sizes_in = ctx.ints_input(3)?.filter(|s| !s.is_empty());
    let mut scale = vec![1f64; r];
    let mut out = x.shape.clone();
    match (scales_in, sizes_in) {
        (Some(s), None) => {
            if s.len() != axes.len() || s.iter().any(|v| *v <= 0.0) {
                return Err(ctx.invalid(format!("scales {s:?} for {} axes", axes.len())));
            }
            for (i, a) in axes.iter().enumerate() {
                scale[*a] = s[i];
                out[*a] = (x.shape[*a] as f64 * s[i]).floor() as usize;
            }
        }
        (None, Some(sz)) => {
            if sz.len() != axes.len() || sz.iter().any(|v| *v <= 0) {
                return Err(ctx.invalid(format!("sizes {sz:?} for {} axes", axes.len())));
            }
            let policy = ctx.string("keep_aspect_ratio_policy", "stretch")?;
            let ratios: Vec<f64> = axes
                .iter()
                .zip(&sz)
                .map(|(a, s)| *s as f64 / x.shape[*a] as f64)
                .collect();
            let common = match policy.as_str() {
                "stretch" => None,
                "not_larger" => Some(ratios.iter().copied().fold(f64::INFINITY, f64::min)),
                "not_smaller" => Some(ratios.iter().copied().fold(0.0, f64::max)),
                p => return Err(ctx.invalid(format!("keep_aspect_ratio_policy {p:?}"))),
            };
            for (i, a) in axes.iter().enumerate() {
                match common {
                    None => {
                        out[*a] = sz[i] as usize;
                        scale[*a] = ratios[i];
                    }
                    Some(c) => {
                        out[*a] = (x.shape[*a] as f64 * c).round() as usize;
                        scale[*a] = c;
                    }
                }
            }
        }
        _ => return Err(ctx.invalid("exactly one of scales and sizes must be given")),
    }
    elems(ctx, &out)?;
    let roi_at = |d: usize| -> Option<(f64, f64)> {
        let roi = roi.as_ref()?;
        let k = axes.iter().position(|a| *a == d)?;
        Some((roi[k], roi[k + axes.len()]))
    };
    let extrapolation = f64::from(ctx.float("extrapolation_value", 0.0)?);
    // Per dim and output index: the source index, or `None` outside the input (only
    // tf_crop_and_resize extrapolates).
    let mut maps: Vec<Vec<Option<usize>>> = Vec::with_capacity(r);
    for d in 0..r {
        let (n_in, n_out, s) = (x.shape[d] as f64, out[d] as f64, scale[d]);
        let mut map = Vec::with_capacity(out[d]);
        for i in 0..out[d] {
            let xr = i as f64;
            let orig = match coord.as_str() {
                "half_pixel" => (xr + 0.5) / s - 0.5,
                "half_pixel_symmetric" => {
                    let adj = n_out / (s * n_in);
                    let center = n_in / 2.0;
                    center * (1.0 - adj) + (xr + 0.5) / s - 0.5
                }
                "pytorch_half_pixel" => {
                    if n_out > 1.0 {
                        (xr + 0.5) / s - 0.5
                    } else {
                        0.0
                    }
                }
                "align_corners" => {
                    if n_out == 1.0 {
                        0.0
                    } else {
                        xr * (n_in - 1.0) / (n_out - 1.0)
                    }
                }
                "asymmetric" => xr / s,
                "tf_half_pixel_for_nn" => (xr + 0.5) / s,
                "tf_crop_and_resize" => {
                    let (a, b) = roi_at(d).unwrap_or((0.0, 1.0));
                    if n_out > 1.0 {
                        a * (n_in - 1.0) + xr * (b - a) * (n_in - 1.0) / (n_out - 1.0)
                    } else {
                        0.5 * (a + b) * (n_in - 1.0)
                    }
                }
                other => {
                    return Err(
                        ctx.unsupported(format!("coordinate_transformation_mode {other:?}"))
                    );
                }
            };
            if coord == "tf_crop_and_resize" && (orig < 0.0 || orig > n_in - 1.0) {
                map.push(None);
                continue;
            }
            let fl = orig.floor();
            let rounded = match nearest.as_str() {
                "round_prefer_floor" => {
                    if orig - fl == 0.5 {
                        fl
                    } else {
                        orig.round()
                    }
                }
                "round_prefer_ceil" => {
                    if orig - fl == 0.5 {
                        fl + 1.0
                    } else {
                        orig.round()
                    }
                }
                "floor" => fl,
                "ceil" => orig.ceil(),
                other => return Err(ctx.invalid(format!("nearest_mode {other:?}"))),
            };
            map.push(Some(rounded.clamp(0.0, n_in - 1.0) as usize));
        }
        maps.push(map);
    }
    let s = strides(&x.shape);
    let idx: Vec<Option<usize>> = positions(&out)
        .into_iter()
        .map(|p| (0..r).try_fold(0usize, |acc, d| maps[d][p[d]].map(|i| acc + i * s[d])))
        .collect();
    let vals = x.data.to_f64();
    let d = match &x.data {
        Data::I64(v) => Data::I64(
            idx.iter()
                .map(|i| i.map_or(extrapolation as i64, |i| v[i]))
                .collect(),
        ),
        Data::U64(v) => Data::U64(
            idx.iter()
                .map(|i| i.map_or(extrapolation as u64, |i| v[i]))
                .collect(),
        ),
        other => from_f64(
            other.dtype(),
            idx.iter()
                .map(|i| i.map_or(extrapolation, |i| vals[i]))
                .collect(),
        )
        .ok_or_else(|| ctx.unsupported(format!("type {}", other.dtype())))?,
    };
    Ok(vec![tensor(ctx, out, d)?])
}

// ---------------------------------------------------------------------------------------------
// Constants, shapes, casts, ranges

fn constant(ctx: &Ctx<'_>) -> R {
    ctx.known(&[
        "value",
        "value_float",
        "value_floats",
        "value_int",
        "value_ints",
        "value_string",
        "value_strings",
        "sparse_value",
    ])?;
    let a = &ctx.node.attributes;
    if a.len() != 1 {
        return Err(ctx.invalid("exactly one value attribute is required"));
    }
    let t = match (a[0].name.as_str(), &a[0].value) {
        ("value", _) => {
            let t = ctx
                .tensor_attr("value")
                .ok_or_else(|| ctx.invalid("`value` is not a tensor"))?;
            ctx.tensor_value(t)?
        }
        ("value_float", _) => {
            HostTensor::new(vec![], Data::F32(vec![ctx.float("value_float", 0.0)?]))
        }
        ("value_floats", _) => {
            let v = ctx.floats("value_floats")?.unwrap_or_default();
            HostTensor::new(vec![v.len()], Data::F32(v))
        }
        ("value_int", _) => HostTensor::new(vec![], Data::I64(vec![ctx.int("value_int", 0)?])),
        ("value_ints", _) => {
            let v = ctx.ints("value_ints")?.unwrap_or_default();
            HostTensor::new(vec![v.len()], Data::I64(v))
        }
        (other, _) => return Err(ctx.unsupported(format!("`{other}` constants"))),
    }
    .ok_or_else(|| ctx.invalid("constant does not fill its shape"))?;
    Ok(vec![t])
}

fn constant_of_shape(ctx: &Ctx<'_>) -> R {
    ctx.known(&["value"])?;
    let dims = ctx
        .ints_input(0)?
        .ok_or_else(|| ctx.invalid("no shape input"))?;
    if dims.iter().any(|d| *d < 0) {
        return Err(ctx.invalid(format!("shape {dims:?}")));
    }
    let shape: Vec<usize> = dims.iter().map(|d| *d as usize).collect();
    let n = elems(ctx, &shape)?;
    let value = match ctx.tensor_attr("value") {
        None => {
            HostTensor::new(vec![1], Data::F32(vec![0.0])).ok_or_else(|| ctx.invalid("value"))?
        }
        Some(t) => ctx
            .tensor_value(t)?
            .ok_or_else(|| ctx.invalid("value does not fill its shape"))?,
    };
    if value.len() != 1 {
        return Err(ctx.invalid("`value` must hold one element"));
    }
    Ok(vec![tensor(ctx, shape, value.data.gather(&vec![0; n]))?])
}

fn shape_op(ctx: &Ctx<'_>) -> R {
    ctx.known(&["start", "end"])?;
    let x = ctx.input(0)?;
    let r = x.shape.len() as i64;
    let clamp = |v: i64| (if v < 0 { v + r } else { v }).clamp(0, r) as usize;
    let start = clamp(ctx.int("start", 0)?);
    let end = clamp(ctx.int("end", r)?);
    let dims: Vec<i64> = x.shape[start..end.max(start)]
        .iter()
        .map(|d| *d as i64)
        .collect();
    Ok(vec![tensor(ctx, vec![dims.len()], Data::I64(dims))?])
}

fn cast(ctx: &Ctx<'_>) -> R {
    ctx.known(&["to", "saturate", "round_mode"])?;
    let x = ctx.input(0)?;
    let to_id = ctx.int("to", 0)?;
    let to = i32::try_from(to_id)
        .ok()
        .and_then(DataType::from_id)
        .ok_or_else(|| ctx.invalid(format!("`to` {to_id} is not an element type")))?;
    let d = cast_data(&x.data, to)
        .ok_or_else(|| ctx.unsupported(format!("cast from {} to {to}", x.data.dtype())))?;
    Ok(vec![tensor(ctx, x.shape.clone(), d)?])
}

/// `d` converted to `to` as C and numpy convert: floats to integers truncate toward zero
/// (saturating at the type's bounds, NaN to 0), integers wrap, anything non-zero is `true`.
fn cast_data(d: &Data, to: DataType) -> Option<Data> {
    if let Some(ints) = d.to_i64() {
        // u64 beyond i64::MAX converts from its own value, not the wrapped i64.
        if let Data::U64(v) = d {
            match to {
                DataType::Float => return Some(Data::F32(v.iter().map(|x| *x as f32).collect())),
                DataType::Double => return Some(Data::F64(v.iter().map(|x| *x as f64).collect())),
                DataType::Bool => return Some(Data::Bool(v.iter().map(|x| *x != 0).collect())),
                _ => {}
            }
        }
        return match to {
            DataType::Float => Some(Data::F32(ints.iter().map(|x| *x as f32).collect())),
            DataType::Double => Some(Data::F64(ints.iter().map(|x| *x as f64).collect())),
            DataType::Bool => Some(Data::Bool(ints.iter().map(|x| *x != 0).collect())),
            _ => int_to(ints.iter().copied(), to),
        };
    }
    let f = d.to_f64();
    Some(match to {
        DataType::Float => match d {
            Data::F32(v) => Data::F32(v.clone()),
            _ => Data::F32(f.iter().map(|x| *x as f32).collect()),
        },
        DataType::Double => Data::F64(f),
        DataType::Bool => Data::Bool(f.iter().map(|x| *x != 0.0).collect()),
        DataType::Int8 => Data::I8(f.iter().map(|x| *x as i8).collect()),
        DataType::Int16 => Data::I16(f.iter().map(|x| *x as i16).collect()),
        DataType::Int32 => Data::I32(f.iter().map(|x| *x as i32).collect()),
        DataType::Int64 => Data::I64(f.iter().map(|x| *x as i64).collect()),
        DataType::Uint8 => Data::U8(f.iter().map(|x| *x as u8).collect()),
        DataType::Uint16 => Data::U16(f.iter().map(|x| *x as u16).collect()),
        DataType::Uint32 => Data::U32(f.iter().map(|x| *x as u32).collect()),
        DataType::Uint64 => Data::U64(f.iter().map(|x| *x as u64).collect()),
        _ => return None,
    })
}

fn int_to(v: impl Iterator<Item = i64>, to: DataType) -> Option<Data> {
    Some(match to {
        DataType::Int8 => Data::I8(v.map(|x| x as i8).collect()),
        DataType::Int16 => Data::I16(v.map(|x| x as i16).collect()),
        DataType::Int32 => Data::I32(v.map(|x| x as i32).collect()),
        DataType::Int64 => Data::I64(v.collect()),
        DataType::Uint8 => Data::U8(v.map(|x| x as u8).collect()),
        DataType::Uint16 => Data::U16(v.map(|x| x as u16).collect()),
        DataType::Uint32 => Data::U32(v.map(|x| x as u32).collect()),
        DataType::Uint64 => Data::U64(v.map(|x| x as u64).collect()),
        _ => return None,
    })
}

fn range(ctx: &Ctx<'_>) -> R {
    ctx.known(&[])?;
    let (s, l, d) = (ctx.input(0)?, ctx.input(1)?, ctx.input(2)?);
    let dtype = s.data.dtype();
    if [s, l, d]
        .iter()
        .any(|t| t.len() != 1 || t.data.dtype() != dtype)
    {
        return Err(ctx.invalid("start, limit and delta must be scalars of one type"));
    }
    let out = match dtype {
        DataType::Float | DataType::Double => {
            let (a, b, st) = (s.data.to_f64()[0], l.data.to_f64()[0], d.data.to_f64()[0]);
            if st == 0.0 {
                return Err(ctx.invalid("delta 0"));
            }
            let n = ((b - a) / st).ceil().max(0.0) as usize;
            elems(ctx, &[n])?;
            let v: Vec<f64> = (0..n).map(|i| a + i as f64 * st).collect();
            from_f64(dtype, v)
        }
        _ => {
            let get = |t: &HostTensor| t.data.to_i64().map(|v| v[0]);
            let (Some(a), Some(b), Some(st)) = (get(s), get(l), get(d)) else {
                return Err(ctx.unsupported(format!("type {dtype}")));
            };
            if st == 0 {
                return Err(ctx.invalid("delta 0"));
            }
            let n = ((b as f64 - a as f64) / st as f64).ceil().max(0.0) as usize;
            elems(ctx, &[n])?;
            int_to(
                (0..n as i64).map(|i| a.wrapping_add(i.wrapping_mul(st))),
                dtype,
            )
        }
    }
    .ok_or_else(|| ctx.unsupported(format!("type {dtype}")))?;
    let n = out.len();
    Ok(vec![tensor(ctx, vec![n], out)?])
}
