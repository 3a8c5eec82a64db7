// Tiled GEMM on int8 input: Y[t, r] = sum_k W[r, k] * X[t, k] for the `tokens` rows of X
// (+ res[t, r] when `residual` is 1, + res[y_offset + r] when it is 2: a bias), X given as the
// int8 blocks the int8 GEMV and few-row GEMM read (q8dot/input.wgsl: 3 vec4s per 32 values;
// token t's blocks start at vec4 x_offset + t * x_stride), W a row-major GGUF matrix of a type
// with a q8dot snippet. For batches of rows on adapters without tensor cores, and for the
// 16-63 rows where the int8 few-row kernel (gemm_rows_q8.wgsl) is bound by its input loads.
//
// Tiling: a workgroup of RG × TG threads owns RG * RPT weight rows × TG * NX tokens. Thread
// (g, h) = (id % RG, id / RG) owns rows row0 + g + RG * r (r < RPT: neighbouring lanes on
// neighbouring rows, so their stores are contiguous) and tokens t0 + NX * h .. + NX, and walks
// every unit of K (its split's, when split) alone: per unit it decodes each of its rows' units
// once (unit_weights) and, per token, loads the unit's input blocks once for all its rows
// (unit_input) and multiplies them in with dot4I8Packed (unit_apply). No workgroup memory, no
// barrier, no reduction across lanes.
//
// Why this shape: the few-row kernel's lanes stride over the units of a row, so each lane
// loads its own input blocks for every token: per 64-value unit and token 96 bytes from the
// cache for the RPT rows of one thread, the loads that bound it at 32-64 rows (the Llama-8B
// shape's gate|up at 32 rows issued ~44 M vec4 loads where its dot4I8Packed work alone would
// issue in a fifth of its time; docs/design/next-kernels.md). Here the RG lanes of a subgroup
// (RG a multiple of its size, consecutive invocation indices in one subgroup, as the drivers
// measured lay out a 1-D workgroup) share their tokens and unit, so each input load is one
// address for the whole subgroup: one cache transaction broadcast to every lane, and the
// input costs ~1/RG of the few-row kernel's loads. The TG token groups of a workgroup read the
// same weight rows at about the same time, so their second and later reads hit the cache.
//
// Rows past the matrix read the last row and tokens past the last read the last token (in
// bounds, branch-free; their sums are never stored).
//
// Split along K (p.split_chunks > 0; gemm_params.wgsl): workgroup z sums units
// z * split_chunks .. + split_chunks and writes the raw sums split_stride elements past split
// z - 1's (the host binds the partials' scratch as `y`, residual 0); gemm_splits.wgsl adds
// them in split order. A matrix of few rows (a 2048-row projection is 16 workgroups of 128
// rows) fills the GPU that way.
//
// The sums of one (row, token) run over the units in order, each unit's integer dot products
// scaled as unit_apply scales them: the one-row GEMV's numbers up to the order of the f32
// additions.
//
// Tunables (override constants): RG (threads along the rows), TG (along the tokens), RPT (rows
// per thread: 1, 2 or 4), NX (tokens per thread, 1-16; the sums in a TokenSums,
// q8dot/row_units.wgsl).

//!include gemm_params.wgsl

override RG: u32 = 32u;
override TG: u32 = 1u;
override RPT: u32 = 4u;
override NX: u32 = 8u;
override WG: u32 = RG * TG;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(2) var<storage, read> xq: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
// The residual (same indexing as y) or the bias (indexed by output column); bound to xq, and
// unread, when `residual` is 0.
@group(0) @binding(4) var<storage, read> res: array<f32>;

//!include q8dot/input.wgsl
//!include q8dot

// Units in a row of W (read here and by the q8dot snippets that number them their own way).
fn q8_row_units() -> u32 {
    return p.cols / UNIT_COLS;
}

//!include q8dot/row_units.wgsl
//!include gemm_store.wgsl

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) id: u32) {
    let g = id % RG;
    let h = id / RG;
    let row0 = wg.x * RG * RPT + g;
    let t0 = (wg.y * TG + h) * NX;
    let units = q8_row_units();
    var u0 = 0u;
    var u1 = units;
    if p.split_chunks > 0u {
        u0 = min(wg.z * p.split_chunks, units);
        u1 = min(u0 + p.split_chunks, units);
    }
    let last = p.rows - 1u;
    let s0 = p.w_offset + min(row0, last) * p.row_bytes;
    let s1 = p.w_offset + min(row0 + RG, last) * p.row_bytes;
    let s2 = p.w_offset + min(row0 + 2u * RG, last) * p.row_bytes;
    let s3 = p.w_offset + min(row0 + 3u * RG, last) * p.row_bytes;
    var acc = TokenSums();
    for (var u = u0; u < u1; u++) {
        acc = add_unit(acc, row_units(s0, s1, s2, s3, u), u, t0);
    }
    let z = select(0u, wg.z * p.split_stride, p.split_chunks > 0u);
    store_quad(acc.q0, row0, t0, 0u, z);
    if NX > 4u {
        store_quad(acc.q1, row0, t0, 4u, z);
    }
    if NX > 8u {
        store_quad(acc.q2, row0, t0, 8u, z);
    }
    if NX > 12u {
        store_quad(acc.q3, row0, t0, 12u, z);
    }
}

// Stores tokens t + c .. t + c + 4 of a quad (column j: token t + c + j) that lie within the
// thread's NX tokens, `z` elements into y (a split's partials). Written out, not looped (an
// indexed matrix may be kept in memory).
fn store_quad(m: mat4x4<f32>, row0: u32, t: u32, c: u32, z: u32) {
    store_token(m[0], row0, t + c, c < NX, z);
    store_token(m[1], row0, t + c + 1u, c + 1u < NX, z);
    store_token(m[2], row0, t + c + 2u, c + 2u < NX, z);
    store_token(m[3], row0, t + c + 3u, c + 3u < NX, z);
}

// Token `tok`'s sums of the thread's rows (component r: row row0 + RG * r), where `mine`.
fn store_token(v: vec4<f32>, row0: u32, tok: u32, mine: bool, z: u32) {
    if mine && tok < p.tokens {
        store_one(v.x, row0, tok, z);
        if RPT > 1u {
            store_one(v.y, row0 + RG, tok, z);
        }
        if RPT > 2u {
            store_one(v.z, row0 + 2u * RG, tok, z);
            store_one(v.w, row0 + 3u * RG, tok, z);
        }
    }
}

fn store_one(v: f32, row: u32, tok: u32, z: u32) {
    if row < p.rows {
        store_output(p.y_offset + z + tok * p.y_stride + row, row, v);
    }
}
