// The few-row GEMMs' quad reduction on subgroups (gemm_rows_store.wgsl). Where a group's T
// lanes lie in one subgroup, a transposed butterfly: each XOR step halves the values a lane
// holds, keeping the half its lane bit names and adding its partner's copy of that half, so a
// quad of R rows × 4 tokens takes at most 4R - 1 scalar shuffles (and one a lane bit beyond) and
// no barrier,
// and the lanes store the sums in parallel (reducing each row's 4 sums apart: 4 log2(T)
// shuffles a row, a barrier and a trip through workgroup memory, then lane 0 storing all).
// Wider groups reduce by columns (reduce_rows: shuffles, one barrier, the subgroups' sums), and
// so does a kernel that sets QUAD_TRANSPOSED false.

fn reduce_quad(l: Lanes, m: mat4x4<f32>, id: u32, lane: u32) -> Quad {
    // subgroup_size is uniform in a compute shader: every invocation takes the same branch.
    if QUAD_TRANSPOSED && T <= l.sg_size {
        return quad_transposed(m, lane);
    }
    return quad_by_columns(l, m, id, lane);
}

fn quad_transposed(m0: mat4x4<f32>, lane: u32) -> Quad {
    var m = m0;
    var q = Quad(m0, 0u, 0u, RPT, 4u, true);
    var o = 1u;
    // Rows 0, 1 against rows 2, 3.
    if q.rows == 4u && o < T {
        let b = (lane & o) != 0u;
        let k0 = select(m[0], m[2], b);
        let k1 = select(m[1], m[3], b);
        m[0] = k0 + subgroupShuffleXor(select(m[2], m[0], b), o);
        m[1] = k1 + subgroupShuffleXor(select(m[3], m[1], b), o);
        q.row_at += select(0u, 2u, b);
        q.rows = 2u;
        o <<= 1u;
    }
    // Row 0 against row 1.
    if q.rows == 2u && o < T {
        let b = (lane & o) != 0u;
        m[0] = select(m[0], m[1], b) + subgroupShuffleXor(select(m[1], m[0], b), o);
        q.row_at += select(0u, 1u, b);
        q.rows = 1u;
        o <<= 1u;
    }
    // Tokens 0, 1 against 2, 3.
    if q.rows == 1u && o < T {
        let b = (lane & o) != 0u;
        let v = m[0];
        let h = select(v.xy, v.zw, b) + subgroupShuffleXor(select(v.zw, v.xy, b), o);
        m[0] = vec4<f32>(h, 0.0, 0.0);
        q.tok_at += select(0u, 2u, b);
        q.toks = 2u;
        o <<= 1u;
    }
    // Token 0 against token 1.
    if q.toks == 2u && o < T {
        let b = (lane & o) != 0u;
        let v = m[0];
        m[0].x = select(v.x, v.y, b) + subgroupShuffleXor(select(v.y, v.x, b), o);
        q.tok_at += select(0u, 1u, b);
        q.toks = 1u;
        o <<= 1u;
    }
    // One value a lane: the remaining lane bits hold copies of it; the lanes with them clear
    // store.
    q.keep = lane < o;
    for (; o < T; o <<= 1u) {
        m[0].x += subgroupShuffleXor(m[0].x, o);
    }
    q.v = m;
    return q;
}
