// GEMV of a Q8_0 matrix with an int8 input vector: y[r] = sum_k W[r, k] * x[k], where x comes
// quantized in blocks of 32 (gemv.wgsl's INPUT_ONLY 2: per block 12 words, 8 of packed int8,
// the scale d, d * sum(q), two spare). Each lane takes whole 32-element blocks of its row and
// multiplies them with eight dot4I8Packed (four products and their sum per instruction),
// then scales the integer sum once: per weight byte a few instructions, where the float GEMV
// spends a load, a sign extension and a multiply-add per element (its large quantized
// matrices are issue-bound, docs/performance.md). llama.cpp's CUDA backend does the same
// (int8 x, `dp4a`). The result differs from the float GEMV by x's rounding: at most
// sum |w| * d / 2 per block.
//
// A Q8_0 block is 34 bytes (f16 d, 32 int8): in a row of 4-aligned start every other block
// starts 2 bytes into a word. A lane loads the nine words that hold its block and takes the
// quants either as words (odd start) or as two halves of neighbouring words (even start),
// branch-free: neighbouring lanes take neighbouring blocks, so they alternate.
//
// Tunables (override): WG threads per workgroup, ROWS rows per workgroup (T = WG / ROWS lanes
// per row, reduced by the `reduce` snippet), UNROLL blocks a lane issues per loop iteration.

//!include gemv_params.wgsl

override WG: u32 = 256u;
override ROWS: u32 = 64u;
override T: u32 = WG / ROWS;
override UNROLL: u32 = 1u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> w: array<u32>;
@group(0) @binding(2) var<storage, read> xq: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
// The residual (same indexing as y); bound to x, and unread, when `residual` is 0.
@group(0) @binding(4) var<storage, read> res: array<f32>;

//!include reduce

// Quant word i of a block from the block's words i and i + 1 (see the header).
fn quant_word(a: u32, b: u32, odd: bool) -> u32 {
    return select((a >> 16u) | (b << 16u), b, odd);
}

// The dot product of the Q8_0 block at byte `b` of `w` with input block `xb`. Written out
// word by word: a private array would be spilled to local memory by some compilers.
fn block_dot(b: u32, xb: u32) -> f32 {
    let i = b >> 2u;
    let odd = (b & 2u) != 0u;
    let w0 = w[i];
    let w1 = w[i + 1u];
    let w2 = w[i + 2u];
    let w3 = w[i + 3u];
    let w4 = w[i + 4u];
    let w5 = w[i + 5u];
    let w6 = w[i + 6u];
    let w7 = w[i + 7u];
    let w8 = w[i + 8u];
    let x0 = xq[p.x_offset + 3u * xb];
    let x1 = xq[p.x_offset + 3u * xb + 1u];
    let xd = bitcast<f32>(xq[p.x_offset + 3u * xb + 2u].x);
    let d = unpack2x16float(select(w0, w0 >> 16u, odd)).x;
    let sum = dot4I8Packed(quant_word(w0, w1, odd), x0.x)
        + dot4I8Packed(quant_word(w1, w2, odd), x0.y)
        + dot4I8Packed(quant_word(w2, w3, odd), x0.z)
        + dot4I8Packed(quant_word(w3, w4, odd), x0.w)
        + dot4I8Packed(quant_word(w4, w5, odd), x1.x)
        + dot4I8Packed(quant_word(w5, w6, odd), x1.y)
        + dot4I8Packed(quant_word(w6, w7, odd), x1.z)
        + dot4I8Packed(quant_word(w7, w8, odd), x1.w);
    return f32(sum) * d * xd;
}

@compute @workgroup_size(WG)
fn main(l: Lanes) {
    let id = linear_id(l);
    let lane = id % T;
    let row = (l.wg.x + l.wg.y * p.grid_x) * ROWS + id / T;
    var acc = 0.0;
    if row < p.rows {
        let row_start = p.w_offset + row * p.row_bytes;
        for (var b0 = lane; b0 < p.units_per_row; b0 += UNROLL * T) {
            for (var i = 0u; i < UNROLL; i++) {
                let b = b0 + i * T;
                if b < p.units_per_row {
                    acc += block_dot(row_start + 34u * b, b);
                }
            }
        }
    }
    let total = reduce_rows(l, vec4<f32>(acc, 0.0, 0.0, 0.0), id, lane).x;
    if lane == 0u && row < p.rows {
        var out = total;
        if p.residual == 1u {
            out += res[p.y_offset + row];
        }
        y[p.y_offset + row] = out;
    }
}
