// GEMV with fused dequantization: y[r] = sum_k W[r, k] * x[k] for a row-major GGUF weight
// matrix W (rows of whole blocks, packed in `w`), f32 x and y (y stored as the f32 bits).
//
// Tunables (override constants):
// - WG: threads per workgroup;
// - ROWS: rows per workgroup;
// - RPT: rows per thread (1-8): each x value a thread loads serves its RPT rows from registers
//   (the row loop has a constant trip count, so it unrolls and the sums stay in registers);
// - UNROLL: steps a thread takes per loop iteration (1-8), all loads issued before their sums
//   are needed. A step of a quantized type loads 4 weight bytes per lane, and a GPU hides
//   memory latency only with enough bytes in flight per SM (bandwidth × latency, ~30 KiB on an
//   H200 SM): one step per iteration leaves too few of them in flight.
// Threads form ROWS / RPT groups of T = WG * RPT / ROWS lanes. A group's lanes stride over the
// steps of its rows: a step is 4 elements of a 32-element sub-block of a GGUF block (with
// Q4/Q5's split nibbles, also the 4 elements 16 further on), or one 16-byte unit of f32/f16,
// and consecutive lanes take consecutive steps, so a warp's weight loads cover one contiguous
// run of bytes and its x loads another. A quant snippet's step_dot(b, s, k, xa, xb) is the dot
// of step k of sub-block s of the unit at byte b with the step's x values (offset terms
// included); XB is the vec4 distance from a step's first x value to its second (0: one). The T
// partial sums are reduced by a snippet: subgroup shuffles and one barrier, or a shared-memory
// tree.
//
// XFORM (override) says how the input vector is formed from the `x` binding, an operation
// fused into the GEMV so that it needs no dispatch of its own: 0 x as bound; 1 RMSNorm
// x / rms(x) * xw; 2 RMSNorm with (1 + xw); 3 SwiGLU silu(x[i]) * x[i + x_aux]; 4 GeGLU
// gelu_tanh(x[i]) * x[i + x_aux]. The norms make every workgroup compute rms(x) itself (x is
// one activation row, a few KiB read from the cache): a few hundred extra reads per workgroup
// instead of a dispatch and a barrier across the whole GPU. 5 folds a post-projection norm and
// its residual add into the next projection's input norm (Gemma's sandwich norms): with `x` the
// last projection's output and `res` the residual stream, the new residual row is
// x1 = res + x / rms(x) * (xw[..n] + w_one), the input vector x1 / rms(x1) * (xw[n..] + w_one),
// and workgroup 0 stores x1 to `x_out` when write_x is 1 (every workgroup recomputes x1: two
// reductions over one row instead of a dispatch). 6 is the second pass of split decode
// attention (attn_combine.wgsl) folded into the output projection: `x` holds the partials
// part[heads, blocks, head_dim + 4] (each block's value sum o, its score max m and exp-sum l),
// and the input vector is, per head, sum_b exp(m_b - M) o_b / sum_b exp(m_b - M) l_b (M the
// head's largest m). Every workgroup combines the whole vector into workgroup memory first: at
// a few blocks per head that is a few hundred cached loads per workgroup instead of a dispatch.

//!include gemv_params.wgsl

override WG: u32 = 128u;
override ROWS: u32 = 4u;
override RPT: u32 = 1u;
override XFORM: u32 = 0u;
// 1: compute the input vector only, into y (one workgroup; the GEMV that follows reads it
// plainly). A GEMV of many thousand workgroups pays for XFORM's per-workgroup reductions in
// every wave; one small dispatch first is cheaper there. 2: the same, quantized to int8
// blocks for gemv_q8.wgsl: per 32 elements 12 words, the 32 values q = round(v / d) packed
// (4 per word, away from zero on ties), d = max|v| / 127 and d * sum(q) as f32 bits, two
// spare words (each block three vec4 loads).
override INPUT_ONLY: u32 = 0u;
override T: u32 = WG * RPT / ROWS;
override UNROLL: u32 = 1u;
// XS4 > 1: the input vector (at most 4 * XS4 elements) is formed once per workgroup into
// workgroup memory, and the steps read it there (GeGLU: one tanh per element per workgroup,
// not per row group; XFORM 6 always stages). 1 (unstaged) forms each element where a step
// needs it, the weight loads not waiting for a barrier.
override XS4: u32 = 1u;
// XFORM 6: (head, block) weights the workgroup keeps.
override BW: u32 = 1u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> w: array<u32>;
@group(0) @binding(2) var<storage, read> x: array<vec4<f32>>;
// Words, so that INPUT_ONLY 2 can store packed int8 blocks; f32 results are stored as their
// bits.
@group(0) @binding(3) var<storage, read_write> y: array<u32>;
// The residual (same indexing as y); bound to x, and unread, when `residual` is 0.
@group(0) @binding(4) var<storage, read> res: array<f32>;
// The norm weights for XFORM 1 and 2 (same indexing as x), the two norms' for XFORM 5; bound
// to x, and unread, otherwise.
@group(0) @binding(5) var<storage, read> xw: array<vec4<f32>>;
// XFORM 5: the new residual row; bound to y, and untouched, otherwise (scalar, so that a y of
// fewer than 4 elements is still a valid binding).
@group(0) @binding(6) var<storage, read_write> x_out: array<f32>;


//!include common.wgsl
//!include quant
//!include reduce
//!include activation.wgsl
//!include q8_grid.wgsl

// XFORM 1, 2: 1 / rms(x), computed once per workgroup before the products.
var<private> x_rstd: f32;
// XFORM 5: 1 / rms of the projection.
var<private> p_rstd: f32;
// The staged input vector, and XFORM 6's (head, block) weights exp(m_b - M) / denom.
var<workgroup> xs: array<vec4<f32>, XS4>;
var<workgroup> bw: array<f32, BW>;
// INPUT_ONLY 2: each thread's vec4 max, then its quants' sum (QV = WG there; 1 otherwise, so
// the other variants reserve no workgroup memory for it).
override QV: u32 = 1u;
var<workgroup> qv: array<f32, QV>;

fn act4(v: vec4<f32>) -> vec4<f32> {
    return gate4(v, XFORM == 3u);
}

// Element vec4 `i` of the input vector (the steps read x through this).
fn xin(i: u32) -> vec4<f32> {
    if XS4 > 1u {
        return xs[i - p.x_offset];
    }
    return form(i);
}

// Element vec4 `i` of the input vector, formed from the bindings (every form but 6, which
// always stages).
fn form(i: u32) -> vec4<f32> {
    let v = x[i];
    switch XFORM {
        case 1u: { return v * x_rstd * xw[i - p.x_offset]; }
        case 2u: { return v * x_rstd * (1.0 + xw[i - p.x_offset]); }
        case 3u, 4u: { return act4(v) * x[i + p.x_aux]; }
        case 5u: { return post_residual(i) * x_rstd * (xw[x_cols4() + i] + p.w_one); }
        default: { return v; }
    }
}

fn x_cols4() -> u32 {
    return p.units_per_row * UNIT_ELEMS / 4u;
}

// XFORM 5: element vec4 `i` of the new residual row x1.
fn post_residual(i: u32) -> vec4<f32> {
    let r = vec4<f32>(res[4u * i], res[4u * i + 1u], res[4u * i + 2u], res[4u * i + 3u]);
    return r + x[i] * p_rstd * (xw[i] + p.w_one);
}

// 1 / sqrt(mean(x^2) + eps) over the row's columns, reduced across the workgroup; for XFORM 5
// the projection's scale a (kept in p_rstd), then the new residual row's. Both come from one
// pass and one reduction: with w' = xw + w_one, |x1|^2 = |res|^2 + 2 a (res . x w') +
// a^2 |x w'|^2, so the four sums are reduced together instead of the second pass waiting for
// a (a dependent load-reduce-barrier chain less per workgroup). The expansion cancels only
// when x1 is tiny against res, where the norm's eps dominates anyway.
fn x_norm_scale(l: Lanes, id: u32) -> f32 {
    let n4 = x_cols4();
    var sums = vec4<f32>(0.0);
    for (var i = id; i < n4; i += WG) {
        let v = x[p.x_offset + i];
        if XFORM == 5u {
            let r = vec4<f32>(res[4u * i], res[4u * i + 1u], res[4u * i + 2u], res[4u * i + 3u]);
            let vw = v * (xw[i] + p.w_one);
            sums += vec4<f32>(dot(v, v), dot(r, r), dot(r, vw), dot(vw, vw));
        } else {
            sums.x += dot(v, v);
        }
    }
    let total = wg_total(l, sums, id);
    let n = f32(4u * n4);
    let scale = inverseSqrt(total.x / n + p.eps);
    if XFORM != 5u {
        return scale;
    }
    p_rstd = scale;
    let sq1 = max(total.y + 2.0 * scale * total.z + scale * scale * total.w, 0.0);
    return inverseSqrt(sq1 / n + p.eps);
}

// XFORM 6: combines the attention partials in `x` into `xs` (see the header).
fn combine_attention(id: u32) {
    let hd4 = p.head_dim / 4u;
    let stride4 = hd4 + 1u;
    let n4 = x_cols4();
    let heads = n4 / hd4;
    let pairs = heads * p.blocks;
    for (var i = id; i < pairs; i += WG) {
        bw[i] = x[p.x_offset + i * stride4 + hd4].x;
    }
    workgroupBarrier();
    for (var h = id; h < heads; h += WG) {
        let first = h * p.blocks;
        var big = -3.0e38;
        for (var b = first; b < first + p.blocks; b++) {
            big = max(big, bw[b]);
        }
        var denom = 0.0;
        for (var b = first; b < first + p.blocks; b++) {
            let e = exp(bw[b] - big);
            denom += e * x[p.x_offset + b * stride4 + hd4].y;
            bw[b] = e;
        }
        for (var b = first; b < first + p.blocks; b++) {
            bw[b] /= denom;
        }
    }
    workgroupBarrier();
    for (var i = id; i < n4; i += WG) {
        let first = i / hd4 * p.blocks;
        let d4 = i % hd4;
        var o = vec4<f32>(0.0);
        for (var b = first; b < first + p.blocks; b++) {
            o += bw[b] * x[p.x_offset + b * stride4 + d4];
        }
        xs[i] = o;
    }
    workgroupBarrier();
}

// Step (s, k) of the thread's rows first .. first + 4 (those past RPT zero), at byte offsets
// o from b, against the step's input values.
fn step_dots(b: u32, o: vec4<u32>, first: u32, s: u32, k: u32, xa: vec4<f32>, xb: vec4<f32>) -> vec4<f32> {
    var d = vec4<f32>(0.0);
    if RPT > first {
        d.x = step_dot(b + o.x, s, k, xa, xb);
    }
    if RPT > first + 1u {
        d.y = step_dot(b + o.y, s, k, xa, xb);
    }
    if RPT > first + 2u {
        d.z = step_dot(b + o.z, s, k, xa, xb);
    }
    if RPT > first + 3u {
        d.w = step_dot(b + o.w, s, k, xa, xb);
    }
    return d;
}

@compute @workgroup_size(WG)
fn main(l: Lanes) {
    let id = linear_id(l);
    let group = id / T;
    let lane = id % T;
    let row0 = (l.wg.x + l.wg.y * p.grid_x) * ROWS + group * RPT;
    if XFORM == 1u || XFORM == 2u || XFORM == 5u {
        x_rstd = x_norm_scale(l, id);
    }
    if XFORM == 6u {
        combine_attention(id);
    } else if XS4 > 1u {
        for (var i = id; i < x_cols4(); i += WG) {
            xs[i] = form(p.x_offset + i);
        }
        workgroupBarrier();
    }
    if XFORM == 5u && p.write_x == 1u && l.wg.x + l.wg.y == 0u {
        for (var i = id; i < x_cols4(); i += WG) {
            let v = post_residual(i);
            x_out[4u * i] = v.x;
            x_out[4u * i + 1u] = v.y;
            x_out[4u * i + 2u] = v.z;
            x_out[4u * i + 3u] = v.w;
        }
    }
    if INPUT_ONLY == 1u {
        for (var i = id; i < x_cols4(); i += WG) {
            let v = bitcast<vec4<u32>>(xin(p.x_offset + i));
            y[4u * i] = v.x;
            y[4u * i + 1u] = v.y;
            y[4u * i + 2u] = v.z;
            y[4u * i + 3u] = v.w;
        }
        return;
    }
    if INPUT_ONLY == 2u {
        // One vec4 per thread (a pass of WG at a time): a block's eight threads meet in
        // workgroup memory for its max and its sum.
        for (var i0 = 0u; i0 < x_cols4(); i0 += WG) {
            let i = i0 + id;
            let live = i < x_cols4();
            var v = vec4<f32>(0.0);
            if live {
                v = xin(p.x_offset + i);
            }
            let a = abs(v);
            qv[id] = max(max(a.x, a.y), max(a.z, a.w));
            workgroupBarrier();
            let lead = id - id % 8u;
            var amax = 0.0;
            for (var k = 0u; k < 8u; k++) {
                amax = max(amax, qv[lead + k]);
            }
            let d = q8_scale(amax);
            let q = q8_quants(v, d);
            workgroupBarrier();
            qv[id] = f32(q.x + q.y + q.z + q.w);
            workgroupBarrier();
            if live {
                let b = i / 8u;
                y[12u * b + i % 8u] = pack4xI8Clamp(q);
                if i % 8u == 0u {
                    var sum = 0.0;
                    for (var k = 0u; k < 8u; k++) {
                        sum += qv[id + k];
                    }
                    y[12u * b + 8u] = bitcast<u32>(d);
                    y[12u * b + 9u] = bitcast<u32>(d * sum);
                    y[12u * b + 10u] = 0u;
                    y[12u * b + 11u] = 0u;
                }
            }
            workgroupBarrier();
        }
        return;
    }
    // Rows row0 .. row0 + RPT accumulate in two named vec4s, each row's step written out:
    // a private array indexed by the row loop's variable lands in local memory on NVIDIA's
    // Vulkan compiler (measured on the ONNX convolution kernels: 2.5x slower).
    var acc0 = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    if row0 < p.rows {
        let rb = p.row_bytes;
        // Byte offsets of the thread's rows 0-3 and 4-7 from row0's; rows past the matrix read
        // its last (in bounds; never stored), so no load sits behind a branch.
        let last = vec4<u32>(p.rows - 1u - row0);
        let lo = min(vec4<u32>(0u, 1u, 2u, 3u), last) * rb;
        let hi = min(vec4<u32>(4u, 5u, 6u, 7u), last) * rb;
        let subs = UNIT_ELEMS / SUB_ELEMS;
        let steps = p.units_per_row * subs * SUB_STEPS;
        // UNROLL steps per iteration (a constant trip count, for the compiler to unroll and
        // issue their loads together; NVIDIA's 580 kept the int8 GEMV's same loop a loop,
        // gemv_q8.wgsl), branch-free: a step past the row reads the row's last and adds nothing.
        // On NVIDIA a load inside a branch waits out its latency before the next branch's
        // loads issue (docs/design/coop-gemm.md), which an `if` per step would do.
        for (var j0 = lane; j0 < steps; j0 += UNROLL * T) {
            for (var i = 0u; i < UNROLL; i++) {
                let ji = j0 + i * T;
                let j = min(ji, steps - 1u);
                let on = ji < steps;
                let k = j % SUB_STEPS;
                let u = j / SUB_STEPS / subs;
                let s = j / SUB_STEPS % subs;
                let xv = p.x_offset + (u * UNIT_ELEMS + SUB_ELEMS * s) / 4u + k;
                let xa = xin(xv);
                var xb = vec4<f32>(0.0);
                if XB > 0u {
                    xb = xin(xv + XB);
                }
                let b = p.w_offset + row0 * rb + u * UNIT_BYTES;
                let d0 = step_dots(b, lo, 0u, s, k, xa, xb);
                var d1 = vec4<f32>(0.0);
                if RPT > 4u {
                    d1 = step_dots(b, hi, 4u, s, k, xa, xb);
                }
                acc0 += select(vec4<f32>(0.0), d0, on);
                if RPT > 4u {
                    acc1 += select(vec4<f32>(0.0), d1, on);
                }
            }
        }
    }
    let total0 = reduce_rows(l, acc0, id, lane);
    var total1 = vec4<f32>(0.0);
    if RPT > 4u {
        workgroupBarrier();
        total1 = reduce_rows(l, acc1, id, lane);
    }
    if lane == 0u {
        for (var r = 0u; r < RPT; r++) {
            if row0 + r < p.rows {
                var out = select(total1[r % 4u], total0[r % 4u], r < 4u);
                if p.residual == 1u {
                    out += res[p.y_offset + row0 + r];
                }
                y[p.y_offset + row0 + r] = bitcast<u32>(out);
            }
        }
    }
}
