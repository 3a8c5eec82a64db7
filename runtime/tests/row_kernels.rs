//! Row and elementwise kernels against their CPU references on the adapter at hand: norms,
//! activations, RoPE (both layouts, per-call base), softmax with and without a soft cap, argmax;
//! odd sizes that are not multiples of the workgroup, and a single element.

#![allow(clippy::unwrap_used)]

use gpuport_testing as support;

use gpuport_kernels::attention::{self, KV_TYPES};
use gpuport_kernels::quant::GgmlType;
use gpuport_kernels::rowops::{self, ElementOp, NormKind, RopeParams};
use gpuport_runtime::{Elem, Gpu, Recorder, ops};

fn close(got: &[f32], want: &[f32], rel: f32, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= rel * w.abs().max(1.0),
            "{what}: element {i}: GPU {g} CPU {w}"
        );
    }
}

/// `x` as a cache of `kv` values holds it: f32 unchanged, f16 rounded to nearest even (as
/// `f16_round` of kv/f16.wgsl rounds; a value the GPU computed a little differently may still
/// round to the next half, so cache contents are compared within an ulp).
fn as_cached(x: &[f32], kv: GgmlType) -> Vec<f32> {
    match kv {
        GgmlType::F16 => x.iter().map(|v| half::f16::from_f32(*v).to_f32()).collect(),
        _ => x.to_vec(),
    }
}

/// Values whose f16 rounding is easy to get wrong: ties between halves (to even: 1 + 2⁻¹¹ → 1,
/// 1 + 3·2⁻¹¹ → 1 + 2⁻⁹), subnormal halves (2⁻²⁰, a tie at 3·2⁻²⁵ → 2⁻²³), the largest finite
/// half, a value that rounds to it (65,519), and one below half the smallest subnormal (→ 0).
const F16_EDGES: [f32; 8] = [
    1.0 + 1.0 / 2048.0,
    -(1.0 + 3.0 / 2048.0),
    1.0 / 1_048_576.0,
    3.0 / 33_554_432.0,
    65_504.0,
    -65_519.0,
    1e-9,
    0.1,
];

/// A pool of f32 values uploaded as a cache of `kv` values.
fn upload_cache(gpu: &Gpu, pool: &[f32], kv: GgmlType, what: &str) -> gpuport_runtime::Tensor {
    match kv {
        GgmlType::F16 => {
            let bits: Vec<u16> = pool
                .iter()
                .map(|v| half::f16::from_f32(*v).to_bits())
                .collect();
            gpu.upload(bytemuck::cast_slice(&bits), Elem::F16, &[bits.len()], what)
                .unwrap()
        }
        _ => gpu.upload_f32(pool, &[pool.len()], what).unwrap(),
    }
}

/// A cache's values read back as f32.
fn readback_cache(gpu: &Gpu, t: &gpuport_runtime::Tensor) -> Vec<f32> {
    match t.elem {
        Elem::F16 => gpu
            .readback(t)
            .unwrap()
            .chunks_exact(2)
            .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
            .collect(),
        _ => gpu.readback_f32(t).unwrap(),
    }
}

/// The relative bound between a cache's values and the CPU's: `f32` for an f32 cache, at least
/// one f16 ulp (2⁻¹⁰) for an f16 one (a value the GPU computed a little differently may round
/// to the next half).
fn cache_bound(f32: f32, kv: GgmlType) -> f32 {
    if kv == GgmlType::F16 {
        f32.max(1e-3)
    } else {
        f32
    }
}

/// A logical KV cache (`positions × row` values) laid out in a paged pool whose page table maps
/// logical page i to pool page `pages - 1 - i` (reversed, so a kernel that ignored the table
/// would read the wrong rows), with its table uploaded; and back.
struct PagedCache {
    table: Vec<u32>,
    row: usize,
}

const PAGE: usize = 64;

impl PagedCache {
    fn new(positions: usize, row: usize) -> PagedCache {
        let pages = positions.div_ceil(PAGE);
        PagedCache {
            table: (0..pages as u32).rev().collect(),
            row,
        }
    }

    fn to_pool(&self, logical: &[f32]) -> Vec<f32> {
        let mut pool = vec![0.0; self.table.len() * PAGE * self.row];
        for (j, r) in logical.chunks(self.row).enumerate() {
            let at = attention::cache_row(&self.table, PAGE, j) * self.row;
            pool[at..at + self.row].copy_from_slice(r);
        }
        pool
    }

    fn logical(&self, pool: &[f32], positions: usize) -> Vec<f32> {
        (0..positions)
            .flat_map(|j| {
                let at = attention::cache_row(&self.table, PAGE, j) * self.row;
                pool[at..at + self.row].to_vec()
            })
            .collect()
    }

    fn upload(
        &self,
        gpu: &Gpu,
        logical: &[f32],
        kv: GgmlType,
        what: &str,
    ) -> gpuport_runtime::Tensor {
        upload_cache(gpu, &self.to_pool(logical), kv, what)
    }

    fn table(&self, gpu: &Gpu) -> gpuport_runtime::Tensor {
        let n = self.table.len();
        gpu.upload(bytemuck::cast_slice(&self.table), Elem::U32, &[n], "pages")
            .unwrap()
    }
}

fn upload_u32(gpu: &Gpu, v: &[u32], what: &str) -> gpuport_runtime::Tensor {
    gpu.upload(bytemuck::cast_slice(v), Elem::U32, &[v.len()], what)
        .unwrap()
}

fn run(gpu: &Gpu, f: impl FnOnce(&mut Recorder<'_>)) {
    let mut rec = Recorder::new(gpu);
    f(&mut rec);
    rec.submit().unwrap();
}

#[test]
fn norms_match() {
    let Some(gpu) = support::gpu() else { return };
    // Rows shorter than a workgroup's four-element steps, rows of whole steps (4096), and
    // steps with a ragged tail (5000).
    for (rows, cols) in [(3, 576), (2, 1000), (1, 1), (5, 640), (2, 4096), (1, 5000)] {
        let x: Vec<f32> = support::random_f32(rows * cols, 1)
            .iter()
            .map(|v| v * 3.0)
            .collect();
        for kind in NormKind::ALL {
            let wn = if kind == NormKind::Layer {
                2 * cols
            } else {
                cols
            };
            let w = support::random_f32(wn, 2);
            let xt = gpu.upload_f32(&x, &[rows, cols], "x").unwrap();
            let wt = gpu.upload_f32(&w, &[wn], "w").unwrap();
            let y = gpu.zeros_f32(&[rows, cols], "y").unwrap();
            let call = ops::Norm {
                kind,
                x: &xt,
                w: &wt,
                y: &y,
                cols,
                eps: 1e-6,
            };
            run(&gpu, |rec| ops::norm(&gpu, rec, call).unwrap());
            let want = rowops::norm_reference(kind, &x, &w, cols, 1e-6);
            close(
                &gpu.readback_f32(&y).unwrap(),
                &want,
                1e-5,
                &format!("{kind:?} {rows}x{cols}"),
            );
            // Added to a residual: y = r + norm(x), in the same dispatch.
            let r = support::random_f32(rows * cols, 3);
            let rt = gpu.upload_f32(&r, &[rows, cols], "residual").unwrap();
            run(&gpu, |rec| ops::norm_add(&gpu, rec, call, &rt).unwrap());
            let added: Vec<f32> = want.iter().zip(&r).map(|(n, r)| n + r).collect();
            close(
                &gpu.readback_f32(&y).unwrap(),
                &added,
                1e-5,
                &format!("{kind:?} {rows}x{cols} added"),
            );
            // Refused: a residual of another size, and one in the output's buffer.
            let short = gpu
                .zeros_f32(&[rows * cols + 1], "longer residual")
                .unwrap();
            let mut rec = Recorder::new(&gpu);
            for bad in [&short, &y] {
                let err = ops::norm_add(&gpu, &mut rec, call, bad).unwrap_err();
                assert_eq!(err.code(), "BAD_REQUEST", "{kind:?} {rows}x{cols}");
            }
        }
    }
}

#[test]
fn elementwise_ops_match() {
    let Some(gpu) = support::gpu() else { return };
    for n in [1, 777, 5000] {
        let a: Vec<f32> = support::random_f32(n, 3).iter().map(|v| v * 8.0).collect();
        let b = support::random_f32(n, 4);
        let at = gpu.upload_f32(&a, &[n], "a").unwrap();
        let bt = gpu.upload_f32(&b, &[n], "b").unwrap();
        for op in ElementOp::ALL {
            let out = gpu.zeros_f32(&[n], "out").unwrap();
            run(&gpu, |rec| {
                let call = ops::Elementwise {
                    op,
                    a: &at,
                    b: &bt,
                    out: &out,
                    s: 0.125,
                };
                ops::elementwise(&gpu, rec, call).unwrap()
            });
            let want: Vec<f32> = a
                .iter()
                .zip(&b)
                .map(|(x, y)| op.apply(*x, *y, 0.125))
                .collect();
            close(
                &gpu.readback_f32(&out).unwrap(),
                &want,
                1e-5,
                &format!("{op:?} n={n}"),
            );
        }
    }
}

#[test]
fn rope_matches_in_both_layouts() {
    let Some(gpu) = support::gpu() else { return };
    let (tokens, heads, head_dim) = (3u32, 5u32, 64u32);
    let pos = [0u32, 17, 1023];
    for (neox, rot, base, pos_base) in [
        (false, 64, 10_000.0, 0),
        (true, 64, 1_000_000.0, 0),
        (true, 32, 10_000.0, 0),
        (false, 64, 100_000.0, 4000),
    ] {
        let p = RopeParams {
            tokens,
            heads,
            head_dim,
            rot_dims: rot,
            base,
            freq_scale: 1.0,
            grid_x: 0,
            pos_base,
        };
        let x = support::random_f32((tokens * heads * head_dim) as usize, 5);
        let xt = gpu.upload_f32(&x, &[x.len()], "x").unwrap();
        let pt = gpu
            .upload(bytemuck::cast_slice(&pos), Elem::U32, &[3], "pos")
            .unwrap();
        run(&gpu, |rec| ops::rope(&gpu, rec, &xt, &pt, p, neox).unwrap());
        let mut want = x.clone();
        rowops::rope_reference(&mut want, &pos, &p, neox);
        // f32 angles up to ~1000 rad: GPU sin/cos agree to ~1e-4 absolute.
        let got = gpu.readback_f32(&xt).unwrap();
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                (g - w).abs() <= 2e-3,
                "neox={neox} rot={rot}: element {i}: {g} vs {w}"
            );
        }
    }
}

#[test]
fn softmax_and_argmax_match() {
    let Some(gpu) = support::gpu() else { return };
    for (rows, cols, cap) in [(4, 1000, 0.0), (2, 49152, 0.0), (3, 7, 30.0), (1, 1, 0.0)] {
        let x: Vec<f32> = support::random_f32(rows * cols, 6)
            .iter()
            .map(|v| v * 20.0)
            .collect();
        let xt = gpu.upload_f32(&x, &[rows, cols], "x").unwrap();
        run(&gpu, |rec| {
            ops::softmax(&gpu, rec, &xt, cols, 0.5, cap).unwrap()
        });
        let want = rowops::softmax_reference(&x, cols, 0.5, cap);
        let got = gpu.readback_f32(&xt).unwrap();
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                (g - w).abs() <= 1e-5 + 1e-4 * w.abs(),
                "softmax {rows}x{cols}: {i}: {g} vs {w}"
            );
        }
    }
    for n in [1usize, 300, 262_144] {
        let mut x = support::random_f32(n, 9);
        // A tie at the maximum: the smaller index wins.
        if n > 10 {
            x[n / 3] = 5.0;
            x[n / 2] = 5.0;
        }
        let xt = gpu.upload_f32(&x, &[n], "x").unwrap();
        let part = gpu.upload(&[0; 2048], Elem::U32, &[512], "part").unwrap();
        let tokens = gpu.upload(&[0xFF; 16], Elem::U32, &[4], "tokens").unwrap();
        let out = gpu.upload(&[0xFF; 8], Elem::U32, &[2], "out").unwrap();
        run(&gpu, |rec| {
            let call = ops::Argmax {
                x: &xt,
                part: &part,
                tokens: &tokens,
                out_index: 2,
                out: &out,
            };
            ops::argmax(&gpu, rec, call).unwrap()
        });
        let got = u32::from_le_bytes(gpu.readback(&out).unwrap()[..4].try_into().unwrap());
        assert_eq!(Some(got), rowops::argmax_reference(&x), "argmax n={n}");
        let seq = gpu.readback(&tokens).unwrap();
        assert_eq!(u32::from_le_bytes(seq[8..12].try_into().unwrap()), got);
    }
}

/// Decode attention with the new token prepared in the kernel: its q, k, v read from one
/// buffer at offsets, QK-norm (when set) and RoPE (both layouts, partial rotation), the key
/// and value appended to the cache; against the CPU references composed step by step.
#[test]
fn decode_attention_matches() {
    let Some(gpu) = support::gpu() else { return };
    use gpuport_kernels::attention::{
        DecodeAttnParams, QkNorm, decode_reference, prepare_reference,
    };
    // (heads, kv_heads, head_dim, n_keys, max_ctx, window, cap, norm, neox, rot): MHA, GQA 4:1
    // with a sliding window and QK-norm, a single key, a soft cap, many key blocks, a window
    // starting mid-block, partial rotation.
    // Each over a cache of every element type.
    let cases = [
        (4, 4, 64, 37, 64, 0, 0.0, QkNorm::None, false, 64),
        (8, 2, 256, 300, 512, 128, 0.0, QkNorm::Rms, true, 256),
        (3, 1, 64, 1, 8, 0, 0.0, QkNorm::None, false, 64),
        (2, 1, 128, 77, 100, 0, 50.0, QkNorm::RmsPlusOne, true, 128),
        (4, 1, 256, 1000, 1024, 0, 0.0, QkNorm::Rms, true, 256),
        (2, 2, 64, 700, 800, 301, 0.0, QkNorm::None, false, 32),
        (9, 3, 64, 129, 200, 0, 0.0, QkNorm::None, true, 48),
    ];
    for (kv_type, case) in KV_TYPES.into_iter().flat_map(|t| cases.map(|c| (t, c))) {
        let (heads, kv_heads, head_dim, n_keys, max_ctx, window, cap, norm, neox, rot) = case;
        let (qn, kvn) = ((heads * head_dim) as usize, (kv_heads * head_dim) as usize);
        let lead = 5;
        let p = DecodeAttnParams {
            heads,
            kv_heads,
            head_dim,
            n_keys,
            max_ctx,
            window,
            scale: 1.0 / (head_dim as f32).sqrt(),
            cap,
            blocks: 0,
            q_src: lead,
            k_src: lead + qn as u32,
            v_src: lead + (qn + kvn) as u32,
            rot_dims: rot,
            rope_base: 10_000.0,
            freq_scale: 1.0,
            norm: norm.code(),
            eps: 1e-6,
            tokens: 1,
            qkv_stride: 0,
            page: 0,
            row_table: 0,
            rows_first: 0,
            split_keys: 0,
            group: 0,
        };
        let mut qkv: Vec<f32> = support::random_f32(lead as usize + qn + 2 * kvn, 1)
            .iter()
            .map(|x| x * 4.0)
            .collect();
        // The new value row starts with values an f16 cache must round exactly as
        // `half` does: ties (to even), subnormal halves and a subnormal tie, the largest
        // finite half and one that rounds to it, a value below the smallest subnormal.
        let v0 = p.v_src as usize;
        qkv[v0..v0 + F16_EDGES.len()].copy_from_slice(&F16_EDGES);
        let nw = support::random_f32(2 * head_dim as usize, 4);
        let cache = (max_ctx as usize) * kvn;
        let mut k = as_cached(&support::random_f32(cache, 2), kv_type);
        let mut v = as_cached(&support::random_f32(cache, 3), kv_type);
        let qkvt = gpu.upload_f32(&qkv, &[qkv.len()], "qkv").unwrap();
        let nwt = gpu.upload_f32(&nw, &[nw.len()], "qk norms").unwrap();
        let paged = PagedCache::new(max_ctx as usize, kvn);
        let kt = paged.upload(&gpu, &k, kv_type, "k");
        let vt = paged.upload(&gpu, &v, kv_type, "v");
        let pages = paged.table(&gpu);
        let st = gpu
            .zeros_f32(
                &[ops::attention_scratch(heads, head_dim, max_ctx)],
                "scratch",
            )
            .unwrap();
        let out = gpu.zeros_f32(&[qn], "out").unwrap();
        let weights = (norm != QkNorm::None).then_some(&nwt);
        let kv = ops::KvLayer {
            k: &kt,
            v: &vt,
            pages: &pages,
            page: PAGE as u32,
        };
        let call = ops::DecodeAttention {
            p,
            neox,
            qkv: &qkvt,
            part: &st,
            kv,
            qk_norm: weights,
        };
        run(&gpu, |rec| {
            ops::attention_decode(&gpu, rec, call, &out).unwrap()
        });
        let (q, k_row, v_row) = prepare_reference(&p, &qkv, &nw, neox);
        let at = (n_keys as usize - 1) * kvn;
        k[at..at + kvn].copy_from_slice(&as_cached(&k_row, kv_type));
        v[at..at + kvn].copy_from_slice(&as_cached(&v_row, kv_type));
        let what = format!("{p:?} neox {neox} {} cache", kv_type.name());
        // RoPE angles are f32 on the GPU (as in llama.cpp): ~1e-7 relative error times the
        // position, and a driver's sin/cos of a large angle adds its own (Vulkan bounds them
        // only on [-pi, pi]; NVIDIA's 580 driver: 1.9e-4 at position 999).
        let rope = 1e-4 + 4e-7 * n_keys as f32;
        let positions = max_ctx as usize;
        let got_k = paged.logical(&readback_cache(&gpu, &kt), positions);
        close(&got_k, &k, cache_bound(rope, kv_type), &what);
        let got_v = paged.logical(&readback_cache(&gpu, &vt), positions);
        close(&got_v, &v, cache_bound(0.0, kv_type), &what);
        // The values the kernel stored unchanged are stored exactly as rounded.
        assert_eq!(
            got_v[at..at + F16_EDGES.len()],
            v[at..at + F16_EDGES.len()],
            "{what}: the edge values"
        );
        // Against the keys and values the cache holds: the new token's enter its own scores
        // and sums as the cache holds them.
        let got = gpu.readback_f32(&out).unwrap();
        close(&got, &decode_reference(&p, &q, &got_k, &got_v), rope, &what);
        combined_blocks_equal_rounded_output(&gpu, &p, &st, &got, &what);
        // Refused: pools of two element types, pools of a type a cache does not hold, a page
        // that is not a multiple of 64, and a pool with fewer pages than the table has
        // entries.
        let other = if kv_type == GgmlType::F16 {
            GgmlType::F32
        } else {
            GgmlType::F16
        };
        let pool = paged.to_pool(&v);
        let mixed_v = upload_cache(&gpu, &pool, other, "v of the other type");
        let ints = gpu.zeros(Elem::U32, &[pool.len()], "u32 pools").unwrap();
        for (k, v) in [(&kt, &mixed_v), (&ints, &ints)] {
            let bad = ops::DecodeAttention {
                kv: ops::KvLayer { k, v, ..kv },
                ..call
            };
            let mut rec = Recorder::new(&gpu);
            let err = ops::attention_decode(&gpu, &mut rec, bad, &out).unwrap_err();
            assert_eq!(err.code(), "BAD_REQUEST", "{what}");
            assert!(
                err.to_string().contains("both f32 or both f16"),
                "{what}: {err}"
            );
        }
        let odd = ops::KvLayer { page: 32, ..kv };
        let mut rec = Recorder::new(&gpu);
        let err = ops::attention_decode(
            &gpu,
            &mut rec,
            ops::DecodeAttention { kv: odd, ..call },
            &out,
        );
        assert_eq!(err.unwrap_err().code(), "BAD_REQUEST", "{what}");
        if paged.table.len() > 1 {
            let one = gpu.zeros_f32(&[PAGE * kvn], "one page").unwrap();
            let short = ops::KvLayer {
                k: &one,
                v: &one,
                ..kv
            };
            let short = ops::DecodeAttention { kv: short, ..call };
            let err = ops::attention_decode(&gpu, &mut rec, short, &out);
            assert_eq!(err.unwrap_err().code(), "BAD_REQUEST", "{what}");
        }
    }
}

/// The combining pass again over the partials the split of a decode (`p`) left in `part`,
/// writing int8 blocks: their values are exactly
/// `q8_round` of the f32 output `out` (the many-row path's numbers), and each block's sum word
/// is its scale times its quants' sum.
fn combined_blocks_equal_rounded_output(
    gpu: &Gpu,
    p: &attention::DecodeAttnParams,
    part: &gpuport_runtime::Tensor,
    out: &[f32],
    what: &str,
) {
    // As `attention_split` returns them: the number of key blocks set.
    let p = attention::DecodeAttnParams {
        blocks: p
            .n_keys
            .div_ceil(ops::decode_keys_per_block(gpu, p.head_dim))
            .max(1),
        ..*p
    };
    let words = ops::Q8Blocks::words(out.len());
    let q = gpu.zeros_f32(&[words], "blocks").unwrap();
    run(gpu, |rec| {
        ops::attention_combine_blocks(gpu, rec, &p, part, &q).unwrap()
    });
    blocks_equal_rounded_output(gpu, &support::readback_words(gpu, &q), out, what);
}

/// Int8 blocks `got` (of output rows whose widths are multiples of 32, back to back) hold
/// exactly `q8_round` of the f32 output `out` (the many-row path's numbers), and each block's
/// sum word is its scale times its quants' sum.
fn blocks_equal_rounded_output(gpu: &Gpu, got: &[u32], out: &[f32], what: &str) {
    let rounded = gpu.upload_f32(out, &[out.len()], "output").unwrap();
    run(gpu, |rec| {
        let call = ops::Q8Round {
            x: &rounded,
            rows: 1,
            cols: out.len(),
        };
        ops::q8_round(gpu, rec, call).unwrap()
    });
    let want = support::readback_words(gpu, &rounded);
    let values: Vec<u32> = gpuport_kernels::gemv::dequantize_q8_input(got)
        .iter()
        .map(|v| v.to_bits())
        .collect();
    assert_eq!(values, want, "{what}: blocks vs q8_round");
    for block in got.chunks_exact(12) {
        let sum: i32 = block[..8]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .map(|b| i32::from(b as i8))
            .sum();
        let d = f32::from_bits(block[8]);
        assert_eq!(f32::from_bits(block[9]), d * sum as f32, "{what}: sum word");
        assert_eq!(block[10..], [0, 0], "{what}: spare words");
    }
}

/// Prefill attention of a batch: each token's q, k, v read from its row of the projections
/// (rows wider than q + k + v), prepared as in decode, keys and values written to the cache at
/// the batch's positions, and each token attending causally (sliding window, soft cap, GQA)
/// to the cache before the batch and the batch up to itself; against the CPU references (each
/// token a decode step at its position).
#[test]
fn prefill_attention_matches() {
    let Some(gpu) = support::gpu() else { return };
    use gpuport_kernels::attention::{
        DecodeAttnParams, QkNorm, prefill_reference, prepare_reference,
    };
    // (heads, kv_heads, head_dim, tokens, cached, max_ctx, window, cap, norm, neox, rot): a
    // batch from position 0; GQA 4:1 after cached keys with a window, QK-norm and NEOX; one
    // token; a soft cap with (1 + w) norms and partial rotation; Gemma 3's heads across a
    // window; then batches of several tiles of the tiled pass (`attn_tiles.wgsl`: 64, 32 and
    // 16 rows at head dims 64, 128 and 256), the last tile partial, the tiles' key ranges
    // starting inside a window, keys past the batch in the pages holding garbage. Where the
    // device has f16 cooperative matrices, the batches of `ops::coop_min_tokens()` rows or
    // more (at the default 32: the 37, 150, 70 and 72 rows at head dims 64, 64, 128 and 256)
    // run on tensor cores (`attn_coop.wgsl`) and the rest on the f32 tiles.
    for hd in [64, 128, 256] {
        assert!(
            ops::tile_keys(&gpu, hd).is_some(),
            "the tiled pass runs here at {hd}"
        );
    }
    // Each over a cache of every element type.
    let cases = [
        (4, 4, 64, 37, 0, 64, 0, 0.0, QkNorm::None, false, 64),
        (4, 2, 64, 150, 3, 200, 0, 0.0, QkNorm::None, false, 64),
        (8, 2, 128, 70, 40, 128, 48, 0.0, QkNorm::Rms, true, 128),
        (
            4,
            1,
            256,
            72,
            21,
            128,
            0,
            30.0,
            QkNorm::RmsPlusOne,
            true,
            256,
        ),
        (8, 2, 128, 20, 50, 100, 32, 0.0, QkNorm::Rms, true, 128),
        (3, 1, 64, 1, 9, 16, 0, 0.0, QkNorm::None, false, 64),
        (2, 1, 64, 33, 5, 40, 0, 30.0, QkNorm::RmsPlusOne, true, 48),
        (
            4,
            1,
            256,
            24,
            500,
            600,
            512,
            0.0,
            QkNorm::RmsPlusOne,
            true,
            256,
        ),
    ];
    for (kv_type, case) in KV_TYPES.into_iter().flat_map(|t| cases.map(|c| (t, c))) {
        let (heads, kv_heads, head_dim, tokens, cached, max_ctx, window, cap, norm, neox, rot) =
            case;
        let (qn, kvn) = ((heads * head_dim) as usize, (kv_heads * head_dim) as usize);
        let (lead, stride) = (3usize, qn + 2 * kvn + 5);
        let p = DecodeAttnParams {
            heads,
            kv_heads,
            head_dim,
            n_keys: cached + tokens,
            max_ctx,
            window,
            scale: 1.0 / (head_dim as f32).sqrt(),
            cap,
            blocks: 0,
            q_src: lead as u32,
            k_src: (lead + qn) as u32,
            v_src: (lead + qn + kvn) as u32,
            rot_dims: rot,
            rope_base: 10_000.0,
            freq_scale: 1.0,
            norm: norm.code(),
            eps: 1e-6,
            tokens,
            qkv_stride: stride as u32,
            page: 0,
            row_table: 0,
            rows_first: 0,
            split_keys: 0,
            group: 0,
        };
        let qkv: Vec<f32> = support::random_f32(tokens as usize * stride, 11)
            .iter()
            .map(|x| x * 4.0)
            .collect();
        let nw = support::random_f32(2 * head_dim as usize, 12);
        let cache = max_ctx as usize * kvn;
        let mut k = as_cached(&support::random_f32(cache, 13), kv_type);
        let mut v = as_cached(&support::random_f32(cache, 14), kv_type);
        let qkvt = gpu.upload_f32(&qkv, &[qkv.len()], "qkv").unwrap();
        let nwt = gpu.upload_f32(&nw, &[nw.len()], "qk norms").unwrap();
        let paged = PagedCache::new(max_ctx as usize, kvn);
        let kt = paged.upload(&gpu, &k, kv_type, "k");
        let vt = paged.upload(&gpu, &v, kv_type, "v");
        let pages = paged.table(&gpu);
        let qt = gpu.zeros_f32(&[tokens as usize * qn], "queries").unwrap();
        let out = gpu.zeros_f32(&[tokens as usize * qn], "out").unwrap();
        let weights = (norm != QkNorm::None).then_some(&nwt);
        let kv = ops::KvLayer {
            k: &kt,
            v: &vt,
            pages: &pages,
            page: PAGE as u32,
        };
        let call = ops::RowsAttention {
            p,
            neox,
            qkv: &qkvt,
            q: &qt,
            kv,
            rows: None,
            out: Some(&out),
            qk_norm: weights,
            part: None,
            out_blocks: None,
        };
        run(&gpu, |rec| {
            let formed = ops::attention_rows(&gpu, rec, call).unwrap();
            assert!(!formed, "no blocks asked for");
        });
        // Each token prepared as a decode step at its position.
        let mut q = Vec::new();
        for t in 0..tokens as usize {
            let step = DecodeAttnParams {
                n_keys: cached + t as u32 + 1,
                q_src: p.q_src + (t * stride) as u32,
                k_src: p.k_src + (t * stride) as u32,
                v_src: p.v_src + (t * stride) as u32,
                ..p
            };
            let (qt_row, k_row, v_row) = prepare_reference(&step, &qkv, &nw, neox);
            let at = (cached as usize + t) * kvn;
            k[at..at + kvn].copy_from_slice(&as_cached(&k_row, kv_type));
            v[at..at + kvn].copy_from_slice(&as_cached(&v_row, kv_type));
            q.extend(qt_row);
        }
        let what = format!("{p:?} neox {neox} {} cache", kv_type.name());
        // f32 RoPE angles (as in llama.cpp): ~1e-7 relative error times positions up to 524,
        // on normed heads of magnitude up to ~3.
        let positions = max_ctx as usize;
        let got_k = paged.logical(&readback_cache(&gpu, &kt), positions);
        close(&got_k, &k, cache_bound(5e-4, kv_type), &what);
        let got_v = paged.logical(&readback_cache(&gpu, &vt), positions);
        close(&got_v, &v, cache_bound(0.0, kv_type), &what);
        close(&gpu.readback_f32(&qt).unwrap(), &q, 5e-4, &what);
        // The causal pass against the keys and values the cache holds.
        let (k, v) = (got_k, got_v);
        // On tensor cores (`attn_coop.wgsl`) the queries, keys and values are f16: the
        // reference takes them rounded the same way, and the bound covers the f16 weights and
        // the sums' order.
        let (q, k, v, rel) = if ops::attention_on_coop(&gpu, head_dim, tokens as usize) {
            let half = |x: &[f32]| -> Vec<f32> {
                x.iter().map(|v| half::f16::from_f32(*v).to_f32()).collect()
            };
            (half(&q), half(&k), half(&v), 5e-3)
        } else {
            (q, k, v, 1e-4)
        };
        close(
            &gpu.readback_f32(&out).unwrap(),
            &prefill_reference(&p, &q, &k, &v),
            rel,
            &what,
        );
    }
}

/// The causal pass over a row table (batched decode: rows of several sequences, each at its
/// own position, in one pool whose sequences' pages interleave), with each row's keys in one
/// workgroup and split across workgroups (`attention::row_splits`, partials combined per row and
/// head): every row equals the CPU's decode attention of its sequence up to its position; GQA,
/// a sliding window, QK-norm, two rows of one sequence at neighbouring positions, splits that
/// start past a row's position, and a scratch that holds fewer splits than wanted.
#[test]
fn row_table_attention_splits_match_the_cpu() {
    use gpuport_kernels::attention::{
        DecodeAttnParams, QkNorm, decode_reference, prepare_reference,
    };
    let Some(gpu) = support::gpu() else { return };
    let seqs = 3usize;
    let cap = 256usize;
    let per_seq = cap / PAGE;
    // (heads, kv_heads, head_dim, window, norm, row positions (row t belongs to sequence
    // t % 3), splits the scratch holds: 0 = no scratch).
    type Case<'a> = (u32, u32, u32, u32, QkNorm, &'a [usize], usize);
    let cases: [Case<'_>; 8] = [
        (4, 2, 64, 0, QkNorm::None, &[0, 70, 130, 5, 199, 64, 255], 0),
        // Gemma 3 270M's group (four heads of 256 on one KV head: two outputs a thread), and
        // sixteen heads of 256 on one KV head (two workgroups of eight a row, four outputs a
        // thread).
        (4, 1, 256, 96, QkNorm::RmsPlusOne, &[200, 31, 140], 16),
        (16, 1, 256, 0, QkNorm::None, &[5, 130, 77, 255], 0),
        (
            4,
            2,
            64,
            0,
            QkNorm::None,
            &[0, 70, 130, 5, 199, 64, 255],
            16,
        ),
        (8, 2, 128, 48, QkNorm::Rms, &[100, 3, 250, 101, 17], 16),
        (2, 1, 64, 0, QkNorm::None, &[63, 64, 200], 3),
        (4, 4, 64, 0, QkNorm::None, &[1, 2, 3, 150], 2),
        // Groups of three heads (SmolLM2's), soft-capped scores (Gemma 2's 50).
        (6, 2, 64, 0, QkNorm::None, &[9, 180, 77], 4),
    ];
    let (mut on_subgroups_runs, mut split_runs) = (0, 0);
    for (kv_type, case) in KV_TYPES.into_iter().flat_map(|t| cases.map(|c| (t, c))) {
        let (heads, kv_heads, head_dim, window, norm, positions, splits) = case;
        let tokens = positions.len();
        let (qn, kvn) = ((heads * head_dim) as usize, (kv_heads * head_dim) as usize);
        let stride = qn + 2 * kvn;
        let p = DecodeAttnParams {
            heads,
            kv_heads,
            head_dim,
            n_keys: cap as u32,
            max_ctx: cap as u32,
            window,
            scale: 1.0 / (head_dim as f32).sqrt(),
            cap: if heads == 6 { 50.0 } else { 0.0 },
            blocks: 0,
            q_src: 0,
            k_src: qn as u32,
            v_src: (qn + kvn) as u32,
            rot_dims: head_dim,
            rope_base: 10_000.0,
            freq_scale: 1.0,
            norm: norm.code(),
            eps: 1e-6,
            tokens: tokens as u32,
            qkv_stride: stride as u32,
            page: 0,
            row_table: 0,
            rows_first: 0,
            split_keys: 0,
            group: 0,
        };
        // Sequence i's logical page j is pool page j * seqs + (seqs - 1 - i): interleaved.
        let table: Vec<u32> = (0..seqs)
            .flat_map(|i| (0..per_seq).map(move |j| (j * seqs + seqs - 1 - i) as u32))
            .collect();
        let mut k: Vec<Vec<f32>> = (0..seqs)
            .map(|i| as_cached(&support::random_f32(cap * kvn, 20 + i as u64), kv_type))
            .collect();
        let mut v: Vec<Vec<f32>> = (0..seqs)
            .map(|i| as_cached(&support::random_f32(cap * kvn, 30 + i as u64), kv_type))
            .collect();
        let to_pool = |logical: &[Vec<f32>]| {
            let mut pool = vec![0.0f32; seqs * cap * kvn];
            for (i, seq) in logical.iter().enumerate() {
                let own = &table[i * per_seq..(i + 1) * per_seq];
                for (j, r) in seq.chunks(kvn).enumerate() {
                    let at = attention::cache_row(own, PAGE, j) * kvn;
                    pool[at..at + kvn].copy_from_slice(r);
                }
            }
            pool
        };
        let from_pool = |pool: &[f32]| -> Vec<Vec<f32>> {
            (0..seqs)
                .map(|i| {
                    let own = &table[i * per_seq..(i + 1) * per_seq];
                    (0..cap)
                        .flat_map(|j| {
                            let at = attention::cache_row(own, PAGE, j) * kvn;
                            pool[at..at + kvn].to_vec()
                        })
                        .collect()
                })
                .collect()
        };
        let (kp, vp) = (to_pool(&k), to_pool(&v));
        let kt = upload_cache(&gpu, &kp, kv_type, "k");
        let vt = upload_cache(&gpu, &vp, kv_type, "v");
        let pages = upload_u32(&gpu, &table, "pages");
        // The row table: (position, page-table base, token index, 0), after one unused row.
        let mut rows = vec![0u32; 4];
        for (t, &pos) in positions.iter().enumerate() {
            rows.extend([pos as u32, ((t % seqs) * per_seq) as u32, t as u32, 0]);
        }
        let rt = upload_u32(&gpu, &rows, "rows");
        let qkv: Vec<f32> = support::random_f32(tokens * stride, 41)
            .iter()
            .map(|x| x * 4.0)
            .collect();
        let nw = support::random_f32(2 * head_dim as usize, 42);
        let qkvt = gpu.upload_f32(&qkv, &[qkv.len()], "qkv").unwrap();
        let nwt = gpu.upload_f32(&nw, &[nw.len()], "qk norms").unwrap();
        let qt = gpu.zeros_f32(&[tokens * qn], "queries").unwrap();
        let out = gpu.zeros_f32(&[tokens * qn], "out").unwrap();
        let part_len = splits * tokens * heads as usize * attention::part_stride(head_dim);
        let part = gpu.zeros_f32(&[part_len.max(1)], "partials").unwrap();
        let keys = positions.iter().max().unwrap() + 1;
        let call = ops::RowsAttention {
            p,
            neox: true,
            qkv: &qkvt,
            q: &qt,
            kv: ops::KvLayer {
                k: &kt,
                v: &vt,
                pages: &pages,
                page: PAGE as u32,
            },
            rows: Some(ops::RowTable {
                table: &rt,
                first: 1,
                keys: keys as u32,
            }),
            out: Some(&out),
            qk_norm: (norm != QkNorm::None).then_some(&nwt),
            part: (splits > 0).then_some(&part),
            out_blocks: None,
        };
        let mut split = false;
        run(&gpu, |rec| {
            let formed = ops::attention_rows_on(&gpu, rec, call, ops::RowsPass::Blocks).unwrap();
            assert!(!formed, "no blocks asked for");
        });
        // The same rows with the output asked for as int8 blocks (an int8-input output
        // projection's): where the keys split, the combining pass writes the blocks instead,
        // exactly the f32 rows rounded onto the int8 grid (compared below).
        let blocks = gpu
            .zeros_f32(&[tokens * ops::Q8Blocks::words(qn)], "blocks")
            .unwrap();
        run(&gpu, |rec| {
            let call = ops::RowsAttention {
                out_blocks: Some(&blocks),
                ..call
            };
            split = ops::attention_rows_on(&gpu, rec, call, ops::RowsPass::Blocks).unwrap();
        });
        assert!(!split || splits > 0, "blocks without partials");
        // The same rows on subgroups, where the adapter's hold the heads (lavapipe's 8 lanes:
        // head dims up to 128), into their own output (the preparation writes the same cache
        // rows again).
        let on_subgroups = ops::rows_sg_fits(&gpu, &p).map(|_| {
            let out = gpu.zeros_f32(&[tokens * qn], "out on subgroups").unwrap();
            let call = ops::RowsAttention {
                out: Some(&out),
                ..call
            };
            run(&gpu, |rec| {
                let formed =
                    ops::attention_rows_on(&gpu, rec, call, ops::RowsPass::Subgroups).unwrap();
                assert!(!formed, "no blocks asked for");
            });
            gpu.readback_f32(&out).unwrap()
        });
        // Every row prepared at its position into its sequence, then each row's attention.
        let mut q = Vec::new();
        for (t, &pos) in positions.iter().enumerate() {
            let step = DecodeAttnParams {
                n_keys: pos as u32 + 1,
                q_src: (t * stride) as u32,
                k_src: (t * stride + qn) as u32,
                v_src: (t * stride + qn + kvn) as u32,
                ..p
            };
            let (q_row, k_row, v_row) = prepare_reference(&step, &qkv, &nw, true);
            let s = t % seqs;
            k[s][pos * kvn..(pos + 1) * kvn].copy_from_slice(&as_cached(&k_row, kv_type));
            v[s][pos * kvn..(pos + 1) * kvn].copy_from_slice(&as_cached(&v_row, kv_type));
            q.push(q_row);
        }
        // The caches as the preparation left them, then the rows against what they hold.
        let what = format!(
            "{p:?} positions {positions:?} splits {splits} {} cache",
            kv_type.name()
        );
        let (got_k, got_v) = (
            from_pool(&readback_cache(&gpu, &kt)),
            from_pool(&readback_cache(&gpu, &vt)),
        );
        for s in 0..seqs {
            close(&got_k[s], &k[s], cache_bound(5e-4, kv_type), &what);
            close(&got_v[s], &v[s], cache_bound(0.0, kv_type), &what);
        }
        let (k, v) = (got_k, got_v);
        let want: Vec<f32> = positions
            .iter()
            .enumerate()
            .flat_map(|(t, &pos)| {
                let step = DecodeAttnParams {
                    n_keys: pos as u32 + 1,
                    tokens: 1,
                    ..p
                };
                decode_reference(&step, &q[t], &k[t % seqs], &v[t % seqs])
            })
            .collect();
        let got = gpu.readback_f32(&out).unwrap();
        close(&got, &want, 1e-4, &what);
        if split {
            let words = support::readback_words(&gpu, &blocks);
            blocks_equal_rounded_output(&gpu, &words, &got, &format!("{what} as blocks"));
            split_runs += 1;
        }
        if let Some(got) = on_subgroups {
            close(&got, &want, 1e-4, &format!("{what} on subgroups"));
            on_subgroups_runs += 1;
        }
    }
    // The cases with scratch split rows' keys (all twelve on lavapipe; the split counts
    // follow the adapter), so the blocks form was checked.
    assert!(split_runs > 0, "no run split its rows' keys");
    // Lavapipe's 8-lane subgroups take 12 runs (head dims up to 128), 32-lane ones all 16.
    let want_runs = match gpu.subgroup_min_width() {
        w if w >= 32 => 16,
        w if w >= 8 => 12,
        _ => 0,
    };
    assert!(
        on_subgroups_runs >= want_runs || !gpu.has_subgroups(),
        "{on_subgroups_runs} runs on subgroups of {} lanes",
        gpu.subgroup_min_width()
    );
    // The subgroup pass's shape: columns a lane from the narrowest subgroup, heads the largest
    // divisor of the group up to 4 whose partials fit.
    assert_eq!(attention::rows_sg_shape(32, 8, 128, 32), Some((4, 1)));
    assert_eq!(attention::rows_sg_shape(9, 3, 64, 32), Some((3, 1)));
    assert_eq!(attention::rows_sg_shape(4, 1, 256, 32), Some((2, 2)));
    assert_eq!(attention::rows_sg_shape(14, 2, 64, 32), Some((1, 1)));
    assert_eq!(attention::rows_sg_shape(8, 2, 128, 8), Some((1, 4)));
    assert_eq!(attention::rows_sg_shape(4, 2, 64, 8), Some((2, 2)));
    assert_eq!(attention::rows_sg_shape(4, 1, 256, 8), None);
    assert_eq!(attention::rows_sg_shape(4, 0, 64, 32), None);
    // The split policy: about `ROW_SPLIT_WORKGROUPS` workgroups, whole blocks, the scratch's
    // limit, none for one split.
    let target = attention::ROW_SPLIT_WORKGROUPS;
    assert_eq!(
        attention::row_splits(32, 8, 200, 16, 16, 4096),
        Some((13, 16))
    );
    assert_eq!(
        attention::row_splits(32, 64, 200, 16, 16, 4096),
        Some((2, 112))
    );
    assert_eq!(
        attention::row_splits(8, 64, 192, 32, 16, 1024),
        Some((2, 96))
    );
    // The Llama-8B shape's eight KV heads: split at 8 rows, one workgroup a (head, row) at
    // batched decode's 32 and 64.
    assert_eq!(
        attention::row_splits(8, 8, 192, 32, 16, target),
        Some((3, 64))
    );
    assert_eq!(attention::row_splits(8, 32, 256, 32, 16, target), None);
    assert_eq!(attention::row_splits(8, 64, 256, 32, 16, target), None);
    assert_eq!(
        attention::row_splits(3, 8, 192, 32, 16, target),
        Some((6, 32))
    );
    assert_eq!(
        attention::row_splits(4, 2, 1000, 32, 3, target),
        Some((3, 352))
    );
    assert_eq!(attention::row_splits(32, 200, 200, 16, 16, target), None);
    assert_eq!(attention::row_splits(4, 2, 10, 32, 16, target), None);
    // The group a workgroup takes: all of a GQA group, or its largest divisor that fits.
    assert_eq!(attention::row_group(32, 8, 128, 32), Some(4));
    assert_eq!(attention::row_group(9, 3, 64, 32), Some(3));
    assert_eq!(attention::row_group(16, 1, 256, 16), Some(8));
    assert_eq!(attention::row_group(14, 2, 256, 16), Some(7));
    assert_eq!(attention::row_group(12, 1, 512, 8), Some(4));
    assert_eq!(attention::row_group(32, 1, 64, 32), Some(16));
    assert_eq!(attention::row_group(64, 1, 16, 32), Some(16));
    assert_eq!(attention::row_group(4, 4, 4096, 4), None);
    assert_eq!(attention::row_group(4, 0, 64, 32), None);
    // Its keys per block: as many as 4096 values and the workgroup's memory allow.
    assert_eq!(attention::row_keys(128, 48 << 10), Some(32));
    assert_eq!(attention::row_keys(256, 48 << 10), Some(16));
    assert_eq!(attention::row_keys(128, 16 << 10), Some(8));
    assert_eq!(attention::row_keys(4096, 1 << 20), None);
    // A row table's: as many as 2048 values allow, at most 16.
    assert_eq!(attention::row_table_keys(64, 48 << 10), Some(16));
    assert_eq!(attention::row_table_keys(128, 48 << 10), Some(16));
    assert_eq!(attention::row_table_keys(256, 48 << 10), Some(8));
    assert_eq!(attention::row_table_keys(128, 16 << 10), Some(8));
    assert_eq!(attention::row_table_keys(4096, 1 << 20), None);
}

/// The many-row argmax: each of a batch's sampled rows (named through a row table and a list
/// of picks, in another order than the logits' rows) gets the CPU's argmax (ties to the smallest
/// index) written after its own token; every other token untouched. Bad shapes are refused.
#[test]
fn argmax_rows_write_each_rows_token() {
    let Some(gpu) = support::gpu() else { return };
    let (rows, vocab, stride) = (5usize, 3001usize, 3008usize);
    let mut x = support::random_f32(rows * stride, 7);
    // A tie in row 2: the smaller index wins.
    x[2 * stride + 17] = 9.0;
    x[2 * stride + 2900] = 9.0;
    // The row table: an unused row, then 6 rows (position, base, token index, 0); the sampled
    // rows' list names table rows 4, 0, 5, 2, 1 (logits row i belongs to picks[i]).
    let token_of = [100u32, 220, 7, 351, 402, 515];
    let mut table = vec![0u32; 4];
    for (r, t) in token_of.iter().enumerate() {
        table.extend([r as u32, 0, *t, 0]);
    }
    let picks_at = table.len();
    let picks = [4u32, 0, 5, 2, 1];
    table.extend(picks);
    let sentinel = 0xDEAD_BEEFu32;
    let tokens = vec![sentinel; 600];
    let xt = gpu.upload_f32(&x, &[x.len()], "logits").unwrap();
    let tt = upload_u32(&gpu, &table, "table");
    let tok = upload_u32(&gpu, &tokens, "tokens");
    let groups = rowops::ARGMAX_GROUPS as usize;
    let part = upload_u32(&gpu, &vec![0; 2 * groups * rows], "part");
    let call = ops::ArgmaxRows {
        x: &xt,
        vocab,
        x_stride: stride,
        rows,
        part: &part,
        tokens: &tok,
        table: &tt,
        rows_first: 1,
        picks: picks_at,
    };
    run(&gpu, |rec| ops::argmax_rows(&gpu, rec, call).unwrap());
    let got: Vec<u32> = bytemuck::cast_slice(&gpu.readback(&tok).unwrap()).to_vec();
    let mut want = tokens.clone();
    for (i, pick) in picks.iter().enumerate() {
        let row = &x[i * stride..i * stride + vocab];
        want[token_of[*pick as usize] as usize + 1] = rowops::argmax_reference(row).unwrap();
    }
    assert_eq!(want[token_of[5] as usize + 1], 17, "the tie");
    assert_eq!(got, want);
    // Too few partials, a stride shorter than a row.
    for (part_rows, x_stride) in [(rows - 1, stride), (rows, vocab - 1)] {
        let small = upload_u32(&gpu, &vec![0; 2 * groups * part_rows], "p");
        let bad = ops::ArgmaxRows {
            part: &small,
            x_stride,
            ..call
        };
        let mut rec = Recorder::new(&gpu);
        assert!(ops::argmax_rows(&gpu, &mut rec, bad).is_err());
    }
}
