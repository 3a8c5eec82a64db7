enable f16;
enable wgpu_cooperative_matrix;

// GEMM with fused dequantization on cooperative matrices (tensor cores), for prefill and large
// batches on adapters with 16 × 16 × 16 f16 × f16 → f32 subgroup matrices (NVIDIA Vulkan:
// VK_KHR_cooperative_matrix): the contract of gemm.wgsl, Y[t, r] = sum_k W[r, k] * input(X[t])[k]
// (+ res[t, r] when `residual` is 1, + res[y_offset + r] when it is 2: a bias), W a row-major
// GGUF matrix, X and Y f32 token-major with their own row strides.
//
// Tiling: a workgroup of WM × WN subgroups (32 lanes each) owns a TM = 16 TF WM token × TN =
// 16 RF WN row tile of Y; each subgroup a 16 TF × 16 RF part of it as 16 × 16 f32
// accumulators: TF (2, or 1 for batches of up to 32 rows) token fragments times RF (4, or 2)
// row fragments — with TF 2 and RF 4 six fragment loads feed eight multiply-adds. RF 2 halves
// a subgroup's accumulators and a thread's share of a chunk: at batched decode's 32-64 rows
// the kernel is latency-bound, and twice the subgroups a tile (or twice the tiles) is what
// hides it.
//
// Software pipeline, one barrier per chunk of KC columns: the tiles live in workgroup memory
// twice (stages 0 and 1; with STAGES 1, for 64-column chunks, once, and a second barrier before
// each chunk's stores). While the subgroups multiply the fragments of chunk c (stage c % 2),
// every thread already holds chunk c + 1 in registers (and c + 2 with DEPTH 2) — its share of
// the TN × KC weight tile, decoded to f16 (the quant snippet's step_weights, 4 or 4 + 4 values
// a step, consecutive lanes consecutive steps of a row, as the GEMV's) or, for the types with a
// run form (RUN 1), as raw words decoded when published; and of the TM × KC input tile (vec4
// loads where the stride allows, the GLU forms applied, clamped to f16's range) — whose loads
// were issued before the multiplies, so their latency hides behind them. A share is stored
// into its chunk's stage and one barrier publishes it: the next stores into a stage come after
// the barrier that follows every subgroup's multiplies of it.
//
// The per-thread shares (NWS weight steps or a run's words, NXS input vec4s a chunk) are struct
// values with named fields filled by straight-line code, and every load is branch-free (indices clamped, zeros selected past
// the edges), so every load of a chunk is in flight at once: on NVIDIA a load inside a branch
// waited out its latency before the next one issued. The edge tests combine with `&`, not `&&`:
// naga lowers a runtime `&&` or `||` to an `if` (WGSL's short-circuit), and that branch per
// step kept the driver from issuing a step's loads before the previous step's were used. Tile
// rows are KS = KC + 8 halves apart (80 bytes): 16-byte aligned fragment rows that do not all
// start in one bank.
//
// Precision: products of f16-rounded weights and inputs, summed in f32 (llama.cpp's f16
// tensor-core path does the same); the CPU reference sums exact products in f64, so the
// tests' tolerance is that of two f16 roundings per product.
//
// The accumulators are named, not an array (an indexed private array is kept in memory by
// NVIDIA's compiler). The epilogue stores each fragment into the subgroup's own 16 × 16
// staging block and its lanes write it out with the bounds, residual or bias applied.
//
// Split along K (p.split_chunks > 0; gemm_params.wgsl): workgroup z sums only its split's
// chunks and writes the raw sums (the host binds the partials' scratch as `y`, residual 0);
// gemm_splits.wgsl adds the splits. It fills the GPU where the grid of tiles does not: a
// 4096-row matrix at 32 tokens is 32-64 workgroups, each walking every chunk in turn.
//
// Streamed (p.grid_x > 0, a grid of p.grid_x workgroups along x): every tile's chunks in one
// sequence cut into p.grid_x equal runs (stream-K), so that where a wave holds p.grid_x
// workgroups no core would idle through a last wave of whole tiles part empty (the Llama-8B's
// gate|up at 32 rows: 224 tiles, one a core, on 132 cores). A tile that several runs share
// takes one partial-sum slot per run (`p.splits` slots, the host's count of the most runs any
// tile meets) and gemm_splits.wgsl adds them as it adds splits. Measured slower than the
// grids of tiles on an H100 (docs/design/coop-gemm.md, "Streamed grids"); for A/Bs only.
//
// XV4 1: X is read as vec4s (binding 5, the same buffer as `x`; x_offset, x_stride and x_aux
// multiples of 4); 0: four scalar loads.
//
// XH 1: X holds the input already formed and rounded to f16 by gemm_x16.wgsl (binding 6, the
// same buffer as `x`; x_offset and x_stride count f16 values, multiples of 4; XFORM 0), the
// values this kernel forms itself with XH 0, so both give the same bits: every tile of weight
// rows reads 2 bytes an input value instead of 4.

//!include gemm_io.wgsl
// (Before the overrides below: naga 30 panics specializing an override declared after one
// initialized from others.)
//!include common.wgsl

// Subgroups along the tokens (2 or 4) and along the rows (1 or 2; 2, 4 or 8 at RF 2), and
// token fragments of 16 per subgroup (2, or 1: a 32-token tile at WM 2 whose multiplies are
// not half wasted on a batch of 32 rows).
override WM: u32 = 4u;
override WN: u32 = 2u;
override TF: u32 = 2u;
// Row fragments of 16 per subgroup: 4, or 2.
override RF: u32 = 4u;
override XFORM: u32 = 0u;
override XV4: u32 = 1u;
override XH: u32 = 0u;
// RUN 1: the weights fetched in runs where the coop_weights snippet has a run form
// (coop_weights/q4_k.wgsl, q6_k.wgsl); 0, and for every other type: a step at a time
// (`fetch_steps`).
override RUN: u32 = 1u;
// Chunks in flight beyond the one being multiplied: 1, or 2 (the main loop's sets a and b;
// only where the weights come in runs, whose fetch is loads alone).
override DEPTH: u32 = 1u;
override TM: u32 = 16u * TF * WM;
override TN: u32 = 16u * RF * WN;
override WG: u32 = 32u * WM * WN;
// Columns per chunk (`gemm::COOP_KC`: 32, or 64 where the type's run form takes two
// sub-blocks a chunk) and the tiles' row pitch in halves.
override KC: u32 = 32u;
override KS: u32 = KC + 8u;
// Stages of the tiles in workgroup memory: 2 (chunk c in stage c % 2, one barrier a chunk), or
// 1 where two stages of 64-column tiles would pass the adapter's 48 KiB (a second barrier a
// chunk: every subgroup's multiplies of a chunk before the next chunk's stores).
override STAGES: u32 = 2u;
// The epilogue's 16 × 16 staging blocks: one per subgroup, or fewer (a divisor of WM × WN) for
// the subgroups to take in turns where that is what lets two stages fit.
override SLOTS: u32 = WM * WN;
// Weight elements per step, steps per row and chunk, and each thread's share of a chunk:
// NWS weight steps and NXS input vec4s (the tiles allowed by `CoopTile::all` keep them to the
// registers below).
const EPS: u32 = select(4u, 8u, XB > 0u);
override SPC: u32 = KC / EPS;
override NWS: u32 = TN * SPC / WG;
override NXS: u32 = TM * KC / 4u / WG;

// The tiles as f16 quadruples: a thread's four decoded values are one 8-byte store (four 2-byte
// stores and their bank conflicts otherwise), and the fragment loads read them with a stride of
// KS / 4 quadruples (a cooperative load through a pointer to vectors counts in vectors).
var<workgroup> ws: array<vec4<f16>, STAGES * TN * KS / 4u>;
var<workgroup> xs: array<vec4<f16>, STAGES * TM * KS / 4u>;
var<workgroup> stage: array<f32, 256u * SLOTS>;

//!include quant
//!include gemm_input.wgsl
// `x` again, as vec4s (read when XV4 is 1).
@group(0) @binding(5) var<storage, read> x4: array<vec4<f32>>;
// `x` again, as f16 quadruples (read when XH is 1).
@group(0) @binding(6) var<storage, read> xh: array<vec4<f16>>;
// `w` again, as vec4s (16-byte loads: Q4_K's block heads and quant words, Q6_K's runs).
@group(0) @binding(7) var<storage, read> w4: array<vec4<u32>>;
//!include coop_weights

// This thread's share of a chunk: weight steps decoded and converted (`StepShare`: a0.. and,
// where XB > 0, their second halves b0..), or its type's raw words (the coop_weights snippet's
// `WShare`), and input vec4s (`XShare`). Named fields, filled by straight-line code guarded by
// constants, not arrays indexed in a loop: a loop that the driver does not unroll waits out
// each load's latency before the next load issues, and an indexed private array lives in
// memory.
struct StepShare {
    a0: vec4<f16>,
    a1: vec4<f16>,
    a2: vec4<f16>,
    a3: vec4<f16>,
    a4: vec4<f16>,
    a5: vec4<f16>,
    a6: vec4<f16>,
    a7: vec4<f16>,
    b0: vec4<f16>,
    b1: vec4<f16>,
    b2: vec4<f16>,
    b3: vec4<f16>,
}

struct XShare {
    x0: vec4<f16>,
    x1: vec4<f16>,
    x2: vec4<f16>,
    x3: vec4<f16>,
    x4: vec4<f16>,
    x5: vec4<f16>,
    x6: vec4<f16>,
    x7: vec4<f16>,
}

// Four weights at half `o` (a multiple of 4) of the weight tiles.
fn put4(o: u32, v: vec4<f16>) {
    ws[o / 4u] = v;
}

// Where step `j` of this thread's share of chunk `c` sits: its tile row, its step index in the
// row, its column in the chunk.
struct StepAt {
    r: u32,
    g: u32,
    e: u32,
}

fn step_at(c: u32, lid: u32, j: u32) -> StepAt {
    let i = lid + j * WG;
    let subs = UNIT_ELEMS / SUB_ELEMS;
    let g = c * SPC + i % SPC;
    let k = g % SUB_STEPS;
    let u = g / SUB_STEPS / subs;
    let s = g / SUB_STEPS % subs;
    return StepAt(i / SPC, g, u * UNIT_ELEMS + SUB_ELEMS * s + 4u * k - c * KC);
}

// Weight step `j` of this thread's share of chunk `c` (rows n0..), decoded (zeros past the last
// row or column). Branch-free: past the end it decodes the last row's last step and selects
// zeros, so every load of a chunk sits in one basic block and issues before any is waited for
// (a load inside a branch waits out its latency before the next step's loads issue).
fn weight_step(c: u32, n0: u32, lid: u32, j: u32) -> StepW {
    let subs = UNIT_ELEMS / SUB_ELEMS;
    let steps = p.cols / UNIT_ELEMS * subs * SUB_STEPS;
    let at = step_at(c, lid, j);
    let row = n0 + at.r;
    let live = (row < p.rows) & (at.g < steps);
    let g = min(at.g, steps - 1u);
    let k = g % SUB_STEPS;
    let u = g / SUB_STEPS / subs;
    let s = g / SUB_STEPS % subs;
    let sw = coop_step(p.w_offset + min(row, p.rows - 1u) * p.row_bytes + u * UNIT_BYTES, s, k);
    let zero = vec4<f32>(0.0);
    return StepW(select(zero, sw.a, live), select(zero, sw.b, live));
}

// Input vec4 `j` of this thread's share of chunk `c` (tokens m0..), formed and converted (zeros
// past the last token or column; branch-free as `weight_step`).
fn input_vec(c: u32, m0: u32, lid: u32, j: u32) -> vec4<f16> {
    let i = lid + j * WG;
    let t = m0 + i / (KC / 4u);
    let e = c * KC + (i % (KC / 4u)) * 4u;
    let live = (t < p.tokens) & (e < p.cols);
    if XH == 1u {
        let at = p.x_offset + min(t, p.tokens - 1u) * p.x_stride + min(e, p.cols - 4u);
        return select(vec4<f16>(0.0), xh[at / 4u], live);
    }
    let v = select(vec4<f32>(0.0), xin(min(t, p.tokens - 1u), min(e, p.cols - 4u)), live);
    // Clamped to f16's range: past it an input would round to an infinity and make every sum
    // it enters inf or NaN; clamped, the sums stay finite (though not the f32 kernels' values).
    return vec4<f16>(clamp(v, vec4<f32>(-65504.0), vec4<f32>(65504.0)));
}

// This thread's weight steps of chunk `c` (rows n0..), one step at a time (`weight_step`: the
// lanes of a subgroup take consecutive steps). NWS is 2, 4 or 8 (`CoopTile::for_type`); with XB > 0
// it is at most 4. The coop_weights snippet's `coop_fetch_weights` calls it, or loads its
// type's words otherwise.
fn fetch_steps(c: u32, n0: u32, lid: u32) -> StepShare {
    var r: StepShare;
    let s0 = weight_step(c, n0, lid, 0u);
    let s1 = weight_step(c, n0, lid, 1u);
    r.a0 = vec4<f16>(s0.a);
    r.a1 = vec4<f16>(s1.a);
    if XB > 0u {
        r.b0 = vec4<f16>(s0.b);
        r.b1 = vec4<f16>(s1.b);
    }
    if NWS > 2u {
        let s2 = weight_step(c, n0, lid, 2u);
        let s3 = weight_step(c, n0, lid, 3u);
        r.a2 = vec4<f16>(s2.a);
        r.a3 = vec4<f16>(s3.a);
        if XB > 0u {
            r.b2 = vec4<f16>(s2.b);
            r.b3 = vec4<f16>(s3.b);
        }
    }
    if NWS > 4u {
        r.a4 = vec4<f16>(weight_step(c, n0, lid, 4u).a);
        r.a5 = vec4<f16>(weight_step(c, n0, lid, 5u).a);
        r.a6 = vec4<f16>(weight_step(c, n0, lid, 6u).a);
        r.a7 = vec4<f16>(weight_step(c, n0, lid, 7u).a);
    }
    return r;
}

// This thread's NXS (1, 2, 4 or 8) input vec4s of chunk `c` (tokens m0..).
fn fetch_inputs(c: u32, m0: u32, lid: u32) -> XShare {
    var r: XShare;
    r.x0 = input_vec(c, m0, lid, 0u);
    if NXS > 1u {
        r.x1 = input_vec(c, m0, lid, 1u);
    }
    if NXS > 2u {
        r.x2 = input_vec(c, m0, lid, 2u);
        r.x3 = input_vec(c, m0, lid, 3u);
    }
    if NXS > 4u {
        r.x4 = input_vec(c, m0, lid, 4u);
        r.x5 = input_vec(c, m0, lid, 5u);
        r.x6 = input_vec(c, m0, lid, 6u);
        r.x7 = input_vec(c, m0, lid, 7u);
    }
    return r;
}

// Where this thread's run of chunk `c` sits, for the coop_weights snippets' run forms: the byte
// offset of its row's block (the last row's past the matrix), whether its row is in the
// matrix, its first step in the chunk (threads take NWS consecutive steps of one tile row,
// SPC / NWS threads a row) and where its tile row starts in a weight tile.
struct RunAt {
    b: u32,
    live: bool,
    k0: u32,
    o: u32,
}

fn run_at(c: u32, n0: u32, lid: u32) -> RunAt {
    let threads = SPC / NWS;
    let r = lid / threads;
    let k0 = (lid % threads) * NWS;
    let row = n0 + r;
    // Chunk c is chunk c % per of block c / per (KC divides the block's elements).
    let per = UNIT_ELEMS / KC;
    let b = p.w_offset + min(row, p.rows - 1u) * p.row_bytes + (c / per) * UNIT_BYTES;
    return RunAt(b, row < p.rows, k0, r * KS);
}

// Step `j`'s values (zeros where `keep` is false) into the weight tile at `base`.
fn put_step(c: u32, lid: u32, j: u32, base: u32, a: vec4<f16>, b: vec4<f16>, keep: bool) {
    let at = step_at(c, lid, j);
    let o = base + at.r * KS + at.e;
    let zero = vec4<f16>(0.0);
    put4(o, select(zero, a, keep));
    if XB > 0u {
        put4(o + 4u * XB, select(zero, b, keep));
    }
}

fn put_input(lid: u32, j: u32, base: u32, v: vec4<f16>) {
    let i = lid + j * WG;
    xs[(base + (i / (KC / 4u)) * KS) / 4u + i % (KC / 4u)] = v;
}

// Steps as `fetch_steps` decoded them into the weight tile at `wbase` (zeros where `keep` is
// false).
fn publish_steps(r: StepShare, c: u32, wbase: u32, lid: u32, keep: bool) {
    put_step(c, lid, 0u, wbase, r.a0, r.b0, keep);
    put_step(c, lid, 1u, wbase, r.a1, r.b1, keep);
    if NWS > 2u {
        put_step(c, lid, 2u, wbase, r.a2, r.b2, keep);
        put_step(c, lid, 3u, wbase, r.a3, r.b3, keep);
    }
    if NWS > 4u {
        put_step(c, lid, 4u, wbase, r.a4, r.a4, keep);
        put_step(c, lid, 5u, wbase, r.a5, r.a5, keep);
        put_step(c, lid, 6u, wbase, r.a6, r.a6, keep);
        put_step(c, lid, 7u, wbase, r.a7, r.a7, keep);
    }
}

// The stage chunk `c` goes to.
fn stage_of(c: u32) -> u32 {
    return select(0u, c & 1u, STAGES > 1u);
}

// Chunk `c`'s share (weights `w`, inputs `x`) into its stage, or zeros where `keep` is false
// (DEPTH 2's set b past the last chunk: multiplied, it adds nothing). `keep` is applied where
// the share is used, not where it is fetched: a select on a register whose load is in flight
// would wait for it. With one stage, after a barrier: every subgroup has multiplied the chunk
// before it.
fn publish(w: WShare, x: XShare, c: u32, lid: u32, keep: bool) {
    if STAGES == 1u {
        workgroupBarrier();
    }
    let st = stage_of(c);
    coop_publish_weights(w, c, st * TN * KS, lid, keep);
    let xbase = st * TM * KS;
    let z = vec4<f16>(0.0);
    put_input(lid, 0u, xbase, select(z, x.x0, keep));
    if NXS > 1u {
        put_input(lid, 1u, xbase, select(z, x.x1, keep));
    }
    if NXS > 2u {
        put_input(lid, 2u, xbase, select(z, x.x2, keep));
        put_input(lid, 3u, xbase, select(z, x.x3, keep));
    }
    if NXS > 4u {
        put_input(lid, 4u, xbase, select(z, x.x4, keep));
        put_input(lid, 5u, xbase, select(z, x.x5, keep));
        put_input(lid, 6u, xbase, select(z, x.x6, keep));
        put_input(lid, 7u, xbase, select(z, x.x7, keep));
    }
}

// Fragment (tokens t0.., rows r0..) of subgroup `sg` through a staging block to Y, the
// subgroups in turns of SLOTS (one turn when every subgroup has its own block).
//
// A turn's store is in a branch on the subgroup's index: uniform within each subgroup, which
// is all a cooperative store needs, but naga's uniformity analysis knows only workgroup
// uniformity, and reports every such requirement under `derivative_uniformity` — hence the
// filter, on this function alone. Its barriers stay in uniform control flow.
@diagnostic(off, derivative_uniformity)
fn store_fragment(z: u32, c: coop_mat16x16<f32, C>, sg: u32, lane: u32, t0: u32, r0: u32) {
    let so = (sg % SLOTS) * 256u;
    for (var turn = 0u; turn < WM * WN / SLOTS; turn++) {
        let mine = sg / SLOTS == turn;
        if mine {
            coopStoreT(c, &stage[so], 16u);
        }
        workgroupBarrier();
        if mine {
            for (var e = lane; e < 256u; e += 32u) {
                let t = t0 + e / 16u;
                let row = r0 + e % 16u;
                if t < p.tokens && row < p.rows {
                    let i = p.y_offset + z * p.split_stride + t * p.y_stride + row;
                    store_output(i, row, stage[so + e]);
                }
            }
        }
        workgroupBarrier();
    }
}

// The multiply-adds of the chunk in stage `st` into subgroup (sm, sn)'s accumulators.
fn multiply(
    st: u32,
    sm: u32,
    sn: u32,
    c00: ptr<function, coop_mat16x16<f32, C>>,
    c01: ptr<function, coop_mat16x16<f32, C>>,
    c02: ptr<function, coop_mat16x16<f32, C>>,
    c03: ptr<function, coop_mat16x16<f32, C>>,
    c10: ptr<function, coop_mat16x16<f32, C>>,
    c11: ptr<function, coop_mat16x16<f32, C>>,
    c12: ptr<function, coop_mat16x16<f32, C>>,
    c13: ptr<function, coop_mat16x16<f32, C>>,
) {
    // In quadruples: KS and the columns kk are multiples of 4.
    let xo = (st * TM * KS + sm * KS) / 4u;
    let ks = KS / 4u;
    let wo = (st * TN * KS + sn * KS) / 4u;
    for (var kk = 0u; kk < KC; kk += 16u) {
        let a0 = coopLoadT<coop_mat16x16<f16, A>>(&xs[xo + kk / 4u], ks);
        if TF == 1u {
            // One token fragment: RF multiply-adds, each row fragment loaded as used.
            let b0 = coopLoad<coop_mat16x16<f16, B>>(&ws[wo + kk / 4u], ks);
            *c00 = coopMultiplyAdd(a0, b0, *c00);
            let b1 = coopLoad<coop_mat16x16<f16, B>>(&ws[wo + 16u * ks + kk / 4u], ks);
            *c01 = coopMultiplyAdd(a0, b1, *c01);
            if RF > 2u {
                let b2 = coopLoad<coop_mat16x16<f16, B>>(&ws[wo + 32u * ks + kk / 4u], ks);
                *c02 = coopMultiplyAdd(a0, b2, *c02);
                let b3 = coopLoad<coop_mat16x16<f16, B>>(&ws[wo + 48u * ks + kk / 4u], ks);
                *c03 = coopMultiplyAdd(a0, b3, *c03);
            }
            continue;
        }
        let a1 = coopLoadT<coop_mat16x16<f16, A>>(&xs[xo + 16u * ks + kk / 4u], ks);
        let b0 = coopLoad<coop_mat16x16<f16, B>>(&ws[wo + kk / 4u], ks);
        *c00 = coopMultiplyAdd(a0, b0, *c00);
        *c10 = coopMultiplyAdd(a1, b0, *c10);
        let b1 = coopLoad<coop_mat16x16<f16, B>>(&ws[wo + 16u * ks + kk / 4u], ks);
        *c01 = coopMultiplyAdd(a0, b1, *c01);
        *c11 = coopMultiplyAdd(a1, b1, *c11);
        if RF > 2u {
            let b2 = coopLoad<coop_mat16x16<f16, B>>(&ws[wo + 32u * ks + kk / 4u], ks);
            *c02 = coopMultiplyAdd(a0, b2, *c02);
            *c12 = coopMultiplyAdd(a1, b2, *c12);
            let b3 = coopLoad<coop_mat16x16<f16, B>>(&ws[wo + 48u * ks + kk / 4u], ks);
            *c03 = coopMultiplyAdd(a0, b3, *c03);
            *c13 = coopMultiplyAdd(a1, b3, *c13);
        }
    }
}

// Chunks c_first..chunks (exclusive) of the tile at rows n0.., tokens m0.. into this
// subgroup's accumulators, then through the staging blocks into Y (or into partial sums `z`,
// when split or streamed).
fn tile_chunks(n0: u32, m0: u32, c_first: u32, chunks: u32, z: u32, lid: u32, sg: u32, lane: u32) {
    // This subgroup's 16 TF × 16 RF part: tokens sm.., rows sn.. of the tile.
    let sm = (sg / WN) * 16u * TF;
    let sn = (sg % WN) * 16u * RF;
    var c00 = coop_mat16x16<f32, C>();
    var c01 = coop_mat16x16<f32, C>();
    var c02 = coop_mat16x16<f32, C>();
    var c03 = coop_mat16x16<f32, C>();
    var c10 = coop_mat16x16<f32, C>();
    var c11 = coop_mat16x16<f32, C>();
    var c12 = coop_mat16x16<f32, C>();
    var c13 = coop_mat16x16<f32, C>();
    // The next chunk's share is in flight while the tensor cores take this one: with DEPTH 2
    // the next two (sets a and b, chunks alternating between them), so a share's loads have
    // a whole chunk's publish and multiplies to land, not only the multiplies. The fetch is
    // unconditional (past the last chunk it fetches the last one again, unused): inside an
    // `if` a decode would wait out its loads before the multiplies below could issue.
    // (An empty split — its first chunk past the last — fetches the last chunk, unused.)
    // Set b's half of an iteration is unconditional too: past the last chunk (an odd count)
    // it publishes zeros and multiplies them, adding nothing — in v38-v46 it sat in an `if`,
    // where the driver waited for its fetch's loads before the branch closed.
    let last = chunks - 1u;
    var wa = coop_fetch_weights(min(c_first, last), n0, lid);
    var xa = fetch_inputs(min(c_first, last), m0, lid);
    var wb: WShare;
    var xb: XShare;
    if DEPTH > 1u {
        wb = coop_fetch_weights(min(c_first + 1u, last), n0, lid);
        xb = fetch_inputs(min(c_first + 1u, last), m0, lid);
    }
    for (var c = c_first; c < chunks; c += DEPTH) {
        publish(wa, xa, c, lid, true);
        workgroupBarrier();
        wa = coop_fetch_weights(min(c + DEPTH, last), n0, lid);
        xa = fetch_inputs(min(c + DEPTH, last), m0, lid);
        multiply(stage_of(c), sm, sn, &c00, &c01, &c02, &c03, &c10, &c11, &c12, &c13);
        // Set b's chunk (the shares of types whose `coop_fetch_weights` decodes, RUN 0 and
        // `fetch_steps`, are fetched with DEPTH 1 only).
        if DEPTH > 1u {
            publish(wb, xb, c + 1u, lid, c + 1u < chunks);
            workgroupBarrier();
            wb = coop_fetch_weights(min(c + 1u + DEPTH, last), n0, lid);
            xb = fetch_inputs(min(c + 1u + DEPTH, last), m0, lid);
            multiply(stage_of(c + 1u), sm, sn, &c00, &c01, &c02, &c03, &c10, &c11, &c12, &c13);
        }
    }
    let t0 = m0 + sm;
    let r0 = n0 + sn;
    store_fragment(z, c00, sg, lane, t0, r0);
    store_fragment(z, c01, sg, lane, t0, r0 + 16u);
    if RF > 2u {
        store_fragment(z, c02, sg, lane, t0, r0 + 32u);
        store_fragment(z, c03, sg, lane, t0, r0 + 48u);
    }
    if TF > 1u {
        store_fragment(z, c10, sg, lane, t0 + 16u, r0);
        store_fragment(z, c11, sg, lane, t0 + 16u, r0 + 16u);
        if RF > 2u {
            store_fragment(z, c12, sg, lane, t0 + 16u, r0 + 32u);
            store_fragment(z, c13, sg, lane, t0 + 16u, r0 + 48u);
        }
    }
}

// The slots after `z` of the tile at rows n0.., tokens m0.. set to zero: a streamed grid's
// tile has up to `splits` contributors, and the split sum adds every slot.
fn zero_later_slots(z: u32, n0: u32, m0: u32, lid: u32) {
    for (var s = z + 1u; s < p.splits; s++) {
        for (var e = lid; e < TM * TN; e += WG) {
            let t = m0 + e / TN;
            let row = n0 + e % TN;
            if t < p.tokens && row < p.rows {
                y[p.y_offset + s * p.split_stride + t * p.y_stride + row] = 0.0;
            }
        }
    }
}

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(subgroup_id) sg: u32,
    @builtin(subgroup_invocation_id) lane: u32,
) {
    let per = (p.cols + KC - 1u) / KC;
    if p.grid_x == 0u {
        // A grid of tiles: this workgroup's chunks of columns, all of them or split wg.z's
        // (see gemm_params).
        var c_first = 0u;
        var chunks = per;
        if p.split_chunks > 0u {
            c_first = wg.z * p.split_chunks;
            chunks = min(chunks, c_first + p.split_chunks);
        }
        tile_chunks(wg.x * TN, wg.y * TM, c_first, chunks, wg.z, lid, sg, lane);
        return;
    }
    // Streamed (p.grid_x workgroups): the tiles' chunks in one sequence, tile by tile, cut
    // into p.grid_x equal runs, one a workgroup — every core the same share of the work where
    // whole tiles would leave the last wave part empty. A tile whose chunks two or more runs
    // share gets one slot of partial sums per run (the run that starts it slot 0), and the
    // run that ends it zeros the slots after its own, so the split sum adds exactly `splits`.
    let tiles_x = (p.rows + TN - 1u) / TN;
    let total = tiles_x * ((p.tokens + TM - 1u) / TM) * per;
    let g = p.grid_x;
    let end = (wg.x + 1u) * total / g;
    var at = wg.x * total / g;
    loop {
        if at >= end {
            break;
        }
        let tile = at / per;
        let c_first = at % per;
        let c_end = min(per, c_first + (end - at));
        // The run holding the tile's first chunk x: the largest w with w * total / g <= x.
        let first_run = ((tile * per + 1u) * g + total - 1u) / total - 1u;
        let z = wg.x - first_run;
        let n0 = (tile % tiles_x) * TN;
        let m0 = (tile / tiles_x) * TM;
        tile_chunks(n0, m0, c_first, c_end, z, lid, sg, lane);
        if c_end == per {
            zero_later_slots(z, n0, m0, lid);
        }
        at = tile * per + c_end;
    }
}
