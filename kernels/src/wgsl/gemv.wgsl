// GEMV with fused dequantization: y[r] = sum_k W[r, k] * x[k] for a row-major GGUF weight
// matrix W (rows of whole blocks, packed in `w`), f32 x and y.
//
// Tunables (override constants):
// - WG: threads per workgroup;
// - ROWS: rows per workgroup;
// - RPT: rows per thread (1-8): each x value a thread loads serves its RPT rows from registers
//   (the row loop has a constant trip count, so it unrolls and the sums stay in registers).
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
// instead of a dispatch and a barrier across the whole GPU.

struct Params {
    rows: u32,          // rows of W (and length of y)
    units_per_row: u32, // units in a row
    row_bytes: u32,     // bytes of a row
    w_offset: u32,      // byte offset of row 0 in `w`
    y_offset: u32,      // element offset of y[0] in `y`
    x_offset: u32,      // vec4 offset of x[0] in `x`
    grid_x: u32,        // workgroups along x (the grid is 2D past 65535 workgroups)
    residual: u32,      // 1: y[i] = (W x)[i] + res[i] (a transformer's residual add, fused)
    x_aux: u32,         // XFORM 3, 4: vec4 offset of the second GLU operand after x[i]
    eps: f32,           // XFORM 1, 2: the norm's epsilon
    _pad0: u32,
    _pad1: u32,
}

override WG: u32 = 128u;
override ROWS: u32 = 4u;
override RPT: u32 = 1u;
override XFORM: u32 = 0u;
override T: u32 = WG * RPT / ROWS;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> w: array<u32>;
@group(0) @binding(2) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
// The residual (same indexing as y); bound to x, and unread, when `residual` is 0.
@group(0) @binding(4) var<storage, read> res: array<f32>;
// The norm weights for XFORM 1 and 2 (same indexing as x); bound to x, and unread, otherwise.
@group(0) @binding(5) var<storage, read> xw: array<vec4<f32>>;


//!include common.wgsl
//!include quant
//!include reduce
//!include activation.wgsl

// XFORM 1, 2: 1 / rms(x), computed once per workgroup before the products.
var<private> x_rstd: f32;

fn act4(v: vec4<f32>) -> vec4<f32> {
    if XFORM == 3u {
        return vec4<f32>(silu(v.x), silu(v.y), silu(v.z), silu(v.w));
    }
    return vec4<f32>(gelu_tanh(v.x), gelu_tanh(v.y), gelu_tanh(v.z), gelu_tanh(v.w));
}

// Element vec4 `i` of the input vector (the quant snippets read x through this).
fn xin(i: u32) -> vec4<f32> {
    let v = x[i];
    switch XFORM {
        case 1u: { return v * x_rstd * xw[i - p.x_offset]; }
        case 2u: { return v * x_rstd * (1.0 + xw[i - p.x_offset]); }
        case 3u, 4u: { return act4(v) * x[i + p.x_aux]; }
        default: { return v; }
    }
}

// 1 / sqrt(mean(x^2) + eps) over the row's columns, reduced across the workgroup.
fn x_norm_scale(l: Lanes, id: u32) -> f32 {
    let n4 = p.units_per_row * UNIT_ELEMS / 4u;
    var sq = 0.0;
    for (var i = id; i < n4; i += WG) {
        let v = x[p.x_offset + i];
        sq += dot(v, v);
    }
    return inverseSqrt(wg_total(l, sq, id) / f32(4u * n4) + p.eps);
}

@compute @workgroup_size(WG)
fn main(l: Lanes) {
    let id = linear_id(l);
    let group = id / T;
    let lane = id % T;
    let row0 = (l.wg.x + l.wg.y * p.grid_x) * ROWS + group * RPT;
    if XFORM == 1u || XFORM == 2u {
        x_rstd = x_norm_scale(l, id);
    }
    var acc = array<vec4<f32>, 2>(vec4<f32>(0.0), vec4<f32>(0.0));
    if row0 < p.rows {
        let subs = UNIT_ELEMS / SUB_ELEMS;
        for (var j = lane; j < p.units_per_row * subs * SUB_STEPS; j += T) {
            let k = j % SUB_STEPS;
            let u = j / SUB_STEPS / subs;
            let s = j / SUB_STEPS % subs;
            let xv = p.x_offset + (u * UNIT_ELEMS + SUB_ELEMS * s) / 4u + k;
            let xa = xin(xv);
            var xb = vec4<f32>(0.0);
            if XB > 0u {
                xb = xin(xv + XB);
            }
            let b = p.w_offset + row0 * p.row_bytes + u * UNIT_BYTES;
            for (var r = 0u; r < RPT; r++) {
                if row0 + r < p.rows {
                    acc[r / 4u][r % 4u] += step_dot(b + r * p.row_bytes, s, k, xa, xb);
                }
            }
        }
    }
    var total = array<vec4<f32>, 2>(reduce_rows(l, acc[0], id, lane), vec4<f32>(0.0));
    if RPT > 4u {
        workgroupBarrier();
        total[1] = reduce_rows(l, acc[1], id, lane);
    }
    if lane == 0u {
        for (var r = 0u; r < RPT; r++) {
            if row0 + r < p.rows {
                var out = total[r / 4u][r % 4u];
                if p.residual == 1u {
                    out += res[p.y_offset + row0 + r];
                }
                y[p.y_offset + row0 + r] = out;
            }
        }
    }
}
