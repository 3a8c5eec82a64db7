// The uniform block shared by gemv.wgsl and gemv_q8.wgsl (GemvParams in gemv.rs).

struct Params {
    rows: u32,          // rows of W (and length of y)
    units_per_row: u32, // units in a row
    row_bytes: u32,     // bytes of a row
    w_offset: u32,      // byte offset of row 0 in `w`
    y_offset: u32,      // element offset of y[0] in `y`
    x_offset: u32,      // vec4 offset of x[0] in `x`
    grid_x: u32,        // workgroups along x (the grid is 2D past 65535 workgroups)
    residual: u32,      // 1: y[i] = (W x)[i] + res[i] (a transformer's residual add, fused)
    x_aux: u32,         // XFORM 3, 4: vec4 offset of the second GLU operand after x[i]
    eps: f32,           // XFORM 1, 2, 5: the norms' epsilon
    w_one: f32,         // XFORM 5: added to the norm weights (1 for (1 + w) norms, else 0)
    write_x: u32,       // XFORM 5: 1 = workgroup 0 writes the new residual row to `x_out`
    head_dim: u32,      // XFORM 6: elements per attention head
    blocks: u32,        // XFORM 6: key blocks per head
    _pad0: u32,
    _pad1: u32,
}
