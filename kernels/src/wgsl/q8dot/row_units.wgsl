// A thread's RPT weight rows (1, 2 or 4) against one token at a time, on int8 input (the
// int8 GEMMs gemm_rows_q8.wgsl and gemm_tiles_q8.wgsl): one unit of each row decoded once
// (unit_weights), a token's input blocks for the unit loaded once for all of them
// (unit_input) and multiplied into each (unit_apply). The including kernel declares `p`
// (gemm_params.wgsl), RPT and NX (tokens a thread multiplies a unit into), and includes the
// type's q8dot snippet.

//!include q8dot/rows.wgsl

// Token t's dot products with unit u of the thread's rows, component r for row r (zero past
// RPT). Tokens past the last read the last one's blocks (in bounds, branch-free; their sums
// are never stored).
fn token_dots(q: RowUnits, u: u32, t: u32) -> vec4<f32> {
    return rows_dot(q, unit_input(u, p.x_offset + min(t, p.tokens - 1u) * p.x_stride));
}

// Tokens t + c .. t + c + 4 (those past NX zero): column j holds token t + c + j's dot
// products with the thread's rows (component r: row r).
fn token_quad(q: RowUnits, u: u32, t: u32, c: u32) -> mat4x4<f32> {
    var m = mat4x4<f32>();
    m[0] = token_dots(q, u, t + c);
    if NX > c + 1u {
        m[1] = token_dots(q, u, t + c + 1u);
    }
    if NX > c + 2u {
        m[2] = token_dots(q, u, t + c + 2u);
    }
    if NX > c + 3u {
        m[3] = token_dots(q, u, t + c + 3u);
    }
    return m;
}

// A thread's sums for up to 16 tokens: column j of `q0` holds token j's sums (component r: row
// r), of `q1` token 4 + j's, `q2` 8 + j's, `q3` 12 + j's. Named matrices, not an indexed
// array (which some compilers keep in memory).
struct TokenSums {
    q0: mat4x4<f32>,
    q1: mat4x4<f32>,
    q2: mat4x4<f32>,
    q3: mat4x4<f32>,
}

// `acc` plus unit u of the thread's rows multiplied into tokens t .. t + NX.
fn add_unit(acc: TokenSums, q: RowUnits, u: u32, t: u32) -> TokenSums {
    var s = acc;
    s.q0 += token_quad(q, u, t, 0u);
    if NX > 4u {
        s.q1 += token_quad(q, u, t, 4u);
    }
    if NX > 8u {
        s.q2 += token_quad(q, u, t, 8u);
    }
    if NX > 12u {
        s.q3 += token_quad(q, u, t, 12u);
    }
    return s;
}
