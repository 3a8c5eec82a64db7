enable f16;

// The tensor-core GEMM's input rows, formed once and rounded to f16 (gemm_coop.wgsl with XH 1
// reads them): out[t, e..e+4] = f16(clamp(input(X[t])[e..e+4], ±65504)), `cols` values a row,
// rows back to back. The same expression gemm_coop.wgsl applies when it forms its input itself
// (XH 0), so both give the same bits; formed once, every tile of weight rows then reads 2
// bytes a value instead of 4 (X is re-read by every one of a GEMM's row tiles: 224 times for
// the Llama-8B shape's gate and up projections, where it was 88% of the kernel's reads).
// XFORM 0, 3, 4 (X as bound, SwiGLU, GeGLU): one invocation per four values. The form (XFORM,
// XV4) and X's offset, stride and GLU operand come from the GEMM's own uniform block.
//
// XFORM 1, 2: the RMSNorm of each row, X[t, k] * (1 / rms(X[t]) * w[k]) (1) or * (1 + w[k])
// (2), w the norm weights (`nw`) and p.eps the norm's epsilon — the norm that would be a
// dispatch of its own before a batch's input projections (norm.wgsl), formed here as the
// float few-row kernel forms it (gemm_rows.wgsl's XFORM 1, 2: the same sums of squares per
// thread, the same tree, the same expression; gemm_norm_input.wgsl). A workgroup takes NT
// tokens (1 to 4: the runtime's `ops::x16_norm_tokens` and grid): their sums of squares as one vec4
// through the `reduce` snippet's `wg_total`, then their rows. A thread reads its quadruples of
// a row RUN at a time, every load issued before the first is used (a quadruple past the row
// reads the row's last and counts zero: a sum plus 0.0 is the same sum), so a row costs one
// memory latency a RUN quadruples rather than one a quadruple (docs/design/coop-gemm.md,
// "The input norm's latency chain").

//
// SRC 1 (norm forms only): the rows are a GEMM's output, split along K — the sum of its
// `splits` partials (gemm_coop.wgsl's raw sums, laid out as gemm_splits.wgsl reads them) plus
// its residual when `residual` is 1 — which this pass also writes to `y`, doing
// gemm_splits.wgsl's work: out[t] = f16(norm(Y[t])) and Y itself in one dispatch where they
// were two (the split sum, then this pass over Y). The same sums in the same order, the
// same squares and tree: the same bits in `y` and `out` as the two dispatches. The first pass
// forms each quadruple from the partials and stores it; the second reads it back from `y`
// (this thread's own writes). p.rows = p.cols (a whole row of Y: rows a multiple of 4),
// y_offset, y_stride and split_stride multiples of 4.

//!include gemm_params.wgsl

override WG: u32 = 256u;
// The `reduce` snippet's row width (its row reduction is unused here: `wg_total` only).
override T: u32 = WG;
override XFORM: u32 = 0u;
override XV4: u32 = 1u;
// XFORM 1, 2: tokens a workgroup norms (1 to 4).
override NT: u32 = 4u;
// 0: the rows are X; 1: a split GEMM's partials plus its residual, written to `y` too.
override SRC: u32 = 0u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
// Token t's values at out[t * cols / 4 ..], four f16s an element.
@group(0) @binding(2) var<storage, read_write> out: array<vec4<f16>>;
// `x` again, as vec4s (read when XV4 is 1).
@group(0) @binding(3) var<storage, read> x4: array<vec4<f32>>;
// XFORM 1, 2: the norm weights (`cols` values); bound to `x`, and unread, otherwise.
@group(0) @binding(4) var<storage, read> nw: array<vec4<f32>>;
// SRC 1: the partials, Y and the residual (same indexing as Y); with SRC 0 bound to `x`,
// `out` and `x`, and unread.
@group(0) @binding(5) var<storage, read> part4: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> y: array<f32>;
@group(0) @binding(7) var<storage, read> res4: array<vec4<f32>>;

//!include gemm_input.wgsl
//!include gemm_norm_input.wgsl
//!include reduce

fn store(t: u32, e: u32, v: vec4<f32>) {
    out[(t * p.cols + e) / 4u] = vec4<f16>(clamp(v, vec4<f32>(-65504.0), vec4<f32>(65504.0)));
}

// A thread's quadruples of a row, read RUN at a time.
const RUN: u32 = 4u;

// Where Y[t, e] sits in `y` (SRC 1).
fn y_at(t: u32, e: u32) -> u32 {
    return p.y_offset + t * p.y_stride + e;
}

// Token t's elements e..e+4, or zeros (the row's last quadruple read) past the row's end.
fn row_quad(t: u32, e: u32) -> vec4<f32> {
    let at = min(e, p.cols - 4u);
    var v: vec4<f32>;
    if SRC == 1u {
        let i = y_at(t, at);
        v = vec4<f32>(y[i], y[i + 1u], y[i + 2u], y[i + 3u]);
    } else {
        v = xin(t, at);
    }
    return select(vec4<f32>(0.0), v, e < p.cols);
}

// The first pass's quadruple: `row_quad`, or with SRC 1 Y[t, e..e+4] formed from the partials
// as gemm_splits.wgsl forms it (the splits in order from zero, then the residual) and stored
// where `store_y` (token t is one of the batch's, not a clamped repeat of the last).
fn first_quad(t: u32, e: u32, store_y: bool) -> vec4<f32> {
    if SRC == 0u {
        return row_quad(t, e);
    }
    let at = min(e, p.cols - 4u);
    var v = vec4<f32>(0.0);
    for (var z = 0u; z < p.splits; z++) {
        v += part4[(z * p.split_stride + t * p.rows + at) / 4u];
    }
    let i = y_at(t, at);
    if p.residual == 1u {
        v += res4[i / 4u];
    }
    if store_y & (e < p.cols) {
        y[i] = v.x;
        y[i + 1u] = v.y;
        y[i + 2u] = v.z;
        y[i + 3u] = v.w;
    }
    return select(vec4<f32>(0.0), v, e < p.cols);
}

// The squares of token t's quadruples e, e + 4·WG, ... (RUN of them), summed onto s in that
// order: the same sum, quadruple by quadruple, as one square_sum at a time.
fn run_squares(s: f32, t: u32, e: u32, store_y: bool) -> f32 {
    var q: array<vec4<f32>, RUN>;
    for (var j = 0u; j < RUN; j++) {
        q[j] = first_quad(t, e + 4u * WG * j, store_y);
    }
    var sum = s;
    for (var j = 0u; j < RUN; j++) {
        sum += dot(q[j], q[j]);
    }
    return sum;
}

// XFORM 1, 2: tokens NT·g .. NT·g + NT (those before p.tokens), normed.
fn normed_rows(l: Lanes, g: u32) {
    let t0 = NT * g;
    let last = p.tokens - 1u;
    var s = vec4<f32>(0.0);
    for (var e = 4u * l.lid; e < p.cols; e += 4u * WG * RUN) {
        for (var c = 0u; c < NT; c++) {
            s[c] = run_squares(s[c], min(t0 + c, last), e, t0 + c <= last);
        }
    }
    let inv = inverseSqrt(wg_total(l, s, l.lid) / f32(p.cols) + vec4<f32>(p.eps));
    let n = min(p.tokens - t0, NT);
    for (var e = 4u * l.lid; e < p.cols; e += 4u * WG * RUN) {
        // The norm weights of the run's quadruples (the row's last past its end: unused).
        var w: array<vec4<f32>, RUN>;
        for (var j = 0u; j < RUN; j++) {
            w[j] = norm_scale(min(e + 4u * WG * j, p.cols - 4u));
        }
        for (var c = 0u; c < n; c++) {
            var q: array<vec4<f32>, RUN>;
            for (var j = 0u; j < RUN; j++) {
                q[j] = row_quad(t0 + c, e + 4u * WG * j);
            }
            for (var j = 0u; j < RUN; j++) {
                let ej = e + 4u * WG * j;
                if ej < p.cols {
                    store(t0 + c, ej, q[j] * (inv[c] * w[j]));
                }
            }
        }
    }
}

@compute @workgroup_size(WG)
fn main(l: Lanes) {
    let g = l.wg.x + l.wg.y * p.grid_x;
    if XFORM == 1u || XFORM == 2u {
        // Uniform per workgroup: every thread takes the same branch before the barriers.
        if NT * g < p.tokens {
            normed_rows(l, g);
        }
        return;
    }
    let i = g * WG + l.lid;
    let per_row = p.cols / 4u;
    if i >= p.tokens * per_row {
        return;
    }
    store(i / per_row, 4u * (i % per_row), xin(i / per_row, 4u * (i % per_row)));
}
