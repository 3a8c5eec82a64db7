// The uniform block and the storage bindings 0-4 of the GEMM kernels (gemm.wgsl,
// gemm_rows.wgsl, gemm_coop.wgsl): Y[t, r] = sum_k W[r, k] * input(X[t])[k] (+ a residual or a
// bias), W a row-major GGUF matrix, X and Y f32 token-major with their own row strides.

struct Params {
    rows: u32,      // rows of W in this binding: output columns
    cols: u32,      // columns of W: the reduction length
    tokens: u32,    // rows of X and Y
    row_bytes: u32, // bytes of a row of W
    w_offset: u32,  // byte offset of row 0 in `w`
    x_offset: u32,  // element offset of X[0, 0] in `x`
    x_stride: u32,  // elements from X[t, 0] to X[t + 1, 0]
    x_aux: u32,     // XFORM 3, 4: element offset of the second operand after X[t, k]
    y_offset: u32,  // element offset of Y[0, 0] in `y` (and `res`)
    y_stride: u32,  // elements from Y[t, 0] to Y[t + 1, 0]
    residual: u32,  // 1: add res[same index]; 2: add res[y_offset + r] (a bias row)
    grid_x: u32,    // gemm_rows: workgroups along x (2D past the per-dimension limit); else 0
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> w: array<u32>;
@group(0) @binding(2) var<storage, read> x: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
// The residual (same indexing as y) or the bias (indexed by output column); bound to x, and
// unread, when `residual` is 0.
@group(0) @binding(4) var<storage, read> res: array<f32>;
