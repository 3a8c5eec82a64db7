// GEMV of a quantized matrix with an int8 input vector: y[r] = sum_k W[r, k] * x[k], where x
// comes quantized in blocks of 32 (gemv.wgsl's INPUT_ONLY 2: per block 12 words, 8 of packed
// int8, the scale d, d * sum(q), two spare). Each lane takes whole units of its row (the
// `q8dot` snippet of the weight type says what a unit is: a Q8_0 block, a 64-element chunk of
// a K-quant block), turns the weight quants into packed int8 words with a few bitwise
// operations per word, multiplies them with dot4I8Packed (four products and their sum per
// instruction) and applies each 32 elements' scales once: per weight byte a few
// instructions, where the float GEMV spends a load, a decode and a multiply-add per element
// (its large quantized matrices are issue-bound, docs/performance.md). llama.cpp's CUDA
// backend does the same (int8 x, `dp4a`). The result differs from the float GEMV by x's
// rounding: at most sum |w| * d / 2 per block.
//
// A type's snippet declares the weight binding `w` (vec4 words where its blocks are 16-byte
// aligned, words otherwise), LANE_UNITS (units per GGUF block) and a unit's dot product in
// three parts (q8dot/input.wgsl): unit_weights, unit_input, unit_apply. Neighbouring lanes
// take neighbouring units, so a row's lanes read it front to back together. Offsets (Q4_0,
// Q5_0, Q6_K) are folded into the int8 words; mins (Q4_1, Q5_1, Q4_K, Q5_K) take the input
// block's d * sum(q), one multiply-add per 32 elements.
//
// Tunables (override): WG threads per workgroup, ROWS rows per workgroup, RPT rows per thread
// (1, 2 or 4: threads form ROWS / RPT groups of T = WG * RPT / ROWS lanes, reduced by the
// `reduce` snippet), UNROLL units a lane takes per loop iteration. A thread with RPT rows
// loads each unit's input blocks once for all of them (q8dot/rows.wgsl): the input, read from
// the cache by every row, is 1.4-2.7 times the weight bytes a unit decodes (48 bytes per 32
// elements against Q8_0's 34 and Q4_K's 18), so RPT 2 halves the loads that are not weights.

//!include gemv_params.wgsl

override WG: u32 = 256u;
override ROWS: u32 = 64u;
override RPT: u32 = 1u;
override T: u32 = WG * RPT / ROWS;
override UNROLL: u32 = 1u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(2) var<storage, read> xq: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
// The residual (same indexing as y); bound to x, and unread, when `residual` is 0.
@group(0) @binding(4) var<storage, read> res: array<f32>;

//!include reduce
//!include q8dot/input.wgsl
//!include q8dot

// Units in a row of W (read here and by the q8dot snippets that number them their own way).
fn q8_row_units() -> u32 {
    return p.units_per_row * LANE_UNITS;
}

//!include q8dot/rows.wgsl

@compute @workgroup_size(WG)
fn main(l: Lanes) {
    let id = linear_id(l);
    let lane = id % T;
    let row0 = (l.wg.x + l.wg.y * p.grid_x) * ROWS + (id / T) * RPT;
    // Rows past the matrix read its last row (in bounds, branch-free; never stored).
    let last = p.rows - 1u;
    let s0 = p.w_offset + min(row0, last) * p.row_bytes;
    let s1 = p.w_offset + min(row0 + 1u, last) * p.row_bytes;
    let s2 = p.w_offset + min(row0 + 2u, last) * p.row_bytes;
    let s3 = p.w_offset + min(row0 + 3u, last) * p.row_bytes;
    var acc = vec4<f32>(0.0);
    if row0 < p.rows {
        let units = q8_row_units();
        // UNROLL units per iteration, branch-free: a unit past the row reads the row's last
        // (in bounds) and adds nothing. On NVIDIA a load inside a branch waits out its latency
        // before the next branch's loads issue (docs/design/coop-gemm.md), so guarding each
        // unit with an `if` would serialize their loads. NVIDIA's compiler (580) keeps the
        // inner loop a loop (the same binary at UNROLL 1 to 8); written out under constant
        // conditions, the unrolled units were level to 3% slower on an H100 (v58: Q4_K at
        // UNROLL 4 0.940 → 0.912 of the ceiling, Q6_K 0.879–0.883 → 0.864–0.872), so the
        // tables keep the loop.
        for (var u0 = lane; u0 < units; u0 += UNROLL * T) {
            for (var i = 0u; i < UNROLL; i++) {
                let ui = u0 + i * T;
                let u = min(ui, units - 1u);
                let d = rows_dot(row_units(s0, s1, s2, s3, u), unit_input(u, p.x_offset));
                acc += select(vec4<f32>(0.0), d, ui < units);
            }
        }
    }
    let total = reduce_rows(l, acc, id, lane);
    if lane == 0u {
        for (var r = 0u; r < RPT; r++) {
            let row = row0 + r;
            if row < p.rows {
                var out = total[r];
                if p.residual == 1u {
                    out += res[p.y_offset + row];
                }
                y[p.y_offset + row] = out;
            }
        }
    }
}
