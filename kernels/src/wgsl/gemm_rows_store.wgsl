// The output step of the few-row GEMMs (gemm_rows.wgsl, gemm_rows_q8.wgsl): a lane group's
// partial sums of one row and four tokens of a pass reduced (the `reduce` snippet) and stored
// with the residual or bias. The including kernel declares `p` (gemm_params.wgsl), `y`,
// `res`, NX and T.

//!include gemm_store.wgsl

// Reduces one accumulator (row `row`, tokens t .. t + 4) over the group's lanes and stores it.
// Called in uniform control flow; the barrier first frees the reduction's workgroup memory
// from the previous call.
fn reduce_store(l: Lanes, v: vec4<f32>, id: u32, lane: u32, row: u32, t: u32, c: u32) {
    workgroupBarrier();
    let total = reduce_rows(l, v, id, lane);
    if lane == 0u && row < p.rows {
        for (var j = 0u; j < 4u; j++) {
            let tok = t + c + j;
            if c + j < NX && tok < p.tokens {
                store_output(p.y_offset + tok * p.y_stride + row, row, total[j]);
            }
        }
    }
}
