//! Kernels of the ONNX vision executor (`gpuport-onnx`'s GPU path), all f32 NCHW: convolution
//! with fused bias and activation, broadcasting element-wise ops, pooling, batched matrix
//! products, softmax along an axis, and data movement by a plan-time index map. Their CPU
//! reference is the ONNX host evaluator (`gpuport_onnx::reference`), which the executor's
//! tests compare them with op by op and model by model.

use bytemuck::{Pod, Zeroable};

use crate::kernel::{Family, KernelSpec};

/// Workgroup size of every vision kernel but softmax.
pub const WG: u32 = 256;
/// Workgroup size of the softmax kernel (one invocation per line).
pub const SOFTMAX_WG: u32 = 64;
/// Most dims the broadcasting element-wise kernel takes.
pub const MAX_RANK: usize = 8;

/// An activation fused into a convolution (`ACT` in `vision_conv.wgsl`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Activation {
    /// None.
    None,
    /// `clamp(x, lo, hi)`: ReLU is `(0, +inf)`, ReLU6 `(0, 6)`.
    Clamp(f32, f32),
    /// `x * sigmoid(x)`.
    Silu,
}

impl Activation {
    fn code(self) -> u32 {
        match self {
            Activation::None => 0,
            Activation::Clamp(..) => 1,
            Activation::Silu => 2,
        }
    }

    /// The clamp bounds (unused by the other activations).
    pub fn bounds(self) -> (f32, f32) {
        match self {
            Activation::Clamp(lo, hi) => (lo, hi),
            _ => (f32::MIN, f32::MAX),
        }
    }
}

/// The geometry of a 2-D convolution, the head of both convolution kernels' uniform blocks
/// (`Params` in `vision_conv.wgsl` and `vision_conv_gemm.wgsl` start with these fields in
/// this order).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct ConvShape {
    /// Batch.
    pub n: u32,
    /// Input channels.
    pub c: u32,
    /// Input height.
    pub h: u32,
    /// Input width.
    pub w: u32,
    /// Output channels.
    pub m: u32,
    /// Output height.
    pub oh: u32,
    /// Output width.
    pub ow: u32,
    /// Channel groups.
    pub groups: u32,
    /// Kernel height.
    pub kh: u32,
    /// Kernel width.
    pub kw: u32,
    /// Vertical stride.
    pub sh: u32,
    /// Horizontal stride.
    pub sw: u32,
    /// Vertical dilation.
    pub dh: u32,
    /// Horizontal dilation.
    pub dw: u32,
    /// Top pad.
    pub ph: u32,
    /// Left pad.
    pub pw: u32,
}

/// Uniform block of `vision_conv.wgsl`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct ConvParams {
    /// The convolution.
    pub shape: ConvShape,
    /// Invocations (output positions × channel blocks).
    pub total: u32,
    /// Workgroups along x.
    pub grid_x: u32,
    /// Lower clamp bound.
    pub lo: f32,
    /// Upper clamp bound.
    pub hi: f32,
}

/// Output channels one convolution invocation computes when the channels per group allow
/// (else 1): each input element is then loaded once for all of them.
pub const CONV_OCT: u32 = 4;

/// The convolution variant, `oct` output channels per invocation (1 or [`CONV_OCT`]).
pub fn conv_spec(act: Activation, oct: u32) -> KernelSpec {
    KernelSpec {
        family: Family::VisionConv,
        quant: None,
        reduction: None,
        constants: vec![("WG", WG), ("ACT", act.code()), ("OCT", oct)],
    }
}

/// A workgroup's tile of the convolution GEMM (`vision_conv_gemm.wgsl`): output channels ×
/// output columns (batch × positions), and the step along K.
pub const CONV_GEMM_TILE: (u32, u32, u32) = (64, 64, 16);

/// Uniform block of `vision_conv_gemm.wgsl`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct ConvGemmParams {
    /// The convolution (one group).
    pub shape: ConvShape,
    /// `C · KH · KW`.
    pub k_total: u32,
    /// K per slice (a multiple of the K step; `k_total` when not split).
    pub k_chunk: u32,
    /// Slices of K (grid z).
    pub slices: u32,
    /// Lower clamp bound.
    pub lo: f32,
    /// Upper clamp bound.
    pub hi: f32,
}

/// The one-group convolution as an implicit GEMM. `pointwise`: 1×1, stride 1, no pad.
/// `split`: write each K slice's raw sums for [`slice_sum_spec`] (bias and `act` unused).
pub fn conv_gemm_spec(act: Activation, pointwise: bool, split: bool) -> KernelSpec {
    KernelSpec {
        family: Family::VisionConvGemm,
        quant: None,
        reduction: None,
        constants: vec![
            ("ACT", if split { 0 } else { act.code() }),
            ("POINTWISE", u32::from(pointwise)),
            ("SPLIT", u32::from(split)),
        ],
    }
}

/// Uniform block of `vision_slice_sum.wgsl`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct SliceSumParams {
    /// Output channels.
    pub m: u32,
    /// Columns (batch × positions).
    pub cols: u32,
    /// Positions per image.
    pub plane: u32,
    /// Slices to add.
    pub slices: u32,
    /// Outputs.
    pub total: u32,
    /// Workgroups along x.
    pub grid_x: u32,
    /// Lower clamp bound.
    pub lo: f32,
    /// Upper clamp bound.
    pub hi: f32,
}

/// The sum of a split-K convolution's slices with bias and activation.
pub fn slice_sum_spec(act: Activation) -> KernelSpec {
    KernelSpec {
        family: Family::VisionSliceSum,
        quant: None,
        reduction: None,
        constants: vec![("WG", WG), ("ACT", act.code())],
    }
}

/// Element-wise ops (`OP` in `vision_binary.wgsl`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryOp {
    /// `a + b`.
    Add,
    /// `a - b`.
    Sub,
    /// `a * b`.
    Mul,
    /// `a / b`.
    Div,
    /// `sigmoid(a)`.
    Sigmoid,
    /// `clamp(a, lo, hi)`.
    Clamp,
    /// `a * sigmoid(a)`.
    Silu,
}

impl BinaryOp {
    /// Every op.
    pub const ALL: [BinaryOp; 7] = [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::Sigmoid,
        BinaryOp::Clamp,
        BinaryOp::Silu,
    ];

    /// Whether the op reads `b`.
    pub fn is_binary(self) -> bool {
        matches!(
            self,
            BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div
        )
    }
}

/// Uniform block of `vision_binary.wgsl`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct BinaryParams {
    /// Output elements.
    pub total: u32,
    /// Dims in use.
    pub rank: u32,
    /// Workgroups along x.
    pub grid_x: u32,
    /// Padding.
    pub pad: u32,
    /// Lower clamp bound.
    pub lo: f32,
    /// Upper clamp bound.
    pub hi: f32,
    /// Padding.
    pub pad2: [u32; 2],
    /// Output dims (the first `rank`).
    pub dims: [u32; MAX_RANK],
    /// Strides of `a` per output dim, 0 where it broadcasts.
    pub sa: [u32; MAX_RANK],
    /// Strides of `b` per output dim.
    pub sb: [u32; MAX_RANK],
}

/// The element-wise variant.
pub fn binary_spec(op: BinaryOp) -> KernelSpec {
    KernelSpec {
        family: Family::VisionBinary,
        quant: None,
        reduction: None,
        constants: vec![("WG", WG), ("OP", op as u32)],
    }
}

/// Uniform block of `vision_pool.wgsl`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct PoolParams {
    /// Batch × channels.
    pub planes: u32,
    /// Input height.
    pub h: u32,
    /// Input width.
    pub w: u32,
    /// Output height.
    pub oh: u32,
    /// Output width.
    pub ow: u32,
    /// Kernel height.
    pub kh: u32,
    /// Kernel width.
    pub kw: u32,
    /// Vertical stride.
    pub sh: u32,
    /// Horizontal stride.
    pub sw: u32,
    /// Vertical dilation.
    pub dh: u32,
    /// Horizontal dilation.
    pub dw: u32,
    /// Top pad.
    pub ph: u32,
    /// Left pad.
    pub pw: u32,
    /// Trailing pads (counted by `INCLUDE_PAD` averages).
    pub eh: u32,
    /// Right pad.
    pub ew: u32,
    /// Workgroups along x.
    pub grid_x: u32,
}

/// The pooling variant: max, or average counting the padding or not.
pub fn pool_spec(max: bool, include_pad: bool) -> KernelSpec {
    KernelSpec {
        family: Family::VisionPool,
        quant: None,
        reduction: None,
        constants: vec![
            ("WG", WG),
            ("MAX", u32::from(max)),
            ("INCLUDE_PAD", u32::from(include_pad)),
        ],
    }
}

/// Uniform block of `vision_matmul.wgsl`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct MatmulParams {
    /// Batch count.
    pub batch: u32,
    /// Output channels.
    pub m: u32,
    /// Batch (conv) or elements (index map).
    pub n: u32,
    /// Inner dimension.
    pub k: u32,
    /// Stride of A between batches (0: broadcast).
    pub a_batch: u32,
    /// Stride of A between rows.
    pub a_row: u32,
    /// Stride of A between columns.
    pub a_col: u32,
    /// Stride of B between batches (0: broadcast).
    pub b_batch: u32,
    /// Stride of B between rows.
    pub b_row: u32,
    /// Stride of B between columns.
    pub b_col: u32,
    /// Stride of the bias between rows (0: broadcast).
    pub c_row: u32,
    /// Stride of the bias between columns (0: broadcast).
    pub c_col: u32,
    /// Scale of the product.
    pub alpha: f32,
    /// Scale of the bias (0: none).
    pub beta: f32,
    /// Workgroups along x.
    pub grid_x: u32,
    /// Padding.
    pub pad: u32,
}

/// The matrix-product variant.
pub fn matmul_spec() -> KernelSpec {
    KernelSpec {
        family: Family::VisionMatmul,
        quant: None,
        reduction: None,
        constants: vec![("WG", WG)],
    }
}

/// Uniform block of `vision_softmax.wgsl`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct SoftmaxParams {
    /// Lines before the axis.
    pub outer: u32,
    /// Length of the axis.
    pub len: u32,
    /// Elements after the axis.
    pub inner: u32,
    /// Workgroups along x.
    pub grid_x: u32,
}

/// The softmax variant.
pub fn softmax_spec() -> KernelSpec {
    KernelSpec {
        family: Family::VisionSoftmax,
        quant: None,
        reduction: None,
        constants: vec![("WG", SOFTMAX_WG)],
    }
}

/// Uniform block of `vision_index.wgsl`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct IndexParams {
    /// Batch (conv) or elements (index map).
    pub n: u32,
    /// Workgroups along x.
    pub grid_x: u32,
    /// Value where the map is 0xffffffff (gather).
    pub fill: f32,
    /// Padding.
    pub pad: u32,
}

/// The index-map variant: gather (`out[i] = src[map[i]]`) or scatter (`out[map[i]] = src[i]`).
pub fn index_spec(scatter: bool) -> KernelSpec {
    KernelSpec {
        family: Family::VisionIndex,
        quant: None,
        reduction: None,
        constants: vec![("WG", WG), ("MODE", u32::from(scatter))],
    }
}

/// Every vision variant.
pub fn all_specs() -> Vec<KernelSpec> {
    let mut out = Vec::new();
    for act in [
        Activation::None,
        Activation::Clamp(0.0, 6.0),
        Activation::Silu,
    ] {
        for pointwise in [false, true] {
            out.push(conv_gemm_spec(act, pointwise, false));
        }
        out.push(slice_sum_spec(act));
    }
    for pointwise in [false, true] {
        out.push(conv_gemm_spec(Activation::None, pointwise, true));
    }
    for oct in [1, CONV_OCT] {
        out.extend([
            conv_spec(Activation::None, oct),
            conv_spec(Activation::Clamp(0.0, 6.0), oct),
            conv_spec(Activation::Silu, oct),
        ]);
    }
    out.extend([
        matmul_spec(),
        softmax_spec(),
        index_spec(false),
        index_spec(true),
    ]);
    out.extend(BinaryOp::ALL.map(binary_spec));
    for max in [false, true] {
        for include_pad in [false, true] {
            out.push(pool_spec(max, include_pad));
        }
    }
    out
}
