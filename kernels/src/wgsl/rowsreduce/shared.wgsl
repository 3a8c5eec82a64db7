// The few-row GEMMs' quad reduction without subgroups (gemm_rows_store.wgsl): one
// shared-memory tree per row.

fn reduce_quad(l: Lanes, m: mat4x4<f32>, id: u32, lane: u32) -> Quad {
    return quad_by_columns(l, m, id, lane);
}
