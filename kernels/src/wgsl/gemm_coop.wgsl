enable f16;
enable wgpu_cooperative_matrix;

// GEMM with fused dequantization on cooperative matrices (tensor cores), for prefill on
// adapters with 16 × 16 × 16 f16 × f16 → f32 subgroup matrices (NVIDIA Vulkan:
// VK_KHR_cooperative_matrix): the contract of gemm.wgsl, Y[t, r] = sum_k W[r, k] * input(X[t])[k]
// (+ res[t, r] when `residual` is 1, + res[y_offset + r] when it is 2: a bias), W a row-major
// GGUF matrix, X and Y f32 token-major with their own row strides.
//
// Tiling: a workgroup of WM × WN subgroups (32 lanes each) owns a TM = 32 WM token × TN = 32 WN
// row tile of Y; each subgroup a 32 × 32 part of it as four 16 × 16 f32 accumulator matrices.
// Per chunk of KC (32 or 64) columns the workgroup decodes the TN × KC weight tile to f16 into
// workgroup memory (each weight decoded once per TM tokens; the quant snippet's step_weights,
// 4 or 4 + 4 values a step, consecutive lanes consecutive steps of a row), converts the TM × KC
// input tile to f16 (the GLU input forms applied on the way), and each subgroup multiplies
// its two A (token) by two B (row) 16 × 16 fragments KC / 16 times. Tile rows are KS = KC + 8
// halves apart (80 or 144 bytes): 16-byte aligned fragment rows that do not all start in one
// bank.
//
// Precision: products of f16-rounded weights and inputs, summed in f32 (llama.cpp's f16
// tensor-core path does the same); the CPU reference sums exact products in f64, so the
// tests' tolerance is that of two f16 roundings per product.
//
// The accumulators are named, not an array (an indexed private array is kept in memory by
// NVIDIA's compiler). The epilogue stores each fragment into the subgroup's own 16 × 16
// staging block and its lanes write it out with the bounds, residual or bias applied.
//
// XV4 1: X is read as vec4s (binding 5, the same buffer as `x`; x_offset, x_stride and x_aux
// multiples of 4); 0: four scalar loads.

//!include gemm_io.wgsl

// Subgroups along the tokens and along the rows (1, 2 or 4 each).
override WM: u32 = 2u;
override WN: u32 = 4u;
override XFORM: u32 = 0u;
override XV4: u32 = 1u;
override TM: u32 = 32u * WM;
override TN: u32 = 32u * WN;
override WG: u32 = 32u * WM * WN;
// Columns per chunk (32 or 64) and the tiles' row pitch in halves.
override KC: u32 = 32u;
override KS: u32 = KC + 8u;

var<workgroup> ws: array<f16, TN * KS>;
var<workgroup> xs: array<f16, TM * KS>;
var<workgroup> stage: array<f32, 256u * WM * WN>;

//!include common.wgsl
//!include quant
//!include gemm_input.wgsl

fn put4(base: u32, v: vec4<f32>) {
    ws[base] = f16(v.x);
    ws[base + 1u] = f16(v.y);
    ws[base + 2u] = f16(v.z);
    ws[base + 3u] = f16(v.w);
}

// Fragment (i, j) of subgroup `sg` (tokens 16 i.., rows 16 j.. of its 32 × 32 part) through
// the subgroup's staging block to Y.
fn store_fragment(c: coop_mat16x16<f32, C>, sg: u32, lane: u32, t0: u32, r0: u32) {
    let so = sg * 256u;
    coopStoreT(c, &stage[so], 16u);
    workgroupBarrier();
    for (var e = lane; e < 256u; e += 32u) {
        let t = t0 + e / 16u;
        let row = r0 + e % 16u;
        if t < p.tokens && row < p.rows {
            let i = p.y_offset + t * p.y_stride + row;
            var v = stage[so + e];
            if p.residual == 1u {
                v += res[i];
            } else if p.residual == 2u {
                v += res[p.y_offset + row];
            }
            y[i] = v;
        }
    }
    workgroupBarrier();
}

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(subgroup_id) sg: u32,
    @builtin(subgroup_invocation_id) lane: u32,
) {
    let n0 = wg.x * TN;
    let m0 = wg.y * TM;
    // This subgroup's 32 × 32 part: tokens sm.., rows sn.. of the tile.
    let sm = (sg / WN) * 32u;
    let sn = (sg % WN) * 32u;
    // A step is 4 elements, or 4 + 4 where XB > 0: KC / EPS steps per row and chunk.
    let eps = select(4u, 8u, XB > 0u);
    let spc = KC / eps;
    let subs = UNIT_ELEMS / SUB_ELEMS;
    let steps = p.cols / UNIT_ELEMS * subs * SUB_STEPS;
    var c00 = coop_mat16x16<f32, C>();
    var c01 = coop_mat16x16<f32, C>();
    var c10 = coop_mat16x16<f32, C>();
    var c11 = coop_mat16x16<f32, C>();
    for (var k0 = 0u; k0 < p.cols; k0 += KC) {
        let first = (k0 / KC) * spc;
        for (var i = lid; i < TN * spc; i += WG) {
            let r = i / spc;
            let g = first + i % spc;
            let row = n0 + r;
            let k = g % SUB_STEPS;
            let u = g / SUB_STEPS / subs;
            let s = g / SUB_STEPS % subs;
            // The step's slot in the chunk (the same for every row; past the last column or
            // row the slot is written with zeros).
            let e = u * UNIT_ELEMS + SUB_ELEMS * s + 4u * k - k0;
            var sw = StepW(vec4<f32>(0.0), vec4<f32>(0.0));
            if row < p.rows && g < steps {
                sw = step_weights(p.w_offset + row * p.row_bytes + u * UNIT_BYTES, s, k);
            }
            put4(r * KS + e, sw.a);
            if XB > 0u {
                put4(r * KS + e + 4u * XB, sw.b);
            }
        }
        for (var i = lid; i < TM * (KC / 4u); i += WG) {
            let t = i / (KC / 4u);
            let e = (i % (KC / 4u)) * 4u;
            var v = vec4<f32>(0.0);
            if m0 + t < p.tokens && k0 + e < p.cols {
                v = xin(m0 + t, k0 + e);
            }
            // Clamped to f16's range: past it an input would round to an infinity and make
            // every sum it enters inf or NaN; clamped, the sums stay finite (though not the
            // f32 kernels' values).
            v = clamp(v, vec4<f32>(-65504.0), vec4<f32>(65504.0));
            let o = t * KS + e;
            xs[o] = f16(v.x);
            xs[o + 1u] = f16(v.y);
            xs[o + 2u] = f16(v.z);
            xs[o + 3u] = f16(v.w);
        }
        workgroupBarrier();
        for (var kk = 0u; kk < KC; kk += 16u) {
            let a0 = coopLoadT<coop_mat16x16<f16, A>>(&xs[sm * KS + kk], KS);
            let a1 = coopLoadT<coop_mat16x16<f16, A>>(&xs[(sm + 16u) * KS + kk], KS);
            let b0 = coopLoad<coop_mat16x16<f16, B>>(&ws[sn * KS + kk], KS);
            let b1 = coopLoad<coop_mat16x16<f16, B>>(&ws[(sn + 16u) * KS + kk], KS);
            c00 = coopMultiplyAdd(a0, b0, c00);
            c01 = coopMultiplyAdd(a0, b1, c01);
            c10 = coopMultiplyAdd(a1, b0, c10);
            c11 = coopMultiplyAdd(a1, b1, c11);
        }
        workgroupBarrier();
    }
    store_fragment(c00, sg, lane, m0 + sm, n0 + sn);
    store_fragment(c01, sg, lane, m0 + sm, n0 + sn + 16u);
    store_fragment(c10, sg, lane, m0 + sm + 16u, n0 + sn);
    store_fragment(c11, sg, lane, m0 + sm + 16u, n0 + sn + 16u);
}
