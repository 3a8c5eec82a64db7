// A thread's RPT weight rows (1, 2 or 4) against one input vector: one unit of each row
// decoded once (unit_weights) and multiplied (unit_apply) with the unit's input blocks, loaded
// once for all of them (unit_input, by the caller). The int8 GEMV (gemv_q8.wgsl) and the int8
// GEMMs (q8dot/row_units.wgsl) build on it; the including kernel declares RPT and includes the
// type's q8dot snippet.

// One unit of each of the thread's rows (rows past RPT repeat row 0 and are never used).
struct RowUnits {
    r0: UnitW,
    r1: UnitW,
    r2: UnitW,
    r3: UnitW,
}

// Unit u of the thread's rows, which start at bytes s0..s3 (rows past RPT unread).
fn row_units(s0: u32, s1: u32, s2: u32, s3: u32, u: u32) -> RowUnits {
    let w0 = unit_weights(s0, u);
    var q = RowUnits(w0, w0, w0, w0);
    if RPT > 1u {
        q.r1 = unit_weights(s1, u);
    }
    if RPT > 2u {
        q.r2 = unit_weights(s2, u);
        q.r3 = unit_weights(s3, u);
    }
    return q;
}

// Unit x's dot products with the thread's rows, component r for row r (zero past RPT).
fn rows_dot(q: RowUnits, x: UnitX) -> vec4<f32> {
    var d = vec4<f32>(unit_apply(q.r0, x), 0.0, 0.0, 0.0);
    if RPT > 1u {
        d.y = unit_apply(q.r1, x);
    }
    if RPT > 2u {
        d.z = unit_apply(q.r2, x);
        d.w = unit_apply(q.r3, x);
    }
    return d;
}
