// GEMV with fused dequantization: y[r] = sum_k W[r, k] * x[k] for a row-major GGUF weight
// matrix W (rows of whole blocks, packed in `w`), f32 x and y.
//
// Tunables (override constants): WG threads per workgroup, ROWS rows per workgroup; each row
// gets T = WG / ROWS threads that stride over the row's units (a unit is one GGUF block, or 4/8
// elements for f32/f16), so work per thread = units per row / T. The reduction of the T
// partial sums is a separate snippet: subgroup shuffles + one barrier, or a shared-memory tree.

struct Params {
    rows: u32,          // rows of W (and length of y)
    units_per_row: u32, // units in a row
    row_bytes: u32,     // bytes of a row
    w_offset: u32,      // byte offset of row 0 in `w`
    y_offset: u32,      // element offset of y[0] in `y`
    x_offset: u32,      // vec4 offset of x[0] in `x`
    grid_x: u32,        // workgroups along x (the grid is 2D past 65535 workgroups)
    _pad: u32,
}

override WG: u32 = 128u;
override ROWS: u32 = 4u;
override T: u32 = WG / ROWS;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> w: array<u32>;
@group(0) @binding(2) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;

//!include common.wgsl
//!include quant
//!include reduce

fn row_partial(row: u32, lane: u32) -> f32 {
    var acc = 0.0;
    if row < p.rows {
        let base = p.w_offset + row * p.row_bytes;
        for (var u = lane; u < p.units_per_row; u += T) {
            acc += unit_dot(base + u * UNIT_BYTES, p.x_offset + u * (UNIT_ELEMS / 4u));
        }
    }
    return acc;
}

@compute @workgroup_size(WG)
fn main(l: Lanes) {
    let id = linear_id(l);
    let slot = id / T;
    let lane = id % T;
    let row = (l.wg.x + l.wg.y * p.grid_x) * ROWS + slot;
    let total = reduce_rows(l, row_partial(row, lane), id, lane);
    if lane == 0u && row < p.rows {
        y[p.y_offset + row] = total;
    }
}
