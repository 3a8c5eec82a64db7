// The output step of the few-row GEMMs (gemm_rows.wgsl, gemm_rows_q8.wgsl): a lane group's
// partial sums of up to four rows and four tokens of a pass (a quad) reduced over the group's
// T lanes and stored with the residual or bias. The including kernel declares `p`
// (gemm_params.wgsl), `y`, `res`, NX, RPT and T.

//!include gemm_store.wgsl
//!include rowsreduce

// A quad's sums after the reduction, as one lane holds them: `v[r][j]` is the sum of row
// row0 + row_at + r and token t + c + tok_at + j for r < rows and j < toks; the lane stores
// them when `keep` (lanes holding a copy another lane stores do not).
struct Quad {
    v: mat4x4<f32>,
    row_at: u32,
    tok_at: u32,
    rows: u32,
    toks: u32,
    keep: bool,
}

// Column r of `m` (row row0 + r of the thread, components tokens t + c .. t + c + 4; columns
// past RPT unused) reduced over the group's lanes and stored. Called in uniform control flow.
fn store_quad(l: Lanes, m: mat4x4<f32>, id: u32, lane: u32, row0: u32, t: u32, c: u32) {
    let q = reduce_quad(l, m, id, lane);
    if !q.keep {
        return;
    }
    // Constant indices throughout (a matrix indexed by a loop counter may be kept in memory).
    store_column(q, 0u, q.v[0], row0, t, c);
    if q.rows > 1u {
        store_column(q, 1u, q.v[1], row0, t, c);
    }
    if q.rows > 2u {
        store_column(q, 2u, q.v[2], row0, t, c);
        store_column(q, 3u, q.v[3], row0, t, c);
    }
}

// Column r of a reduced quad: the sums of row row0 + q.row_at + r, its first q.toks tokens.
fn store_column(q: Quad, r: u32, v: vec4<f32>, row0: u32, t: u32, c: u32) {
    let row = row0 + q.row_at + r;
    let k = c + q.tok_at;
    if row >= p.rows {
        return;
    }
    store_token(row, k, t, v.x);
    if q.toks > 1u {
        store_token(row, k + 1u, t, v.y);
    }
    if q.toks > 2u {
        store_token(row, k + 2u, t, v.z);
        store_token(row, k + 3u, t, v.w);
    }
}

// Token t + k's output of row `row`, where the pass has that token.
fn store_token(row: u32, k: u32, t: u32, v: f32) {
    let tok = t + k;
    if k < NX && tok < p.tokens {
        store_output(p.y_offset + tok * p.y_stride + row, row, v);
    }
}

// The reduction one column at a time (the `reduce` snippet's reduce_rows), lane 0 holding the
// totals: the shared-memory tree's way, and the subgroups' where a group spans several. A
// barrier before each frees the snippet's memory from the previous one; called in uniform
// control flow.
fn quad_by_columns(l: Lanes, m: mat4x4<f32>, id: u32, lane: u32) -> Quad {
    var v = mat4x4<f32>();
    workgroupBarrier();
    v[0] = reduce_rows(l, m[0], id, lane);
    if RPT > 1u {
        workgroupBarrier();
        v[1] = reduce_rows(l, m[1], id, lane);
    }
    if RPT > 2u {
        workgroupBarrier();
        v[2] = reduce_rows(l, m[2], id, lane);
        workgroupBarrier();
        v[3] = reduce_rows(l, m[3], id, lane);
    }
    return Quad(v, 0u, 0u, RPT, 4u, lane == 0u);
}
