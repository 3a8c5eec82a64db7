// GEMM with fused dequantization, for prefill: Y[t, r] = sum_k W[r, k] * X[t, k] for every
// token t of a batch (+ res[t, r] when `residual` is 1, + res[r] when it is 2: a bias), W a row-major GGUF matrix (rows of
// whole blocks in `w`), X and Y f32 token-major with their own row strides, so a GEMM can read
// one part of a wider activation row and write its rows into a part of a wider output row (the
// stacked Q|K|V and gate|up projections).
//
// Tiling: a workgroup computes a TM-token × TN-row tile of Y. For each chunk of KC columns it
// dequantizes the TN × KC weight tile once into workgroup memory (each weight element is
// decoded once per TM tokens rather than once per token, the point of batching) and loads the
// TM × KC input tile; every thread then accumulates a (TM / 16) × (TN / 16) block of outputs
// from workgroup memory. Rows of the tiles are padded by one float so that threads reading
// a column of them hit different banks.
//
// XFORM (override) forms the input on load: 0 X as bound; 3 SwiGLU silu(X[t, k]) *
// X[t, x_aux + k]; 4 GeGLU with gelu_tanh (the down projection reading the gate|up output).

//!include gemm_io.wgsl

// Tokens and rows per tile (16, 32 or 64; the launcher refuses others); WG = 256 threads as
// 16 × 16.
override TM: u32 = 32u;
override TN: u32 = 64u;
override XFORM: u32 = 0u;
const KC: u32 = 32u;
const KP: u32 = KC + 1u;

var<workgroup> ws: array<f32, TN * KP>;
var<workgroup> xs: array<f32, TM * KP>;

//!include common.wgsl
//!include quant
//!include activation.wgsl

fn input(t: u32, k: u32) -> f32 {
    let i = p.x_offset + t * p.x_stride + k;
    switch XFORM {
        case 3u: { return silu(x[i]) * x[i + p.x_aux]; }
        case 4u: { return gelu_tanh(x[i]) * x[i + p.x_aux]; }
        default: { return x[i]; }
    }
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let n0 = wg.x * TN;
    let m0 = wg.y * TM;
    let tx = lid % 16u;
    let ty = lid / 16u;
    // Outputs per thread: RT rows × TT tokens (at most 4 × 4: TM, TN at most 64), in four
    // vec4 accumulators (token a, rows as lanes), named rather than an array: an indexed
    // private array is kept in memory by some compilers (NVIDIA's, llvmpipe's).
    let rt = TN / 16u;
    let tt = TM / 16u;
    var acc0 = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    var acc2 = vec4<f32>(0.0);
    var acc3 = vec4<f32>(0.0);
    for (var k0 = 0u; k0 < p.cols; k0 += KC) {
        for (var i = lid; i < TN * KC; i += 256u) {
            let r = i / KC;
            let e = i % KC;
            let row = n0 + r;
            let k = k0 + e;
            var v = 0.0;
            if row < p.rows && k < p.cols {
                let b = p.w_offset + row * p.row_bytes + (k / UNIT_ELEMS) * UNIT_BYTES;
                v = dequant_elem(b, k % UNIT_ELEMS);
            }
            ws[r * KP + e] = v;
        }
        for (var i = lid; i < TM * KC; i += 256u) {
            let t = i / KC;
            let e = i % KC;
            var v = 0.0;
            if m0 + t < p.tokens && k0 + e < p.cols {
                v = input(m0 + t, k0 + e);
            }
            xs[t * KP + e] = v;
        }
        workgroupBarrier();
        for (var e = 0u; e < KC; e++) {
            var wv = vec4<f32>(ws[tx * KP + e], 0.0, 0.0, 0.0);
            if rt > 1u {
                wv.y = ws[(tx + 16u) * KP + e];
            }
            if rt > 2u {
                wv.z = ws[(tx + 32u) * KP + e];
                wv.w = ws[(tx + 48u) * KP + e];
            }
            acc0 += xs[ty * KP + e] * wv;
            if tt > 1u {
                acc1 += xs[(ty + 16u) * KP + e] * wv;
            }
            if tt > 2u {
                acc2 += xs[(ty + 32u) * KP + e] * wv;
                acc3 += xs[(ty + 48u) * KP + e] * wv;
            }
        }
        workgroupBarrier();
    }
    for (var a = 0u; a < tt; a++) {
        let t = m0 + ty + 16u * a;
        var v4 = acc0;
        switch a {
            case 1u: { v4 = acc1; }
            case 2u: { v4 = acc2; }
            case 3u: { v4 = acc3; }
            default: {}
        }
        for (var b = 0u; b < rt; b++) {
            let row = n0 + tx + 16u * b;
            if t < p.tokens && row < p.rows {
                store_output(p.y_offset + t * p.y_stride + row, row, v4[b]);
            }
        }
    }
}
