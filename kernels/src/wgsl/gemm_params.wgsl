// The uniform block of the GEMM kernels (GemmParams in gemm.rs): gemm.wgsl, gemm_rows.wgsl,
// gemm_coop.wgsl through gemm_io.wgsl, and gemm_rows_q8.wgsl, whose X is int8 blocks
// (x_offset and x_stride in vec4s there).

struct Params {
    rows: u32,      // rows of W in this binding: output columns
    cols: u32,      // columns of W: the reduction length
    tokens: u32,    // rows of X and Y
    row_bytes: u32, // bytes of a row of W
    w_offset: u32,  // byte offset of row 0 in `w` (Q6_K: whole groups, quant/q6_k_groups.wgsl)
    x_offset: u32,  // element offset of X[0, 0] in `x`
    x_stride: u32,  // elements from X[t, 0] to X[t + 1, 0]
    x_aux: u32,     // XFORM 3, 4: element offset of the second operand after X[t, k]
    y_offset: u32,  // element offset of Y[0, 0] in `y` (and `res`)
    y_stride: u32,  // elements from Y[t, 0] to Y[t + 1, 0]
    residual: u32,  // 1: add res[same index]; 2: add res[y_offset + r] (a bias row)
    grid_x: u32,    // gemm_rows, gemm_splits: workgroups along x (2D grids); gemm_coop: the
                    // workgroups of a streamed grid (0: a grid of tiles); else 0
    // gemm_coop split along K (0 when not): each workgroup z sums `split_chunks` chunks of
    // columns and writes them raw (no residual) `split_stride` elements past split z - 1's;
    // gemm_splits adds the `splits` partials.
    split_chunks: u32,
    split_stride: u32,
    splits: u32,
    eps: f32,       // gemm_rows XFORM 1, 2: the norm's epsilon; else unread
}
