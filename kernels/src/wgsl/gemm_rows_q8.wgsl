// Few-row GEMM on int8 input, for batched decode: Y[t, r] = sum_k W[r, k] * X[t, k] for the
// `tokens` rows of X (+ res[t, r] when `residual` is 1, + res[y_offset + r] when it is 2: a
// bias), X given as the int8 blocks the one-row int8 GEMV reads (q8dot/input.wgsl: 3 vec4s
// per 32 values; token t's blocks start at vec4 x_offset + t * x_stride). The int8-input GEMV
// (gemv_q8.wgsl) widened to several tokens as gemm_rows.wgsl widens the float GEMV: a
// workgroup owns ROWS weight rows, its threads form ROWS / RPT groups of T = WG * RPT / ROWS
// lanes, and a group's lanes stride over the units of its RPT rows (neighbouring lanes on
// neighbouring units, so a warp's weight loads cover one contiguous run of bytes).
//
// Why: the float few-row kernel spends a decode and a multiply-add per weight element and
// token; at 8 tokens the Llama-8B shape's gate|up projection took 7.5 times its one-row int8
// GEMV (docs/performance.md, v28). Here a lane decodes a unit of each of its rows into int8
// words once (unit_weights) and, per token, loads the unit's input blocks once for all RPT
// rows (unit_input) and multiplies with dot4I8Packed (unit_apply): per weight word and token
// one instruction, and the blocks (a quarter of the f32 input's bytes) come from the cache.
//
// Tunables (override constants): WG, ROWS, RPT (1, 2 or 4) and NX (tokens per pass, 1-16). A
// thread's RPT rows' dot products for a pass's tokens are a TokenSums (q8dot/row_units.wgsl:
// named matrices, column j token j), transposed for the reduction. Passes of 16 decode each weight
// unit once for twice the tokens of 8 (32 rows: two passes instead of four). More tokens than
// NX: the workgroup loops over passes, a later pass reading its rows' weights again from the
// cache. Rows past the matrix and tokens past the last read the last row and token (in
// bounds, branch-free; their sums are never stored: on NVIDIA a load inside a branch waits out
// its latency before the next issues).

//!include gemm_params.wgsl

override WG: u32 = 128u;
override ROWS: u32 = 8u;
override RPT: u32 = 2u;
override NX: u32 = 8u;
override T: u32 = WG * RPT / ROWS;
// The quads' reduction on subgroups (rowsreduce/subgroup.wgsl): the transposed butterfly. On
// an H100 (docs/performance.md, "v44") eight streams of the Llama-1B shape decoded 4,528 tok/s
// with it against 4,056 by columns, the 8B 1,156 against 1,045.
const QUAD_TRANSPOSED: bool = true;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(2) var<storage, read> xq: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
// The residual (same indexing as y) or the bias (indexed by output column); bound to xq, and
// unread, when `residual` is 0.
@group(0) @binding(4) var<storage, read> res: array<f32>;

//!include reduce
//!include q8dot/input.wgsl
//!include q8dot

// Units in a row of W (read here and by the q8dot snippets that number them their own way).
fn q8_row_units() -> u32 {
    return p.cols / UNIT_COLS;
}

//!include q8dot/row_units.wgsl
//!include gemm_rows_store.wgsl

@compute @workgroup_size(WG)
fn main(l: Lanes) {
    let id = linear_id(l);
    let group = id / T;
    let lane = id % T;
    let row0 = (l.wg.x + l.wg.y * p.grid_x) * ROWS + group * RPT;
    let units = q8_row_units();
    let last = p.rows - 1u;
    let s0 = p.w_offset + min(row0, last) * p.row_bytes;
    let s1 = p.w_offset + min(row0 + 1u, last) * p.row_bytes;
    let s2 = p.w_offset + min(row0 + 2u, last) * p.row_bytes;
    let s3 = p.w_offset + min(row0 + 3u, last) * p.row_bytes;
    for (var t0 = 0u; t0 < p.tokens; t0 += NX) {
        var acc = TokenSums();
        if row0 < p.rows {
            for (var u = lane; u < units; u += T) {
                acc = add_unit(acc, row_units(s0, s1, s2, s3, u), u, t0);
            }
        }
        // Columns r for rows: the layout the reduction takes.
        store_quad(l, transpose(acc.q0), id, lane, row0, t0, 0u);
        if NX > 4u {
            store_quad(l, transpose(acc.q1), id, lane, row0, t0, 4u);
        }
        if NX > 8u {
            store_quad(l, transpose(acc.q2), id, lane, row0, t0, 8u);
        }
        if NX > 12u {
            store_quad(l, transpose(acc.q3), id, lane, row0, t0, 12u);
        }
    }
}

