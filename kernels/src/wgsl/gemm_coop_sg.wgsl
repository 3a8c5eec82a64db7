enable f16;
enable wgpu_cooperative_matrix;

// The tensor-core GEMM for batched decode's rows with no workgroup barrier: the contract of
// gemm_coop.wgsl reading f16 input rows (its XH 1: Y[t, r] = sum_k W[r, k] * X16[t, k], + the
// residual or bias), Q4_K weights in chunks of 64 columns (a pair of sub-blocks).
//
// Each subgroup owns TM = 16 TF tokens × SR = 16 RF rows of Y and works alone. Chunk by chunk
// its lanes decode its own rows' weights into its own f16 tile in workgroup memory (a lane a
// row at RF 2, two at RF 1), and the tensor cores read the input fragments straight from the
// f16 rows in memory (the workgroup's other subgroups read the same fragments there: the cache
// serves them). What orders a chunk's stores before its fragment loads, and those loads before
// the next chunk's stores, is the subgroup's own barrier — no subgroup waits for another, so a
// core's subgroups hide each other's latencies instead of meeting at a barrier every chunk
// (gemm_coop.wgsl's tiles are shared by the workgroup: docs/design/coop-gemm.md, "A tile a
// subgroup").
//
// The weights are fetched a chunk ahead as raw words (the block's 16-byte head and the run's
// quant words, vec4 loads) and decoded when the chunk is published, as gemm_coop.wgsl's run
// form decodes them (`step_weights_head`, the same operations): the fragments, their values
// and the order of the multiply-adds into each accumulator are gemm_coop.wgsl's, so the
// results are the same bits, split or not.
//
// Tokens past the last are read from the f16 rows' buffer as they are (the host allocates the
// rows for whole fragments of 16 tokens); a token's row of the product depends on its input row
// alone, and those outputs are not stored. The columns come in whole chunks (Q4_K rows are
// multiples of 256); a row past the matrix loads the last row with a zero head (d = dmin = 0:
// every weight decodes to zero), so every load is branch-free.
//
// Split along K as gemm_coop.wgsl: workgroup z sums split z's chunks into the partials.

//!include gemm_params.wgsl
//!include gemm_store.wgsl
//!include common.wgsl

// Subgroups a workgroup (along the rows), and each one's 16-token and 16-row fragments
// (TF 1, 2 or 4; RF 1 or 2; at most four accumulators).
override WN: u32 = 4u;
override TF: u32 = 2u;
override RF: u32 = 2u;
override WG: u32 = 32u * WN;
// Rows a subgroup, lanes a row, and quant words a lane a chunk (a pair's eight words a row).
override SR: u32 = 16u * RF;
override LPR: u32 = 32u / SR;
override WPL: u32 = 8u / LPR;

// Columns a chunk, and the tile's row pitch in halves (16-byte aligned rows, as gemm_coop.wgsl).
const KC: u32 = 64u;
const KS: u32 = KC + 8u;

@group(0) @binding(0) var<uniform> p: Params;
// The weights as vec4s: block heads and quant words.
@group(0) @binding(1) var<storage, read> w4: array<vec4<u32>>;
// The input rows formed and rounded to f16 (gemm_x16.wgsl) as quadruples: x_offset and
// x_stride count f16 values, multiples of 4.
@group(0) @binding(2) var<storage, read> xh: array<vec4<f16>>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
// The residual (same indexing as y) or the bias; bound to `xh`, and unread, when `residual`
// is 0.
@group(0) @binding(4) var<storage, read> res: array<f32>;
// The quant snippet's word view of the weights: only its whole-step functions read it, none of
// which this kernel calls, so it is not part of the pipeline's layout and is never bound.
@group(0) @binding(5) var<storage, read> w: array<u32>;

// Each subgroup's weight tile (SR rows of KS halves), and its 16 × 16 f32 staging block.
var<workgroup> ws: array<vec4<f16>, WN * SR * KS / 4u>;
var<workgroup> stage: array<f32, 256u * WN>;

//!include quant

// A lane's share of a chunk: its row's block head (zero past the last row) and its WPL quant
// words (q1 only at WPL 8).
struct Run {
    head: vec4<u32>,
    q0: vec4<u32>,
    q1: vec4<u32>,
}

// Lane `lane`'s run of chunk `c` (the pair of sub-blocks 2 (c % 4), 2 (c % 4) + 1 of block
// c / 4) for the subgroup whose first row is `n0`.
fn fetch_run(c: u32, n0: u32, lane: u32) -> Run {
    let row = n0 + lane / LPR;
    let k0 = (lane % LPR) * WPL;
    let b = p.w_offset + min(row, p.rows - 1u) * p.row_bytes + (c / 4u) * UNIT_BYTES;
    let q = (b + 16u + 32u * (c % 4u)) / 16u + k0 / 4u;
    var r: Run;
    r.head = select(vec4<u32>(0u), w4[b / 16u], row < p.rows);
    r.q0 = w4[q];
    if WPL > 4u {
        r.q1 = w4[q + 1u];
    }
    return r;
}

// Quant word `q` at tile half `o`: its low nibbles are four elements of sub-block `s`, its high
// ones the same four of sub-block s + 1, 32 columns on.
fn put_word(o: u32, h: vec4<u32>, q: u32, s: u32) {
    ws[o / 4u] = vec4<f16>(step_weights_head(h, q, s).a);
    ws[(o + 32u) / 4u] = vec4<f16>(step_weights_head(h, q, s + 1u).a);
}

// Run `r` of chunk `c`, decoded into subgroup `sg`'s tile.
fn publish(r: Run, c: u32, sg: u32, lane: u32) {
    let s = 2u * (c % 4u);
    let o = (sg * SR + lane / LPR) * KS + 4u * (lane % LPR) * WPL;
    put_word(o, r.head, r.q0.x, s);
    put_word(o + 4u, r.head, r.q0.y, s);
    put_word(o + 8u, r.head, r.q0.z, s);
    put_word(o + 12u, r.head, r.q0.w, s);
    if WPL > 4u {
        put_word(o + 16u, r.head, r.q1.x, s);
        put_word(o + 20u, r.head, r.q1.y, s);
        put_word(o + 24u, r.head, r.q1.z, s);
        put_word(o + 28u, r.head, r.q1.w, s);
    }
}

// Input fragment `f` (tokens m0 + 16 f..) at column `k`.
fn input_fragment(m0: u32, f: u32, k: u32) -> coop_mat16x16<f16, A> {
    let at = p.x_offset + (m0 + 16u * f) * p.x_stride + k;
    return coopLoadT<coop_mat16x16<f16, A>>(&xh[at / 4u], p.x_stride / 4u);
}

// Weight fragment `g` (rows 16 g.. of subgroup `sg`'s tile) at tile column `kk`.
fn weight_fragment(sg: u32, g: u32, kk: u32) -> coop_mat16x16<f16, B> {
    return coopLoad<coop_mat16x16<f16, B>>(&ws[((sg * SR + 16u * g) * KS + kk) / 4u], KS / 4u);
}

// Chunk `c`'s multiply-adds into accumulators c<token fragment><row fragment>: the four
// 16-column steps in order, as gemm_coop.wgsl's `multiply` adds them.
fn multiply(
    c: u32,
    m0: u32,
    sg: u32,
    c00: ptr<function, coop_mat16x16<f32, C>>,
    c01: ptr<function, coop_mat16x16<f32, C>>,
    c10: ptr<function, coop_mat16x16<f32, C>>,
    c11: ptr<function, coop_mat16x16<f32, C>>,
    c20: ptr<function, coop_mat16x16<f32, C>>,
    c30: ptr<function, coop_mat16x16<f32, C>>,
) {
    for (var kk = 0u; kk < KC; kk += 16u) {
        let k = c * KC + kk;
        let a0 = input_fragment(m0, 0u, k);
        let b0 = weight_fragment(sg, 0u, kk);
        *c00 = coopMultiplyAdd(a0, b0, *c00);
        if RF > 1u {
            let b1 = weight_fragment(sg, 1u, kk);
            *c01 = coopMultiplyAdd(a0, b1, *c01);
            if TF > 1u {
                let a1 = input_fragment(m0, 1u, k);
                *c10 = coopMultiplyAdd(a1, b0, *c10);
                *c11 = coopMultiplyAdd(a1, b1, *c11);
            }
            continue;
        }
        if TF > 1u {
            let a1 = input_fragment(m0, 1u, k);
            *c10 = coopMultiplyAdd(a1, b0, *c10);
        }
        if TF > 2u {
            let a2 = input_fragment(m0, 2u, k);
            *c20 = coopMultiplyAdd(a2, b0, *c20);
            let a3 = input_fragment(m0, 3u, k);
            *c30 = coopMultiplyAdd(a3, b0, *c30);
        }
    }
}

// Fragment (tokens t0.., rows r0..) through subgroup `sg`'s staging block to Y (its bounds,
// and the residual or bias, applied).
fn store_fragment(z: u32, c: coop_mat16x16<f32, C>, sg: u32, lane: u32, t0: u32, r0: u32) {
    let so = sg * 256u;
    coopStoreT(c, &stage[so], 16u);
    subgroupBarrier();
    for (var e = lane; e < 256u; e += 32u) {
        let t = t0 + e / 16u;
        let row = r0 + e % 16u;
        if t < p.tokens && row < p.rows {
            store_output(p.y_offset + z * p.split_stride + t * p.y_stride + row, row, stage[so + e]);
        }
    }
    subgroupBarrier();
}

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(subgroup_id) sg: u32,
    @builtin(subgroup_invocation_id) lane: u32,
) {
    // This subgroup's rows n0.. and the tile's tokens m0...
    let n0 = (wg.x * WN + sg) * SR;
    let m0 = wg.y * 16u * TF;
    var c_first = 0u;
    var chunks = p.cols / KC;
    if p.split_chunks > 0u {
        c_first = wg.z * p.split_chunks;
        chunks = min(chunks, c_first + p.split_chunks);
    }
    var c00 = coop_mat16x16<f32, C>();
    var c01 = coop_mat16x16<f32, C>();
    var c10 = coop_mat16x16<f32, C>();
    var c11 = coop_mat16x16<f32, C>();
    var c20 = coop_mat16x16<f32, C>();
    var c30 = coop_mat16x16<f32, C>();
    // The next chunk's words are in flight while this one is decoded and multiplied; past the
    // last chunk the fetch takes the last one again, unused (an `if` around it would make the
    // decode wait out the loads). An empty split fetches the last chunk, unused.
    let last = chunks - 1u;
    var run = fetch_run(min(c_first, last), n0, lane);
    for (var c = c_first; c < chunks; c++) {
        let next = fetch_run(min(c + 1u, last), n0, lane);
        publish(run, c, sg, lane);
        subgroupBarrier();
        multiply(c, m0, sg, &c00, &c01, &c10, &c11, &c20, &c30);
        subgroupBarrier();
        run = next;
    }
    let z = wg.z;
    store_fragment(z, c00, sg, lane, m0, n0);
    if RF > 1u {
        store_fragment(z, c01, sg, lane, m0, n0 + 16u);
    }
    if TF > 1u {
        store_fragment(z, c10, sg, lane, m0 + 16u, n0);
        if RF > 1u {
            store_fragment(z, c11, sg, lane, m0 + 16u, n0 + 16u);
        }
    }
    if TF > 2u {
        store_fragment(z, c20, sg, lane, m0 + 32u, n0);
        store_fragment(z, c30, sg, lane, m0 + 48u, n0);
    }
}
