// Few-row GEMM with fused dequantization, for batched decode (a handful of sequences, one row
// each, through one forward): Y[t, r] = sum_k W[r, k] * input(X[t])[k] for the `tokens` rows t
// of X (+ res[t, r] when `residual` is 1, + res[y_offset + r] when it is 2: a bias), the
// semantics of gemm.wgsl, with the shape of the decode GEMV (gemv.wgsl) instead of its tiles.
// W is a row-major GGUF matrix (rows of whole blocks in `w`), X and Y f32 token-major with their
// own row strides (a GEMM can read part of a wider activation row and write into part of a
// wider output row: the stacked Q|K|V and gate|up projections).
//
// Why not the tiled GEMM: for 2-8 tokens its grid has rows / TN workgroups only and every KC
// columns wait on two barriers, so a large matrix streams at a small fraction of the memory's
// rate. Here, as in the GEMV, a workgroup owns ROWS rows and its lanes stride over the rows'
// weight steps; the point of batching is kept by decoding each step once for NX tokens.
//
// Tunables (override constants):
// - WG: threads per workgroup; ROWS: rows per workgroup; RPT: rows per thread (1, 2 or 4);
// - NX: tokens per pass (1-8). Threads form ROWS / RPT groups of T = WG * RPT / ROWS lanes. A
//   group's lanes stride over the steps of its RPT rows as the GEMV's do (a step is 4 elements
//   of a 32-element sub-block, with Q4/Q5's split nibbles also the 4 elements 16 further on, or
//   one 16-byte unit of f32/f16; consecutive lanes take consecutive steps, so a warp's weight
//   loads cover one contiguous run of bytes). A lane decodes a step of each of its rows once
//   (the quant snippet's step_weights: 4 weights, or 4 + 4 where XB > 0, as vec4s) and
//   multiplies it into NX input rows: the step's x values of 4 tokens are the columns of a
//   4 × 4 matrix, so `weights * matrix` is the 4 tokens' dot products in one vec4, accumulated
//   per row in a named vec4 for tokens 0-3 of the pass and one for tokens 4-7 (an indexed
//   private array is kept in memory by some compilers). The x values come from the cache (a
//   few rows of a few KiB, read by every workgroup), as the unstaged GEMV's do.
// - More tokens than NX: the workgroup loops over passes of NX tokens; a pass after the first
//   reads the workgroup's weights again, from the cache (its ROWS rows were just read).
// Per pass, the accumulators of each quad (the thread's rows × 4 tokens) are reduced over the
// group's T lanes and stored by gemm_rows_store.wgsl, a row at a time (QUAD_TRANSPOSED below).
//
// XFORM forms the input from X as gemm.wgsl does: 0 X as bound; 3 SwiGLU silu(X[t, k]) *
// X[t, x_aux + k]; 4 GeGLU with gelu_tanh. Formed per step, where it is needed (no barrier
// before the first weight load for these forms; NX rows of a few thousand columns would not
// fit workgroup memory anyway). 1 and 2: the RMSNorm of each row, X[t, k] / rms(X[t]) * w[k]
// (1) or * (1 + w[k]) (2), w the norm weights (`nw`, binding 6) and p.eps the norm's epsilon:
// the norm that would be a dispatch of its own before a batch's input projections
// (norm.wgsl), folded in as the GEMV folds it (gemv.wgsl's XFORM 1, 2). Each workgroup first
// sums the squares of its pass's rows and reduces them with the `reduce` snippet's
// `wg_total` (its workgroup memory, no more of its own: a few KiB of cached rows read twice
// per workgroup, and a barrier and one or two reductions per pass before the first weight
// load — two barriers each on subgroups, log2 WG + 2 on the shared tree — where the dispatch
// it replaces costs a launch and a round trip through memory), then scales each step's x
// values (gemm_input.wgsl's `xin` gives them raw for these forms).
// XV4 1: X is read as vec4s (binding 5, the same buffer as `x`): x_offset, x_stride and x_aux
// are multiples of 4, so every step's 4 values are one aligned vec4. 0: four scalar loads
// from `x` (any stride).

//!include gemm_io.wgsl

override WG: u32 = 128u;
override ROWS: u32 = 8u;
override RPT: u32 = 2u;
override NX: u32 = 8u;
override XFORM: u32 = 0u;
override XV4: u32 = 1u;
override T: u32 = WG * RPT / ROWS;
// The quads' reduction by columns on subgroups too (rowsreduce/subgroup.wgsl): the transposed
// butterfly measured no faster here (H100, docs/performance.md "v44", eight streams: SmolLM2
// 4,396 tok/s against 4,526-4,555 by columns, Gemma 3 4,916 against 4,804-4,834).
const QUAD_TRANSPOSED: bool = false;

//!include common.wgsl
//!include quant
//!include reduce
//!include gemm_input.wgsl
// `x` again, as vec4s (read when XV4 is 1).
@group(0) @binding(5) var<storage, read> x4: array<vec4<f32>>;
// The norm weights of XFORM 1, 2 (`cols` values); bound to `x`, and unread, otherwise.
@group(0) @binding(6) var<storage, read> nw: array<vec4<f32>>;
//!include gemm_norm_input.wgsl
//!include gemm_rows_store.wgsl

// XFORM 1, 2: 1 / rms of the pass's tokens 0-3 and 4-7, in every thread.
var<private> inv_lo: vec4<f32>;
var<private> inv_hi: vec4<f32>;

fn norm_input() -> bool {
    return XFORM == 1u || XFORM == 2u;
}

// The squares of elements e..e+4 of the pass's tokens c .. c + 4, summed per token (zeros for
// tokens past NX), as xmat takes their values.
fn squares4(t0: u32, c: u32, e: u32) -> vec4<f32> {
    var s = vec4<f32>(square_sum(t0 + c, e), 0.0, 0.0, 0.0);
    if NX > c + 1u {
        s.y = square_sum(t0 + c + 1u, e);
    }
    if NX > c + 2u {
        s.z = square_sum(t0 + c + 2u, e);
    }
    if NX > c + 3u {
        s.w = square_sum(t0 + c + 3u, e);
    }
    return s;
}

// 1 / rms of the tokens t0 .. t0 + NX into inv_lo, inv_hi (inv_hi only when NX > 4). Called
// by the whole workgroup in uniform control flow; the snippet's memory is free on return.
fn pass_norms(l: Lanes, id: u32, t0: u32) {
    var lo = vec4<f32>(0.0);
    var hi = vec4<f32>(0.0);
    for (var e = 4u * id; e < p.cols; e += 4u * WG) {
        lo += squares4(t0, 0u, e);
        if NX > 4u {
            hi += squares4(t0, 4u, e);
        }
    }
    // The previous pass's last reduction may still be reading the snippet's memory.
    workgroupBarrier();
    let n = f32(p.cols);
    inv_lo = inverseSqrt(wg_total(l, lo, id) / n + vec4<f32>(p.eps));
    if NX > 4u {
        inv_hi = inverseSqrt(wg_total(l, hi, id) / n + vec4<f32>(p.eps));
    }
}

// Elements e..e+4 of the input rows of tokens t0 + c .. t0 + c + 4 as the columns of a matrix.
// Columns past NX are zero; a token past the last reads the last one's row (in bounds, and its
// sums are never stored). XFORM 1, 2: normed (the pass's inv_lo, inv_hi).
fn xmat(t0: u32, c: u32, e: u32) -> mat4x4<f32> {
    let last = p.tokens - 1u;
    var m = mat4x4<f32>();
    m[0] = xin(min(t0 + c, last), e);
    if NX > c + 1u {
        m[1] = xin(min(t0 + c + 1u, last), e);
    }
    if NX > c + 2u {
        m[2] = xin(min(t0 + c + 2u, last), e);
    }
    if NX > c + 3u {
        m[3] = xin(min(t0 + c + 3u, last), e);
    }
    if norm_input() {
        let g = norm_scale(e);
        let inv = select(inv_lo, inv_hi, c >= 4u);
        m[0] *= inv.x * g;
        m[1] *= inv.y * g;
        m[2] *= inv.z * g;
        m[3] *= inv.w * g;
    }
    return m;
}

// acc plus one decoded step times the x matrices of its first and (XB > 0) second 4 values.
fn fold(acc: vec4<f32>, s: StepW, xa: mat4x4<f32>, xb: mat4x4<f32>) -> vec4<f32> {
    if XB > 0u {
        return acc + s.a * xa + s.b * xb;
    }
    return acc + s.a * xa;
}

@compute @workgroup_size(WG)
fn main(l: Lanes) {
    let id = linear_id(l);
    let group = id / T;
    let lane = id % T;
    let row0 = (l.wg.x + l.wg.y * p.grid_x) * ROWS + group * RPT;
    let subs = UNIT_ELEMS / SUB_ELEMS;
    let steps = p.cols / UNIT_ELEMS * subs * SUB_STEPS;
    let zero = StepW(vec4<f32>(0.0), vec4<f32>(0.0));
    for (var t0 = 0u; t0 < p.tokens; t0 += NX) {
        if norm_input() {
            pass_norms(l, id, t0);
        }
        // Row r of the thread, tokens 0-3 of the pass in lo<r>, 4-7 in hi<r>.
        var lo0 = vec4<f32>(0.0);
        var hi0 = vec4<f32>(0.0);
        var lo1 = vec4<f32>(0.0);
        var hi1 = vec4<f32>(0.0);
        var lo2 = vec4<f32>(0.0);
        var hi2 = vec4<f32>(0.0);
        var lo3 = vec4<f32>(0.0);
        var hi3 = vec4<f32>(0.0);
        if row0 < p.rows {
            let last = p.rows - 1u - row0;
            let o1 = min(1u, last) * p.row_bytes;
            let o2 = min(2u, last) * p.row_bytes;
            let o3 = min(3u, last) * p.row_bytes;
            for (var j = lane; j < steps; j += T) {
                let k = j % SUB_STEPS;
                let u = j / SUB_STEPS / subs;
                let s = j / SUB_STEPS % subs;
                // The element of the step's first x value, and of its second four.
                let e = u * UNIT_ELEMS + SUB_ELEMS * s + 4u * k;
                let eb = e + 4u * XB;
                let b = p.w_offset + row0 * p.row_bytes + u * UNIT_BYTES;
                // The weights first (the loads that go to memory), then the cached x values.
                // Rows past the matrix read its last (o1..o3; never stored): a load behind a
                // branch would wait out its latency on NVIDIA before the next issued.
                let w0 = step_weights(b, s, k);
                var w1 = zero;
                var w2 = zero;
                var w3 = zero;
                if RPT > 1u {
                    w1 = step_weights(b + o1, s, k);
                }
                if RPT > 2u {
                    w2 = step_weights(b + o2, s, k);
                    w3 = step_weights(b + o3, s, k);
                }
                var xb = mat4x4<f32>();
                let xa = xmat(t0, 0u, e);
                if XB > 0u {
                    xb = xmat(t0, 0u, eb);
                }
                lo0 = fold(lo0, w0, xa, xb);
                if RPT > 1u {
                    lo1 = fold(lo1, w1, xa, xb);
                }
                if RPT > 2u {
                    lo2 = fold(lo2, w2, xa, xb);
                    lo3 = fold(lo3, w3, xa, xb);
                }
                if NX > 4u {
                    let xa4 = xmat(t0, 4u, e);
                    var xb4 = mat4x4<f32>();
                    if XB > 0u {
                        xb4 = xmat(t0, 4u, eb);
                    }
                    hi0 = fold(hi0, w0, xa4, xb4);
                    if RPT > 1u {
                        hi1 = fold(hi1, w1, xa4, xb4);
                    }
                    if RPT > 2u {
                        hi2 = fold(hi2, w2, xa4, xb4);
                        hi3 = fold(hi3, w3, xa4, xb4);
                    }
                }
            }
        }
        // Columns r for rows: the layout the reduction takes.
        store_quad(l, mat4x4<f32>(lo0, lo1, lo2, lo3), id, lane, row0, t0, 0u);
        if NX > 4u {
            store_quad(l, mat4x4<f32>(hi0, hi1, hi2, hi3), id, lane, row0, t0, 4u);
        }
    }
}
