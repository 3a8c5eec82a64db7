//! GPU kernels against the CPU references on the adapter at hand (lavapipe in CI): dequantization
//! bit for bit, GEMV within a tolerance relative to the magnitude of its terms, for every weight
//! type and every tunable combination the adapter supports, on odd shapes.

#![allow(clippy::unwrap_used)]

use gpuport_testing as support;

use gpuport_kernels::Reduction;
use gpuport_kernels::gemv::{self, GemvTunables};
use gpuport_kernels::quant::{GgmlType, dequantize, random_blocks};
use gpuport_runtime::{Elem, Recorder, ops};

#[test]
fn dequantization_is_bit_exact() {
    let Some(gpu) = support::gpu() else { return };
    for ty in GgmlType::ALL {
        let blocks = if ty.block_elems() == 1 { 1000 } else { 37 };
        let raw = random_blocks(ty, blocks, 7 + ty.ggml_id() as u64);
        let elems = blocks * ty.block_elems();
        let w = gpu.upload(&raw, Elem::Ggml(ty), &[elems], "w").unwrap();
        let out = gpu.zeros_f32(&[elems], "out").unwrap();
        let mut rec = Recorder::new(&gpu);
        ops::dequantize(&gpu, &mut rec, &w, &out, 64).unwrap();
        rec.submit().unwrap();
        let got = gpu.readback_f32(&out).unwrap();
        let want = dequantize(ty, &raw);
        let diff = got
            .iter()
            .zip(&want)
            .position(|(g, w)| g.to_bits() != w.to_bits());
        assert!(
            diff.is_none(),
            "{}: element {} GPU {} CPU {}",
            ty.name(),
            diff.unwrap(),
            got[diff.unwrap()],
            want[diff.unwrap()]
        );
    }
}

fn check_gemv(
    gpu: &gpuport_runtime::Gpu,
    ty: GgmlType,
    rows: usize,
    cols: usize,
    tunables: &[GemvTunables],
) {
    let row_bytes = ty.row_bytes(cols).unwrap();
    let raw = random_blocks(
        ty,
        rows * row_bytes / ty.block_bytes(),
        rows as u64 * 31 + cols as u64,
    );
    let x = support::random_f32(cols, 99);
    let want = gemv::reference(ty, &raw, rows, cols, &x);
    let dq = dequantize(ty, &raw);
    let w = gpu
        .upload(&raw, Elem::Ggml(ty), &[rows, cols], "w")
        .unwrap();
    let xt = gpu.upload_f32(&x, &[cols], "x").unwrap();
    let res = support::random_f32(rows, 7);
    let rt = gpu.upload_f32(&res, &[rows], "residual").unwrap();
    for (i, &t) in tunables.iter().enumerate() {
        let y = gpu.zeros_f32(&[rows], "y").unwrap();
        let mut rec = Recorder::new(gpu);
        // Every other variant runs with the fused residual add.
        let with_residual = i % 2 == 1;
        if with_residual {
            ops::gemv_residual(gpu, &mut rec, [&w, &xt, &rt, &y], t).unwrap();
        } else {
            ops::gemv(gpu, &mut rec, &w, &xt, &y, t).unwrap();
        }
        rec.submit().unwrap();
        let mut got = gpu.readback_f32(&y).unwrap();
        if with_residual {
            got.iter_mut().zip(&res).for_each(|(g, r)| *g -= r);
        }
        for r in 0..rows {
            let magnitude: f32 = dq[r * cols..(r + 1) * cols]
                .iter()
                .zip(&x)
                .map(|(a, b)| (a * b).abs())
                .sum();
            let tol = 2e-6 * magnitude + 1e-6 + if with_residual { 2e-7 } else { 0.0 };
            assert!(
                (got[r] - want[r]).abs() <= tol,
                "{} {rows}x{cols} {t:?}: row {r}: GPU {} CPU {} (tolerance {tol})",
                ty.name(),
                got[r],
                want[r]
            );
        }
    }
}

#[test]
fn gemv_matches_cpu_for_every_type_and_its_tunables() {
    let Some(gpu) = support::gpu() else { return };
    let subgroups = support::has_subgroups(&gpu);
    let tunables: Vec<GemvTunables> = GemvTunables::all()
        .into_iter()
        .filter(|t| subgroups || t.reduction == Reduction::Shared)
        .filter(|t| t.wg <= gpu.limits().max_compute_invocations_per_workgroup)
        .collect();
    // Steps per iteration other than 1 at two configurations (loops with whole unrolled groups
    // and a remainder, or only a remainder); the grids below at 1.
    let unrolled = |t: &GemvTunables| matches!((t.wg, t.rows, t.rpt), (128, 8, 2) | (32, 4, 4));
    let tunables: Vec<GemvTunables> = tunables
        .into_iter()
        .filter(|t| t.unroll == 1 || unrolled(t))
        .collect();
    // Every (ROWS, RPT) at 32 and 256 threads on one small-block type (shared reduction) and one
    // K-quant type (subgroup reduction); for the others a set spanning 1 to 256 lanes per row
    // group with both reductions. (Pipeline compilation on a software adapter dominates the
    // time; naga validates every variant in the kernels crate.)
    let spanning: Vec<GemvTunables> = tunables
        .iter()
        .copied()
        .filter(|t| {
            matches!(
                (t.wg, t.rows, t.rpt),
                (32, 32, 1)
                    | (64, 64, 4)
                    | (64, 64, 8)
                    | (128, 8, 2)
                    | (256, 4, 1)
                    | (256, 1, 1)
                    | (32, 4, 4)
            )
        })
        .collect();
    for ty in GgmlType::ALL {
        // Half of the (ROWS, RPT) grid each, at the smallest and largest workgroup.
        let only = |r: Reduction, wg: u32| {
            tunables
                .iter()
                .copied()
                .filter(|t| t.reduction == r && t.wg == wg)
                .collect::<Vec<_>>()
        };
        let set = match ty {
            GgmlType::Q8_0 => [only(Reduction::Shared, 32), only(Reduction::Shared, 256)].concat(),
            GgmlType::Q4K if subgroups => [
                only(Reduction::Subgroup, 32),
                only(Reduction::Subgroup, 256),
            ]
            .concat(),
            _ => spanning.clone(),
        };
        // 37 rows: not a multiple of any rows-per-workgroup; 768 columns: 3 K-blocks, 24 small blocks.
        check_gemv(&gpu, ty, 37, 768, &set);
    }
}

#[test]
fn gemv_odd_shapes_and_empty_edges() {
    let Some(gpu) = support::gpu() else { return };
    let t = GemvTunables::default_for(gpu.has_subgroups());
    // 3 blocks per row: Q4_0/Q5_0/Q8_0 rows start on 2-byte (not 4-byte) boundaries.
    for ty in [
        GgmlType::Q4_0,
        GgmlType::Q5_0,
        GgmlType::Q8_0,
        GgmlType::Q4_1,
        GgmlType::F16,
        GgmlType::F32,
    ] {
        check_gemv(&gpu, ty, 5, 96, &[t]);
        check_gemv(&gpu, ty, 1, 32, &[t]);
    }
    // One row of one K-block, and many rows (more workgroups than one row of the grid).
    check_gemv(&gpu, GgmlType::Q6K, 1, 256, &[t]);
    check_gemv(
        &gpu,
        GgmlType::Q4K,
        3000,
        256,
        &[GemvTunables {
            wg: 32,
            rows: 1,
            rpt: 1,
            reduction: t.reduction,
            unroll: 4,
        }],
    );
    // Zero rows: nothing to write, no error.
    let w = gpu
        .upload(&[], Elem::Ggml(GgmlType::Q8_0), &[0, 64], "w")
        .unwrap();
    let x = gpu.upload_f32(&[0.0; 64], &[64], "x").unwrap();
    let y = gpu.zeros_f32(&[0], "y").unwrap();
    let mut rec = Recorder::new(&gpu);
    ops::gemv(&gpu, &mut rec, &w, &x, &y, t).unwrap();
    rec.submit().unwrap();
    assert!(gpu.readback_f32(&y).unwrap().is_empty());
    // Shape errors are typed.
    let bad = gpu.upload_f32(&[0.0; 10], &[10], "x").unwrap();
    let w = gpu
        .upload(
            &random_blocks(GgmlType::Q8_0, 2, 1),
            Elem::Ggml(GgmlType::Q8_0),
            &[1, 64],
            "w",
        )
        .unwrap();
    let y = gpu.zeros_f32(&[1], "y").unwrap();
    let err = ops::gemv(&gpu, &mut Recorder::new(&gpu), &w, &bad, &y, t).unwrap_err();
    assert_eq!(err.code(), "BAD_REQUEST");
}

#[test]
fn embedding_rows_are_bit_exact() {
    let Some(gpu) = support::gpu() else { return };
    for ty in GgmlType::ALL {
        let (rows, cols) = (50, 512);
        let raw = random_blocks(ty, rows * cols / ty.block_elems(), 21);
        // The first id is skipped by the offset; the rest span the table, a repeat, and an id
        // past the end.
        let ids = [3u32, 0, 49, 7, 7, 1000, 31];
        let w = gpu
            .upload(&raw, Elem::Ggml(ty), &[rows, cols], "table")
            .unwrap();
        let it = gpu
            .upload(bytemuck::cast_slice(&ids), Elem::U32, &[ids.len()], "ids")
            .unwrap();
        let out = gpu.zeros_f32(&[ids.len() - 1, cols], "out").unwrap();
        let row_bytes = ty.row_bytes(cols).unwrap() as u64;
        // Whole table in one binding, then bound in chunks of a few rows.
        for max_binding in [u64::MAX, row_bytes * 12] {
            let mut rec = Recorder::new(&gpu);
            let call = ops::Embed {
                table: &w,
                ids: &it,
                id_offset: 1,
                out: &out,
                scale: 24.0,
            };
            ops::embed_chunked(&gpu, &mut rec, call, max_binding).unwrap();
            rec.submit().unwrap();
        }
        let got = gpu.readback_f32(&out).unwrap();
        let want = gpuport_kernels::dequant::embed_reference(ty, &raw, cols, &ids[1..], 24.0);
        let diff = got
            .iter()
            .zip(&want)
            .position(|(g, w)| g.to_bits() != w.to_bits());
        assert!(
            diff.is_none(),
            "{}: element {:?}",
            ty.name(),
            diff.map(|i| (got[i], want[i]))
        );
    }
}

/// The fused input forms (RMSNorm of x, SwiGLU/GeGLU of x's halves, the folded post-norm, the
/// attention combine) against the CPU: the reference forms the input vector in f64, then takes
/// the GEMV of it. Outputs go to an offset of a larger buffer with a residual, the way the LLM
/// executor stacks projections. At 256 columns GeGLU and the combine stage the input vector
/// in workgroup memory; at 2304 (past `STAGED_MAX_COLS`) GeGLU forms it per step; the
/// combine also over up to 128 key blocks per head.
#[test]
fn gemv_input_forms_match_cpu() {
    let Some(gpu) = support::gpu() else { return };
    check_input_forms(&gpu, 256, &gemv::GemvInput::ALL);
    check_input_forms(&gpu, 2304, &[gemv::GemvInput::GeGlu]);
    // The combine over many key blocks (a decode step hundreds of keys deep), as far as
    // workgroup memory goes: 4 heads × 40 blocks, 1 head × 128.
    let many = [(64, 40), (256, 128)].map(|(head_dim, blocks)| {
        gemv::GemvInput::attention_combine(256 / head_dim, head_dim, blocks)
            .expect("fits the kernel")
    });
    check_input_forms(&gpu, 256, &many);
}

fn check_input_forms(gpu: &gpuport_runtime::Gpu, cols: usize, inputs: &[gemv::GemvInput]) {
    let subgroups = support::has_subgroups(gpu);
    let (rows, y_first) = (45, 7);
    for ty in [
        GgmlType::F32,
        GgmlType::Q4_1,
        GgmlType::Q8_0,
        GgmlType::Q4K,
        GgmlType::Q6K,
    ] {
        let row_bytes = ty.row_bytes(cols).unwrap();
        let raw = random_blocks(
            ty,
            rows * row_bytes / ty.block_bytes(),
            5 + ty.ggml_id() as u64,
        );
        let w = gpu
            .upload(&raw, Elem::Ggml(ty), &[rows, cols], "w")
            .unwrap();
        let dq = dequantize(ty, &raw);
        for &input in inputs {
            let x = input_binding(input, cols, 3, 4.0);
            let norm_w = support::random_f32(input.norm_weights(cols).unwrap_or(cols), 4);
            let stream = support::random_f32(cols, 8);
            let res = support::random_f32(y_first + rows, 6);
            let xt = gpu.upload_f32(&x, &[x.len()], "x").unwrap();
            let nt = gpu.upload_f32(&norm_w, &[norm_w.len()], "norm").unwrap();
            let st = gpu.upload_f32(&stream, &[cols], "residual stream").unwrap();
            let rt = gpu.upload_f32(&res, &[res.len()], "residual").unwrap();
            let x_out = gpu.zeros_f32(&[cols], "new residual row").unwrap();
            let y = gpu.zeros_f32(&[y_first + rows], "y").unwrap();
            let folded = input.is_folded();
            let call = ops::GemvCall {
                y_first,
                // A folded form binds the stream where the output residual would go.
                residual: (!folded).then_some(&rt),
                input,
                norm: input.norm_weights(cols).map(|_| (&nt, 1e-5)),
                fold: folded.then_some((&st, Some(&x_out))),
                ..ops::GemvCall::new(&w, &xt, &y)
            };
            let mut rec = Recorder::new(gpu);
            for sg in [false, true].into_iter().filter(|sg| !sg || subgroups) {
                let t = GemvTunables::default_for(sg).fit_rows(rows, 8);
                ops::gemv_call(gpu, &mut rec, call, t).unwrap();
                rec.submit().unwrap();
                let got = gpu.readback_f32(&y).unwrap();
                let reference = input.reference(&x, &stream, &norm_w, 1e-5, cols);
                let xin = &reference[..cols];
                if folded {
                    let row = gpu.readback_f32(&x_out).unwrap();
                    for (i, (g, w)) in row.iter().zip(&reference[cols..]).enumerate() {
                        assert!(
                            (g - w).abs() <= 1e-5 * w.abs().max(1.0),
                            "{input:?} x1[{i}]: {g} vs {w}"
                        );
                    }
                }
                let want = gemv::reference(ty, &raw, rows, cols, xin);
                assert!(
                    got[..y_first].iter().all(|v| *v == 0.0),
                    "{input:?}: wrote before y_first"
                );
                for r in 0..rows {
                    let magnitude: f32 = dq[r * cols..(r + 1) * cols]
                        .iter()
                        .zip(xin)
                        .map(|(a, b)| (a * b).abs())
                        .sum();
                    let tol = 1e-5 * magnitude + 1e-5;
                    let added = if folded { 0.0 } else { res[y_first + r] };
                    let g = got[y_first + r] - added;
                    assert!(
                        (g - want[r]).abs() <= tol,
                        "{} {input:?} {t:?}: row {r}: GPU {g} CPU {} (tolerance {tol})",
                        ty.name(),
                        want[r]
                    );
                }
                rec = Recorder::new(gpu);
            }
        }
    }
}

/// Random contents of the `x` binding of a GEMV with input form `input` (values in ±`scale`);
/// for the attention combine, partials as the first pass writes them: positive exp-sums, and
/// head 0's last block empty (m = -3e38, l = 0, o = 0: a block past the window).
fn input_binding(input: gemv::GemvInput, cols: usize, seed: u64, scale: f32) -> Vec<f32> {
    let mut x: Vec<f32> = support::random_f32(input.x_len(cols), seed)
        .iter()
        .map(|v| scale * v)
        .collect();
    if let gemv::GemvInput::AttnCombine { head_dim, blocks } = input {
        let (hd, stride) = (
            head_dim as usize,
            gpuport_kernels::attention::part_stride(head_dim),
        );
        for block in x.chunks_mut(stride) {
            block[hd + 1] = block[hd + 1].abs() + 0.5;
        }
        let empty = &mut x[(blocks as usize - 1) * stride..blocks as usize * stride];
        empty[..hd].fill(0.0);
        (empty[hd], empty[hd + 1]) = (-3.0e38, 0.0);
    }
    x
}

/// A norm input form without norm weights, or an x of the wrong length for a GLU form, is a
/// shape error, not a dispatch.
#[test]
fn gemv_input_forms_check_their_bindings() {
    use gemv::GemvInput;
    let Some(gpu) = support::gpu() else { return };
    let w = gpu.zeros_f32(&[4, 8], "w").unwrap();
    let x = gpu.zeros_f32(&[8], "x").unwrap();
    let y = gpu.zeros_f32(&[4], "y").unwrap();
    let t = GemvTunables::default_for(false);
    let mut rec = Recorder::new(&gpu);
    for input in [GemvInput::RmsNorm, GemvInput::SwiGlu] {
        let call = ops::GemvCall {
            input,
            ..ops::GemvCall::new(&w, &x, &y)
        };
        let err = ops::gemv_call(&gpu, &mut rec, call, t).unwrap_err();
        assert_eq!(err.code(), "BAD_REQUEST", "{input:?}");
    }
    // An attention combine past its limits (2 heads × 257 blocks: more (head, block) pairs
    // than workgroup memory holds; heads 2 elements wide), built directly rather than by
    // `GemvInput::attention_combine`, with a large enough x.
    let part = gpu.zeros_f32(&[8192], "partials").unwrap();
    for input in [
        GemvInput::AttnCombine {
            head_dim: 4,
            blocks: gemv::COMBINE_MAX_PAIRS / 2 + 1,
        },
        GemvInput::AttnCombine {
            head_dim: 2,
            blocks: 1,
        },
    ] {
        let call = ops::GemvCall {
            input,
            ..ops::GemvCall::new(&w, &part, &y)
        };
        let err = ops::gemv_call(&gpu, &mut rec, call, t).unwrap_err();
        assert_eq!(err.code(), "BAD_REQUEST", "{input:?}");
    }
}

/// The input-only dispatch forms the same vector as the CPU reference for every input form
/// (and a folded form's new residual row).
#[test]
fn gemv_input_vector_matches_cpu() {
    use gemv::GemvInput;
    let Some(gpu) = support::gpu() else { return };
    let cols = 320;
    let w = gpu.zeros_f32(&[3, cols], "w").unwrap();
    let y = gpu.zeros_f32(&[3], "y").unwrap();
    for input in GemvInput::ALL {
        let x = input_binding(input, cols, 13, 3.0);
        let norm_w = support::random_f32(input.norm_weights(cols).unwrap_or(cols), 14);
        let stream = support::random_f32(cols, 15);
        let xt = gpu.upload_f32(&x, &[x.len()], "x").unwrap();
        let nt = gpu.upload_f32(&norm_w, &[norm_w.len()], "norm").unwrap();
        let st = gpu.upload_f32(&stream, &[cols], "stream").unwrap();
        let row = gpu.zeros_f32(&[cols], "x1").unwrap();
        let out = gpu.zeros_f32(&[cols], "input").unwrap();
        let call = ops::GemvCall {
            input,
            norm: input.norm_weights(cols).map(|_| (&nt, 1e-5)),
            fold: input.is_folded().then_some((&st, Some(&row))),
            ..ops::GemvCall::new(&w, &xt, &y)
        };
        let mut rec = Recorder::new(&gpu);
        let t = GemvTunables::default_for(support::has_subgroups(&gpu));
        ops::gemv_input(&gpu, &mut rec, call, t, &out, false).unwrap();
        rec.submit().unwrap();
        let want = input.reference(&x, &stream, &norm_w, 1e-5, cols);
        let mut got = gpu.readback_f32(&out).unwrap();
        if input.is_folded() {
            got.extend(gpu.readback_f32(&row).unwrap());
        }
        assert_eq!(got.len(), want.len(), "{input:?}");
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                (g - w).abs() <= 1e-5 * w.abs().max(1.0),
                "{input:?} [{i}]: {g} vs {w}"
            );
        }
    }
}

/// The int8-input GEMV for every type that has it: the input-only dispatch quantizes the
/// formed vector (plain, and the (1 + w) RMSNorm of the output projections) into blocks that
/// stand for it within half a step, and the int8 GEMV equals a CPU sum over the dequantized
/// weights times the values those blocks stand for (f64), for row lengths of even and odd
/// block counts (rows of the 2-byte-aligned types starting 2 bytes into a word), with and
/// without the residual, at tunables from 1 to 64 lanes per row, both reductions where
/// subgroups exist, and unrolled.
#[test]
fn gemv_q8_input_matches_cpu() {
    let Some(gpu) = support::gpu() else { return };
    let subgroups = support::has_subgroups(&gpu);
    // (WG, ROWS, RPT, UNROLL): 45 rows leave a partial workgroup and, at RPT 2 and 4, a
    // partial row group; UNROLL 1, 2, 4 and 8.
    let tunables: Vec<GemvTunables> = [
        (256, 64, 1, 1),
        (256, 32, 1, 1),
        (32, 32, 1, 2),
        (32, 4, 1, 1),
        (64, 1, 1, 1),
        (128, 16, 1, 4),
        (128, 16, 2, 1),
        (64, 8, 4, 2),
        (256, 64, 4, 1),
        (64, 2, 1, 8),
    ]
    .into_iter()
    .flat_map(|(wg, rows, rpt, unroll)| {
        Reduction::ALL.map(|reduction| GemvTunables {
            wg,
            rows,
            rpt,
            reduction,
            unroll,
        })
    })
    .filter(|t| subgroups || t.reduction == Reduction::Shared)
    .collect();
    for ty in GgmlType::ALL
        .into_iter()
        .filter(|ty| gemv::takes_q8_input(*ty))
    {
        // Odd and even block counts: 20 and 11 blocks of 32; 3, 2 and 19 of 256 (Q6_K's rows
        // then straddle its groups of eight blocks, `quant/q6_k_groups.wgsl`).
        let shapes: &[(usize, gemv::GemvInput)] = if ty.block_elems() == 256 {
            &[
                (768, gemv::GemvInput::RmsNormPlusOne),
                (512, gemv::GemvInput::Plain),
                (4864, gemv::GemvInput::Plain),
            ]
        } else {
            &[
                (640, gemv::GemvInput::RmsNormPlusOne),
                (352, gemv::GemvInput::Plain),
            ]
        };
        for &(cols, input) in shapes {
            check_q8_input(&gpu, ty, 45, cols, input, &tunables);
        }
    }
}

/// [`gemv_q8_input_matches_cpu`] for one type and shape.
fn check_q8_input(
    gpu: &gpuport_runtime::Gpu,
    ty: GgmlType,
    rows: usize,
    cols: usize,
    input: gemv::GemvInput,
    tunables: &[GemvTunables],
) {
    use gemv::{GemvInput, Q8_BLOCK_WORDS};
    let subgroups = support::has_subgroups(gpu);
    let raw = random_blocks(
        ty,
        rows * cols / ty.block_elems(),
        cols as u64 + ty.ggml_id() as u64,
    );
    let w = gpu
        .upload(&raw, Elem::Ggml(ty), &[rows, cols], "w")
        .unwrap();
    let x: Vec<f32> = support::random_f32(cols, 5)
        .iter()
        .map(|v| 4.0 * v)
        .collect();
    let norm_w = support::random_f32(cols, 6);
    let xt = gpu.upload_f32(&x, &[cols], "x").unwrap();
    let nt = gpu.upload_f32(&norm_w, &[cols], "norm").unwrap();
    let words = GemvInput::Q8Blocks.x_len(cols);
    let xq = gpu.zeros_f32(&[words], "xq").unwrap();
    let unused = gpu.zeros_f32(&[rows], "y").unwrap();
    let call = ops::GemvCall {
        input,
        norm: input.norm_weights(cols).map(|_| (&nt, 1e-6)),
        ..ops::GemvCall::new(&w, &xt, &unused)
    };
    let mut rec = Recorder::new(gpu);
    let t = GemvTunables::default_for(subgroups);
    ops::gemv_input(gpu, &mut rec, call, t, &xq, true).unwrap();
    rec.submit().unwrap();
    let q = support::readback_words(gpu, &xq);
    // The blocks stand for the formed vector within half a step (one where the GPU's
    // reciprocal rounds a tie the other way), their scales are max|v| / 127 and word 9 is
    // d * sum(q).
    let formed = input.reference(&x, &[], &norm_w, 1e-6, cols);
    let stands_for = gemv::dequantize_q8_input(&q);
    let reference = gemv::quantize_q8_input(&formed);
    for (b, block) in q.chunks_exact(Q8_BLOCK_WORDS).enumerate() {
        let d = f32::from_bits(block[8]);
        let want_d = f32::from_bits(reference[b * Q8_BLOCK_WORDS + 8]);
        assert!(
            (d - want_d).abs() <= 1e-6 * want_d,
            "{} {cols}: block {b} d {d} vs {want_d}",
            ty.name()
        );
        let sum: i32 = block[..8]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .map(|q| i32::from(q as i8))
            .sum();
        assert_eq!(f32::from_bits(block[9]), d * sum as f32, "block {b} sum");
        for i in 32 * b..32 * (b + 1) {
            assert!(
                (stands_for[i] - formed[i]).abs() <= 0.5 * d + 1e-5 * formed[i].abs(),
                "{} {cols}: element {i}: {} stands for {}",
                ty.name(),
                stands_for[i],
                formed[i]
            );
        }
    }
    let res = support::random_f32(rows, 8);
    let rt = gpu.upload_f32(&res, &[rows], "residual").unwrap();
    let (want, tol) = q8_reference(ty, &raw, rows, cols, &stands_for);
    for (i, &t) in tunables.iter().enumerate() {
        let with_residual = i % 2 == 0;
        let y = gpu.zeros_f32(&[rows], "y").unwrap();
        let call = ops::GemvCall {
            input: GemvInput::Q8Blocks,
            residual: with_residual.then_some(&rt),
            ..ops::GemvCall::new(&w, &xq, &y)
        };
        let mut rec = Recorder::new(gpu);
        ops::gemv_call(gpu, &mut rec, call, t).unwrap();
        rec.submit().unwrap();
        let got = gpu.readback_f32(&y).unwrap();
        for r in 0..rows {
            let extra = if with_residual {
                f64::from(res[r])
            } else {
                0.0
            };
            assert!(
                (f64::from(got[r]) - want[r] - extra).abs() <= tol[r],
                "{} {cols} {t:?}: row {r}: GPU {} CPU {}",
                ty.name(),
                got[r],
                want[r] + extra
            );
        }
    }
}

/// The int8-input GEMV's CPU reference: per row the f64 sum of the dequantized weights times
/// the values the input blocks stand for, and a tolerance of a few f32 roundings of the
/// magnitude of its terms.
fn q8_reference(
    ty: GgmlType,
    raw: &[u8],
    rows: usize,
    cols: usize,
    stands_for: &[f32],
) -> (Vec<f64>, Vec<f64>) {
    let dq = dequantize(ty, raw);
    (0..rows)
        .map(|r| {
            let row = &dq[r * cols..(r + 1) * cols];
            let sum: f64 = row
                .iter()
                .zip(stands_for)
                .map(|(w, x)| f64::from(*w) * f64::from(*x))
                .sum();
            let magnitude: f64 = row
                .iter()
                .zip(stands_for)
                .map(|(w, x)| f64::from((w * x).abs()))
                .sum();
            (sum, 2e-6 * magnitude + 1e-6)
        })
        .unzip()
}

/// The int8-input GEMV of every type with it over a matrix bound in row chunks (each chunk
/// at its own binding offset, its rows written from its first output row), with and without
/// the residual: the chunk a row falls in does not change its result.
#[test]
fn gemv_q8_input_splits_across_bindings() {
    use gemv::GemvInput;
    let Some(gpu) = support::gpu() else { return };
    let subgroups = support::has_subgroups(&gpu);
    for ty in GgmlType::ALL
        .into_iter()
        .filter(|ty| gemv::takes_q8_input(*ty))
    {
        let cols = if ty.block_elems() == 256 { 768 } else { 352 };
        let row_bytes = ty.row_bytes(cols).unwrap() as u64;
        // A chunk is one step of rows whose byte size is a multiple of the alignment: three
        // chunks, the last short.
        let step = chunk_step(&gpu, ty, row_bytes);
        let rows = (2 * step + 5) as usize;
        let raw = random_blocks(ty, rows * cols / ty.block_elems(), 3);
        let w = gpu
            .upload(&raw, Elem::Ggml(ty), &[rows, cols], "w")
            .unwrap();
        let x = support::random_f32(cols, 9);
        let words = gemv::quantize_q8_input(&x);
        let bits: Vec<f32> = words.iter().map(|w| f32::from_bits(*w)).collect();
        let xq = gpu.upload_f32(&bits, &[bits.len()], "xq").unwrap();
        let (want, tol) = q8_reference(ty, &raw, rows, cols, &gemv::dequantize_q8_input(&words));
        let res = support::random_f32(rows, 10);
        let rt = gpu.upload_f32(&res, &[rows], "residual").unwrap();
        let t = GemvTunables::q8_default_for(ty, subgroups);
        for with_residual in [false, true] {
            let y = gpu.zeros_f32(&[rows], "y").unwrap();
            let call = ops::GemvCall {
                input: GemvInput::Q8Blocks,
                residual: with_residual.then_some(&rt),
                ..ops::GemvCall::new(&w, &xq, &y)
            };
            let mut rec = Recorder::new(&gpu);
            ops::gemv_chunked(&gpu, &mut rec, call, t, step * row_bytes).unwrap();
            rec.submit().unwrap();
            let got = gpu.readback_f32(&y).unwrap();
            for r in 0..rows {
                let extra = if with_residual {
                    f64::from(res[r])
                } else {
                    0.0
                };
                assert!(
                    (f64::from(got[r]) - want[r] - extra).abs() <= tol[r],
                    "{} residual {with_residual}: row {r}: GPU {} CPU {}",
                    ty.name(),
                    got[r],
                    want[r] + extra
                );
            }
        }
    }
}

/// The int8-input GEMV refuses weights without the int8 kernel, an input of the wrong length
/// and an input-only target of the wrong size, before recording anything.
#[test]
fn gemv_q8_input_checks_its_bindings() {
    use gemv::GemvInput;
    let Some(gpu) = support::gpu() else { return };
    let t = GemvTunables::q8_default(support::has_subgroups(&gpu));
    let (rows, cols) = (4, 64);
    let f16 = random_blocks(GgmlType::F16, rows * cols, 1);
    let f16 = gpu
        .upload(&f16, Elem::Ggml(GgmlType::F16), &[rows, cols], "f16")
        .unwrap();
    let q8 = random_blocks(GgmlType::Q8_0, rows * cols / 32, 2);
    let q8 = gpu
        .upload(&q8, Elem::Ggml(GgmlType::Q8_0), &[rows, cols], "q8")
        .unwrap();
    let xq = gpu
        .zeros_f32(&[gemv::GemvInput::Q8Blocks.x_len(cols)], "xq")
        .unwrap();
    let short = gpu.zeros_f32(&[cols], "x").unwrap();
    let y = gpu.zeros_f32(&[rows], "y").unwrap();
    let mut rec = Recorder::new(&gpu);
    for (w, x) in [(&f16, &xq), (&q8, &short)] {
        let call = ops::GemvCall {
            input: GemvInput::Q8Blocks,
            ..ops::GemvCall::new(w, x, &y)
        };
        let err = ops::gemv_call(&gpu, &mut rec, call, t).unwrap_err();
        assert_eq!(err.code(), "BAD_REQUEST");
    }
    let err = ops::gemv_input(
        &gpu,
        &mut rec,
        ops::GemvCall::new(&q8, &short, &y),
        t,
        &short,
        true,
    )
    .unwrap_err();
    assert_eq!(err.code(), "BAD_REQUEST");
}

/// The prefill GEMM against the CPU (each token row a GEMV of f64 sums) for every weight type:
/// 37 tokens (no multiple of any tile), 45 rows, rows of X and Y wider than the matrix, the
/// output from a column offset with a residual (even types) or a bias row (odd types), the GLU
/// input forms, and tiles from 16 × 16 to 64 × 64.
/// `gated_rows` against the CPU for both gates: each `[gate | up]` row's gate half becomes
/// `gate(g) · u` (the up half untouched); rounded, it is exactly `q8_round` of the unrounded
/// result (the one-row path quantizes what the unrounded kernel forms, so both paths compute
/// with the same numbers). Rows whose width is off the block grid, and gates that are not
/// gated activations, are refused.
#[test]
fn gated_rows_match_the_cpu_and_round_like_q8_round() {
    use gpuport_kernels::rowops::{ElementOp, gated_rows_reference};
    let Some(gpu) = support::gpu() else { return };
    // 55 blocks: rows of 11 across the kernel's workgroups of 32 blocks, the last one partial.
    let (rows, width) = (5, 352);
    let x: Vec<f32> = support::random_f32(rows * 2 * width, 21)
        .iter()
        .map(|v| 6.0 * v)
        .collect();
    let run = |gate, round| {
        let xt = gpu.upload_f32(&x, &[rows * 2 * width], "x").unwrap();
        let mut rec = Recorder::new(&gpu);
        let call = ops::GatedRows {
            x: &xt,
            rows,
            width,
            gate,
            round,
        };
        ops::gated_rows(&gpu, &mut rec, call).unwrap();
        rec.submit().unwrap();
        gpu.readback_f32(&xt).unwrap()
    };
    for gate in [ElementOp::SiluMul, ElementOp::GeluMul] {
        let plain = run(gate, false);
        let want = gated_rows_reference(&x, width, gate, false);
        for r in 0..rows {
            let row = &plain[r * 2 * width..(r + 1) * 2 * width];
            for (i, (&g, &w)) in row[..width].iter().zip(&want[r * width..]).enumerate() {
                assert!(
                    (g - w).abs() <= 1e-5 * (1.0 + w.abs()),
                    "{gate:?} row {r} [{i}]: {g} vs {w}"
                );
            }
            assert_eq!(
                row[width..],
                x[r * 2 * width + width..(r + 1) * 2 * width],
                "up half"
            );
        }
        let rounded = run(gate, true);
        let gated: Vec<f32> = (0..rows)
            .flat_map(|r| plain[r * 2 * width..r * 2 * width + width].to_vec())
            .collect();
        let xt = gpu.upload_f32(&gated, &[rows * width], "gated").unwrap();
        let mut rec = Recorder::new(&gpu);
        let round = ops::Q8Round {
            x: &xt,
            rows,
            cols: width,
        };
        ops::q8_round(&gpu, &mut rec, round).unwrap();
        rec.submit().unwrap();
        let want = gpu.readback_f32(&xt).unwrap();
        for r in 0..rows {
            let got = &rounded[r * 2 * width..r * 2 * width + width];
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(
                bits(got),
                bits(&want[r * width..(r + 1) * width]),
                "{gate:?} row {r}"
            );
        }
    }
    let xt = gpu.upload_f32(&x, &[rows * 2 * width], "x").unwrap();
    let mut rec = Recorder::new(&gpu);
    let off_grid = ops::GatedRows {
        x: &xt,
        rows,
        width: 40,
        gate: ElementOp::SiluMul,
        round: false,
    };
    assert!(ops::gated_rows(&gpu, &mut rec, off_grid).is_err());
    let not_gated = ops::GatedRows {
        gate: ElementOp::Add,
        width,
        ..off_grid
    };
    assert!(ops::gated_rows(&gpu, &mut rec, not_gated).is_err());
}

/// Rows rounded by `q8_round` hold exactly the values of the int8 blocks the GEMV's input pass
/// writes for the same row (one rounding rule on the GPU, `q8_grid.wgsl`: a token computes with
/// the same numbers in a one-row and a many-row forward), and the CPU reference's but for the
/// last bits of a scale and where the GPU's reciprocal rounds a tie the other way.
#[test]
fn q8_rounding_equals_the_gemv_input_blocks() {
    let Some(gpu) = support::gpu() else { return };
    let (rows, cols) = (5, 640);
    let x: Vec<f32> = support::random_f32(rows * cols, 11)
        .iter()
        .map(|v| 3.0 * v)
        .collect();
    let xt = gpu.upload_f32(&x, &[rows * cols], "x").unwrap();
    let mut rec = Recorder::new(&gpu);
    let round = ops::Q8Round { x: &xt, rows, cols };
    ops::q8_round(&gpu, &mut rec, round).unwrap();
    rec.submit().unwrap();
    let got = gpu.readback_f32(&xt).unwrap();
    let want = gpuport_kernels::rowops::q8_round_reference(&x);
    // Vulkan lets a division be 2.5 ulp off, so a block's scale (amax / 127) may differ from the
    // CPU's in its last bits (NVIDIA's does in about one block in 25): its values then differ by
    // a few ulp, which is not a different rounding. A value on another grid level is (a tie the
    // GPU's reciprocal rounds the other way): at most one step, and rare.
    let mut ties = 0;
    for (b, block) in x.chunks_exact(32).enumerate() {
        let d = block.iter().fold(0.0f32, |m, v| m.max(v.abs())) / 127.0;
        for i in 32 * b..32 * (b + 1) {
            let diff = (got[i] - want[i]).abs();
            if diff > 4.0 * f32::EPSILON * want[i].abs() {
                ties += 1;
                assert!(diff <= d * 1.0001, "element {i}: {} vs {}", got[i], want[i]);
            }
        }
    }
    assert!(ties * 1000 <= x.len(), "{ties} ties of {}", x.len());
    // The GEMV's input pass over each row: the same values, bit for bit.
    let ty = GgmlType::Q8_0;
    let raw = random_blocks(ty, 3 * cols / 32, 12);
    let w = gpu.upload(&raw, Elem::Ggml(ty), &[3, cols], "w").unwrap();
    let unused = gpu.zeros_f32(&[3], "y").unwrap();
    let t = GemvTunables::default_for(support::has_subgroups(&gpu));
    for r in 0..rows {
        let row = gpu
            .upload_f32(&x[r * cols..(r + 1) * cols], &[cols], "row")
            .unwrap();
        let xq = gpu
            .zeros_f32(&[gemv::GemvInput::Q8Blocks.x_len(cols)], "xq")
            .unwrap();
        let mut rec = Recorder::new(&gpu);
        let call = ops::GemvCall::new(&w, &row, &unused);
        ops::gemv_input(&gpu, &mut rec, call, t, &xq, true).unwrap();
        rec.submit().unwrap();
        let words = support::readback_words(&gpu, &xq);
        let blocks = gemv::dequantize_q8_input(&words);
        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        assert_eq!(
            bits(&blocks),
            bits(&got[r * cols..(r + 1) * cols]),
            "row {r}"
        );
    }
    // A row length off the block grid is refused.
    let mut rec = Recorder::new(&gpu);
    let bad = ops::Q8Round {
        x: &xt,
        rows: 1,
        cols: 40,
    };
    assert!(ops::q8_round(&gpu, &mut rec, bad).is_err());
}

/// The one-dispatch int8 inputs of the one-row path — `norm_blocks` (an RMSNorm writing its
/// row's int8 blocks) and `q8_blocks` (plain or gated rows into blocks) — write exactly the
/// words of the two dispatches they replace (the f32 row formed, then the GEMV's input pass
/// quantizing it), and their values are exactly what `q8_round` rounds the same f32 rows to
/// (the many-row path), so a token computes with the same numbers either way. Norms whose
/// blocks cannot be formed (LayerNorm, rows off the block grid, a wrong output size) are
/// refused.
#[test]
fn int8_blocks_in_one_dispatch_equal_the_two_dispatch_path() {
    use gpuport_kernels::rowops::{ElementOp, NormKind};
    let Some(gpu) = support::gpu() else { return };
    let (rows, cols) = (3, 320);
    let words = ops::Q8Blocks::words(cols);
    let bits = |t: &gpuport_runtime::Tensor| support::readback_words(&gpu, t);
    // The GEMV's input pass over each f32 row of `formed` (`cols` apart): the old path.
    let ty = GgmlType::Q8_0;
    let raw = random_blocks(ty, 2 * cols / 32, 13);
    let w = gpu.upload(&raw, Elem::Ggml(ty), &[2, cols], "w").unwrap();
    let unused = gpu.zeros_f32(&[2], "y").unwrap();
    let t = GemvTunables::default_for(support::has_subgroups(&gpu));
    let input_pass = |formed: &[f32]| -> Vec<u32> {
        let mut out = Vec::new();
        for row in formed.chunks_exact(cols) {
            let row = gpu.upload_f32(row, &[cols], "row").unwrap();
            let xq = gpu.zeros_f32(&[words], "xq").unwrap();
            let mut rec = Recorder::new(&gpu);
            let call = ops::GemvCall::new(&w, &row, &unused);
            ops::gemv_input(&gpu, &mut rec, call, t, &xq, true).unwrap();
            rec.submit().unwrap();
            out.extend(bits(&xq));
        }
        out
    };
    // `q8_round` of f32 rows: the many-row path's values.
    let rounded = |formed: &[f32]| -> Vec<u32> {
        let xt = gpu.upload_f32(formed, &[formed.len()], "rows").unwrap();
        let mut rec = Recorder::new(&gpu);
        let call = ops::Q8Round {
            x: &xt,
            rows: formed.len() / cols,
            cols,
        };
        ops::q8_round(&gpu, &mut rec, call).unwrap();
        rec.submit().unwrap();
        bits(&xt)
    };
    let dequantized = |w: &[u32]| -> Vec<u32> {
        gemv::dequantize_q8_input(w)
            .iter()
            .map(|v| v.to_bits())
            .collect()
    };

    // Norms.
    let x: Vec<f32> = support::random_f32(rows * cols, 31)
        .iter()
        .map(|v| 4.0 * v)
        .collect();
    let nw: Vec<f32> = support::random_f32(cols, 32)
        .iter()
        .map(|v| 1.0 + v)
        .collect();
    let xt = gpu.upload_f32(&x, &[rows * cols], "x").unwrap();
    let wt = gpu.upload_f32(&nw, &[cols], "norm weights").unwrap();
    for kind in [NormKind::Rms, NormKind::RmsPlusOne] {
        let y = gpu.zeros_f32(&[rows * cols], "normed").unwrap();
        let q = gpu.zeros_f32(&[rows * words], "blocks").unwrap();
        let norm = |y| ops::Norm {
            kind,
            x: &xt,
            w: &wt,
            y,
            cols,
            eps: 1e-6,
        };
        let mut rec = Recorder::new(&gpu);
        ops::norm(&gpu, &mut rec, norm(&y)).unwrap();
        ops::norm_blocks(&gpu, &mut rec, norm(&q)).unwrap();
        rec.submit().unwrap();
        let formed = gpu.readback_f32(&y).unwrap();
        let got = bits(&q);
        assert_eq!(
            got,
            input_pass(&formed),
            "{kind:?}: blocks vs the input pass"
        );
        assert_eq!(dequantized(&got), rounded(&formed), "{kind:?}: vs q8_round");
    }
    let q = gpu.zeros_f32(&[rows * words], "blocks").unwrap();
    let mut rec = Recorder::new(&gpu);
    let layer_w = gpu.zeros_f32(&[2 * cols], "layer norm").unwrap();
    let refused = [
        (NormKind::Layer, &xt, &layer_w, &q, cols),
        (NormKind::Rms, &xt, &wt, &xt, cols),
    ];
    for (kind, x, w, y, cols) in refused {
        let call = ops::Norm {
            kind,
            x,
            w,
            y,
            cols,
            eps: 1e-6,
        };
        assert!(
            ops::norm_blocks(&gpu, &mut rec, call).is_err(),
            "{kind:?} into {:?}",
            y.shape
        );
    }
    let off_grid = gpu.zeros_f32(&[40], "off-grid row").unwrap();
    let w40 = gpu.zeros_f32(&[40], "weights").unwrap();
    let call = ops::Norm {
        kind: NormKind::Rms,
        x: &off_grid,
        w: &w40,
        y: &q,
        cols: 40,
        eps: 1e-6,
    };
    assert!(ops::norm_blocks(&gpu, &mut rec, call).is_err());

    // Plain and gated rows.
    let g: Vec<f32> = support::random_f32(rows * 2 * cols, 33)
        .iter()
        .map(|v| 6.0 * v)
        .collect();
    for gate in [None, Some(ElementOp::SiluMul), Some(ElementOp::GeluMul)] {
        let width = if gate.is_some() { 2 * cols } else { cols };
        let src = &g[..rows * width];
        let xt = gpu.upload_f32(src, &[src.len()], "rows").unwrap();
        let q = gpu.zeros_f32(&[rows * words], "blocks").unwrap();
        let mut rec = Recorder::new(&gpu);
        let call = ops::Q8Blocks {
            x: &xt,
            rows,
            width: cols,
            gate,
            blocks: &q,
        };
        ops::q8_blocks(&gpu, &mut rec, call).unwrap();
        if let Some(gate) = gate {
            // The f32 activation as the old path formed it, in place after the blocks.
            let call = ops::GatedRows {
                x: &xt,
                rows,
                width: cols,
                gate,
                round: false,
            };
            ops::gated_rows(&gpu, &mut rec, call).unwrap();
        }
        rec.submit().unwrap();
        let all = gpu.readback_f32(&xt).unwrap();
        let formed: Vec<f32> = all
            .chunks_exact(width)
            .flat_map(|r| r[..cols].to_vec())
            .collect();
        let got = bits(&q);
        assert_eq!(
            got,
            input_pass(&formed),
            "{gate:?}: blocks vs the input pass"
        );
        assert_eq!(dequantized(&got), rounded(&formed), "{gate:?}: vs q8_round");
    }
    let xt = gpu.upload_f32(&g, &[g.len()], "rows").unwrap();
    let short = gpu.zeros_f32(&[words], "one row of blocks").unwrap();
    let mut rec = Recorder::new(&gpu);
    let call = ops::Q8Blocks {
        x: &xt,
        rows,
        width: cols,
        gate: None,
        blocks: &short,
    };
    assert!(
        ops::q8_blocks(&gpu, &mut rec, call).is_err(),
        "too few words"
    );
    let not_gated = ops::Q8Blocks {
        gate: Some(ElementOp::Add),
        blocks: &q,
        ..call
    };
    assert!(
        ops::q8_blocks(&gpu, &mut rec, not_gated).is_err(),
        "not a gate"
    );
}

#[test]
fn gemm_matches_cpu_for_every_type() {
    use gpuport_kernels::gemm::{self, GemmTile};
    let Some(gpu) = support::gpu() else { return };
    let (tokens, rows, cols, y_first) = (37, 45, 256, 3);
    // The tiles this adapter's workgroup memory holds (64 × 64 needs 16,896 bytes).
    let storage = gpu.limits().max_compute_workgroup_storage_size;
    let tiles: Vec<GemmTile> = GemmTile::all()
        .into_iter()
        .filter(|t| t.workgroup_bytes() <= storage)
        .collect();
    let y_stride = y_first + rows + 2;
    for (i, ty) in GgmlType::ALL.into_iter().enumerate() {
        let row_bytes = ty.row_bytes(cols).unwrap();
        let raw = random_blocks(ty, rows * row_bytes / ty.block_bytes(), 40 + i as u64);
        let w = gpu
            .upload(&raw, Elem::Ggml(ty), &[rows, cols], "w")
            .unwrap();
        let dq = dequantize(ty, &raw);
        let input = gemm::INPUTS[i % gemm::INPUTS.len()];
        let tile = tiles[i % tiles.len()];
        let width = input.x_len(cols);
        let x_stride = width + 4;
        let x: Vec<f32> = support::random_f32(tokens * x_stride, 41)
            .iter()
            .map(|v| 2.0 * v)
            .collect();
        let res = support::random_f32(tokens * y_stride, 42);
        let xt = gpu.upload_f32(&x, &[x.len()], "x").unwrap();
        let rt = gpu.upload_f32(&res, &[res.len()], "residual").unwrap();
        let y = gpu.zeros_f32(&[tokens * y_stride], "y").unwrap();
        let bias = support::random_f32(y_stride, 43);
        let bt = gpu.upload_f32(&bias, &[y_stride], "bias").unwrap();
        let with_bias = i % 2 == 1;
        let call = ops::GemmCall {
            w: &w,
            x: &xt,
            y: &y,
            tokens,
            x_stride,
            y_stride,
            y_first,
            residual: (!with_bias).then_some(&rt),
            bias: with_bias.then_some(&bt),
            input,
            norm: None,
        };
        // The tiled kernel itself: `ops::gemm` would take 37 tokens to the tensor cores where
        // the adapter has them (f16 products: `coop_gemm_matches_cpu_for_every_type` checks
        // that path against its own bound), which this test's f32 tolerance does not hold.
        let mut rec = Recorder::new(&gpu);
        let limit = gpu.limits().max_storage_buffer_binding_size;
        ops::gemm_on(&gpu, &mut rec, call, ops::GemmPath::Tiled(tile), limit).unwrap();
        rec.submit().unwrap();
        let got = gpu.readback_f32(&y).unwrap();
        let rows_x: Vec<f32> = x
            .chunks(x_stride)
            .flat_map(|r| r[..width].to_vec())
            .collect();
        let want = gemm::reference(ty, &raw, rows, cols, &rows_x, input);
        for t in 0..tokens {
            let xin = input.reference(&rows_x[t * width..(t + 1) * width], &[], &[], 0.0, cols);
            for r in 0..y_stride {
                let g = got[t * y_stride + r];
                if r < y_first || r >= y_first + rows {
                    assert_eq!(g, 0.0, "{} token {t}: wrote column {r}", ty.name());
                    continue;
                }
                let row = r - y_first;
                let magnitude: f32 = dq[row * cols..(row + 1) * cols]
                    .iter()
                    .zip(&xin)
                    .map(|(a, b)| (a * b).abs())
                    .sum();
                let tol = 2e-6 * magnitude + 1e-5;
                let added = if with_bias {
                    bias[r]
                } else {
                    res[t * y_stride + r]
                };
                let w = want[t * rows + row] + added;
                assert!(
                    (g - w).abs() <= tol,
                    "{} {input:?} {tile:?} token {t} row {row}: GPU {g} CPU {w}",
                    ty.name()
                );
            }
        }
    }
}

/// A GEMM of no tokens or no rows records nothing and is no error; an x narrower than the
/// matrix is a shape error.
#[test]
fn gemm_empty_edges_and_bad_shapes() {
    use gpuport_kernels::gemm::{FewRowTunables, GemmTile};
    use gpuport_kernels::gemv::GemvInput;
    let Some(gpu) = support::gpu() else { return };
    let x = gpu.upload_f32(&[1.0; 64], &[64], "x").unwrap();
    let y = gpu.upload_f32(&[7.0; 8], &[8], "y").unwrap();
    let empty = gpu
        .upload(&[], Elem::Ggml(GgmlType::Q8_0), &[0, 32], "no rows")
        .unwrap();
    let w = gpu.zeros_f32(&[4, 32], "w").unwrap();
    let call = |w, tokens, x_stride| ops::GemmCall {
        w,
        x: &x,
        y: &y,
        tokens,
        x_stride,
        y_stride: 4,
        y_first: 0,
        residual: None,
        bias: None,
        input: GemvInput::Plain,
        norm: None,
    };
    let mut rec = Recorder::new(&gpu);
    ops::gemm(&gpu, &mut rec, call(&empty, 2, 32), GemmTile::DEFAULT).unwrap();
    ops::gemm(&gpu, &mut rec, call(&w, 0, 32), GemmTile::DEFAULT).unwrap();
    assert_eq!(rec.stats().dispatches, 0);
    rec.submit().unwrap();
    assert_eq!(gpu.readback_f32(&y).unwrap(), vec![7.0; 8]);
    let err = ops::gemm(&gpu, &mut rec, call(&w, 2, 16), GemmTile::DEFAULT).unwrap_err();
    assert_eq!(err.code(), "BAD_REQUEST");
    // The output bound again as the residual (read-only and read-write in one dispatch).
    let in_place = ops::GemmCall {
        residual: Some(&y),
        ..call(&w, 2, 32)
    };
    let err = ops::gemm(&gpu, &mut rec, in_place, GemmTile::DEFAULT).unwrap_err();
    assert_eq!(err.code(), "BAD_REQUEST");
    // Tile sides the kernel does not have (its accumulators cover 16, 32 and 64), also where
    // the few-row kernel would run the call.
    for (tm, tn) in [(32, 48), (8, 16), (0, 16), (16, 0)] {
        let err = ops::gemm(&gpu, &mut rec, call(&w, 2, 32), GemmTile { tm, tn }).unwrap_err();
        assert_eq!(err.code(), "BAD_REQUEST", "{tm} x {tn}");
    }
    // Few-row tunables the kernel does not have: rows per thread past rows per workgroup, 3
    // rows per thread, 9 or no tokens per pass, 512 threads.
    let t = FewRowTunables::default_for(GgmlType::F32, false);
    let limit = gpu.limits().max_storage_buffer_binding_size;
    for bad in [
        FewRowTunables {
            rows: 1,
            rpt: 2,
            ..t
        },
        FewRowTunables { rpt: 3, ..t },
        FewRowTunables { nx: 9, ..t },
        FewRowTunables { nx: 0, ..t },
        FewRowTunables { wg: 512, ..t },
    ] {
        let path = ops::GemmPath::FewRows(bad);
        let err = ops::gemm_on(&gpu, &mut rec, call(&w, 2, 32), path, limit).unwrap_err();
        assert_eq!(err.code(), "BAD_REQUEST", "{bad:?}");
    }
    // And the few-row path checks the call as the tiled one does.
    let path = ops::GemmPath::FewRows(t);
    let err = ops::gemm_on(&gpu, &mut rec, call(&w, 2, 16), path, limit).unwrap_err();
    assert_eq!(err.code(), "BAD_REQUEST");
    let err = ops::gemm_on(&gpu, &mut rec, in_place, path, limit).unwrap_err();
    assert_eq!(err.code(), "BAD_REQUEST");
    assert_eq!(rec.stats().dispatches, 0);
}

/// What a GEMM case adds to its products.
#[derive(Debug, Clone, Copy, PartialEq)]
enum GemmAdd {
    Nothing,
    Residual,
    Bias,
}

/// One GEMM against the CPU reference.
#[derive(Debug, Clone, Copy)]
struct GemmCase {
    ty: GgmlType,
    rows: usize,
    cols: usize,
    tokens: usize,
    input: gemv::GemvInput,
    add: GemmAdd,
    /// Elements of each X row past the input (3: rows off vec4 boundaries).
    x_pad: usize,
    /// Output column of row 0 of W (Y rows are 2 wider than `y_first + rows`).
    y_first: usize,
    /// An explicit path and largest weight binding (else `ops::gemm` with the default tile).
    on: Option<(ops::GemmPath, u64)>,
}

impl GemmCase {
    /// Case `c` of a sweep on an explicit path: the input forms (the few-row kernel's norms
    /// too), additions and X rows on and off vec4 boundaries in turn (every form with every
    /// addition over 9 cases, 15 with the norms), Y from column `y_first`.
    fn cycled(
        ty: GgmlType,
        (rows, cols, tokens): (usize, usize, usize),
        c: usize,
        y_first: usize,
        on: (ops::GemmPath, u64),
    ) -> GemmCase {
        GemmCase {
            ty,
            rows,
            cols,
            tokens,
            input: match on.0 {
                ops::GemmPath::FewRows(_) => gpuport_kernels::gemm::ROWS_INPUTS[c % 5],
                _ => gpuport_kernels::gemm::INPUTS[c % 3],
            },
            add: [GemmAdd::Bias, GemmAdd::Residual, GemmAdd::Nothing][c / 3 % 3],
            x_pad: if c % 4 == 1 { 3 } else { 4 },
            y_first,
            on: Some(on),
        }
    }
}

/// Runs `c` and compares every element of Y with the CPU: the outputs within
/// `2e-6 · Σ|w x| + 1e-5` (the tiled GEMM test's tolerance; `1e-3 · Σ|w x| + 1e-5` on the
/// tensor-core path, whose products are of f16-rounded operands: two roundings of at most
/// 2⁻¹¹ each), the columns before `y_first` and after the matrix's rows, and a token row past
/// the last, untouched.
/// Runs case `c` and checks it against the CPU; returns what the GPU wrote into Y.
fn check_gemm_case(gpu: &gpuport_runtime::Gpu, c: GemmCase) -> Vec<f32> {
    let GemmCase {
        ty,
        rows,
        cols,
        tokens,
        input,
        ..
    } = c;
    let seed = (ty.ggml_id() as u64) * 1000 + (tokens * 37 + rows) as u64;
    let row_bytes = ty.row_bytes(cols).unwrap();
    let raw = random_blocks(ty, rows * row_bytes / ty.block_bytes(), seed);
    let w = gpu
        .upload(&raw, Elem::Ggml(ty), &[rows, cols], "w")
        .unwrap();
    let dq = dequantize(ty, &raw);
    let width = input.x_len(cols);
    let x_stride = width + c.x_pad;
    let y_stride = c.y_first + rows + 2;
    let q8 = input == gemv::GemvInput::Q8Blocks;
    let x: Vec<f32> = if q8 {
        // Each row the blocks of `cols` random values (their words as f32 bits), then padding.
        let values = support::random_f32(tokens * cols, seed + 1);
        values
            .chunks(cols)
            .flat_map(|v| {
                let v2: Vec<f32> = v.iter().map(|a| 2.0 * a).collect();
                let mut row: Vec<f32> = gemv::quantize_q8_input(&v2)
                    .into_iter()
                    .map(f32::from_bits)
                    .collect();
                row.resize(x_stride, 0.5);
                row
            })
            .collect()
    } else {
        support::random_f32(tokens * x_stride, seed + 1)
            .iter()
            .map(|v| 2.0 * v)
            .collect()
    };
    // One Y row more than the tokens, every element a sentinel the GEMM must overwrite or
    // leave.
    let sentinel = 1234.5;
    let y_len = (tokens + 1) * y_stride;
    let res = support::random_f32(y_len, seed + 2);
    let bias = support::random_f32(y_stride, seed + 3);
    let xt = gpu.upload_f32(&x, &[x.len()], "x").unwrap();
    let yt = gpu
        .upload_f32(&vec![sentinel; y_len], &[y_len], "y")
        .unwrap();
    let rt = gpu.upload_f32(&res, &[y_len], "residual").unwrap();
    let bt = gpu.upload_f32(&bias, &[y_stride], "bias").unwrap();
    // The norm forms' weights (around 1, as a model's) and epsilon.
    let norm_form = matches!(
        input,
        gemv::GemvInput::RmsNorm | gemv::GemvInput::RmsNormPlusOne
    );
    let (nw, eps): (Vec<f32>, f32) = (
        support::random_f32(cols, seed + 4)
            .iter()
            .map(|v| 1.0 + 0.5 * v)
            .collect(),
        1e-5,
    );
    let nwt = gpu.upload_f32(&nw, &[cols], "norm weights").unwrap();
    let call = ops::GemmCall {
        w: &w,
        x: &xt,
        y: &yt,
        tokens,
        x_stride,
        y_stride,
        y_first: c.y_first,
        residual: (c.add == GemmAdd::Residual).then_some(&rt),
        bias: (c.add == GemmAdd::Bias).then_some(&bt),
        input,
        norm: norm_form.then_some((&nwt, eps)),
    };
    let mut rec = Recorder::new(gpu);
    let tile = gpuport_kernels::gemm::GemmTile::DEFAULT;
    let path = match c.on {
        Some((path, _)) => path,
        None => ops::gemm_path(gpu, &call, tile).unwrap(),
    };
    let rel = if matches!(path, ops::GemmPath::Coop { .. }) {
        1e-3
    } else {
        2e-6
    };
    match c.on {
        Some((path, max_binding)) => ops::gemm_on(gpu, &mut rec, call, path, max_binding),
        None => ops::gemm(gpu, &mut rec, call, tile),
    }
    .unwrap();
    rec.submit().unwrap();
    let got = gpu.readback_f32(&yt).unwrap();
    let rows_x: Vec<f32> = x
        .chunks(x_stride)
        .flat_map(|r| r[..width].to_vec())
        .collect();
    // Each token's input: the GLU or the norm formed, or the values the int8 blocks stand for.
    let xin_of =
        |t: usize| input.reference(&rows_x[t * width..(t + 1) * width], &[], &nw, eps, cols);
    let want: Vec<f32> = (0..tokens)
        .flat_map(|t| gemv::reference(ty, &raw, rows, cols, &xin_of(t)[..cols]))
        .collect();
    for t in 0..=tokens {
        let xin = (t < tokens).then(|| xin_of(t));
        for col in 0..y_stride {
            let g = got[t * y_stride + col];
            let Some(xin) = xin
                .as_ref()
                .filter(|_| (c.y_first..c.y_first + rows).contains(&col))
            else {
                assert_eq!(g, sentinel, "{c:?}: token {t} column {col} written");
                continue;
            };
            let row = col - c.y_first;
            let magnitude: f32 = dq[row * cols..(row + 1) * cols]
                .iter()
                .zip(xin)
                .map(|(a, b)| (a * b).abs())
                .sum();
            let tol = rel * magnitude + 1e-5;
            let added = match c.add {
                GemmAdd::Nothing => 0.0,
                GemmAdd::Residual => res[t * y_stride + col],
                GemmAdd::Bias => bias[col],
            };
            let w = want[t * rows + row] + added;
            assert!(
                (g - w).abs() <= tol,
                "{c:?}: token {t} row {row}: GPU {g} CPU {w} (tolerance {tol})"
            );
        }
    }
    got
}

/// Batched decode's GEMMs through `ops::gemm` as the LLM calls it: 1 to 9, 13, 31 and
/// `FEW_ROWS_MAX` tokens take the few-row kernel at the device's default tunables (one pass
/// up to 8, then passes), `FEW_ROWS_MAX + 1` the tiled one, for
/// every weight type, on 37 rows (no multiple of any rows per workgroup) of 512 columns
/// (2 K-blocks, 16 small blocks), with the plain and both GLU inputs (and on the few-row
/// kernel both norms), a residual, a bias and neither, X rows wider than the input (on and off
/// vec4 boundaries) and Y written from column 3 of wider rows.
#[test]
fn few_row_gemm_matches_cpu_for_every_type() {
    use gpuport_kernels::gemm;
    let Some(gpu) = support::gpu() else { return };
    let adds = [GemmAdd::Residual, GemmAdd::Bias, GemmAdd::Nothing];
    let counts: Vec<usize> = (1..=9)
        .chain([13, 31, gemm::FEW_ROWS_MAX, gemm::FEW_ROWS_MAX + 1])
        .collect();
    for &tokens in &counts {
        // The path `ops::gemm` takes at this many tokens.
        let path = auto_gemm_path(&gpu, tokens);
        // Where the adapter has tensor cores, they take the calls from `coop_min_tokens` rows.
        let coop = support::has_coop_f16(&gpu) && tokens >= ops::coop_min_tokens();
        let few = tokens <= gemm::FEW_ROWS_MAX && !coop;
        assert_eq!(
            matches!(path, ops::GemmPath::FewRows(_)),
            few,
            "{tokens} tokens: {path:?}"
        );
    }
    for (i, ty) in GgmlType::ALL.into_iter().enumerate() {
        for &tokens in &counts {
            check_gemm_case(
                &gpu,
                GemmCase {
                    ty,
                    rows: 37,
                    cols: 512,
                    tokens,
                    input: match auto_gemm_path(&gpu, tokens) {
                        ops::GemmPath::FewRows(_) => gemm::ROWS_INPUTS[(i + tokens) % 5],
                        _ => gemm::INPUTS[(i + tokens) % 3],
                    },
                    add: adds[(i + 2 * tokens) % 3],
                    x_pad: if (i + tokens) % 4 == 0 { 3 } else { 4 },
                    y_first: 3,
                    on: None,
                },
            );
        }
    }
}

/// The norm forms' checks: weights (`cols` of them) required with a norm form and refused
/// with any other; a norm form on a path other than the float few-row kernel refused.
#[test]
fn few_row_norm_forms_check_their_bindings() {
    use gpuport_kernels::gemm::{FewRowTunables, GemmTile};
    let Some(gpu) = support::gpu() else { return };
    let (rows, cols, tokens) = (8usize, 64usize, 4usize);
    let ty = GgmlType::Q8_0;
    let raw = random_blocks(ty, rows * cols / ty.block_elems(), 9);
    let w = gpu
        .upload(&raw, Elem::Ggml(ty), &[rows, cols], "w")
        .unwrap();
    let x = gpu.zeros_f32(&[tokens * cols], "x").unwrap();
    let y = gpu.zeros_f32(&[tokens * rows], "y").unwrap();
    let nw = gpu.zeros_f32(&[cols], "norm weights").unwrap();
    let short = gpu.zeros_f32(&[cols - 4], "short norm weights").unwrap();
    let call = ops::GemmCall {
        w: &w,
        x: &x,
        y: &y,
        tokens,
        x_stride: cols,
        y_stride: rows,
        y_first: 0,
        residual: None,
        bias: None,
        input: gemv::GemvInput::RmsNorm,
        norm: Some((&nw, 1e-5)),
    };
    let few = ops::GemmPath::FewRows(FewRowTunables::default_for(
        ty,
        support::has_subgroups(&gpu),
    ));
    let mut rec = Recorder::new(&gpu);
    ops::gemm_on(&gpu, &mut rec, call, few, u64::MAX).unwrap();
    let bad = [
        ops::GemmCall { norm: None, ..call },
        ops::GemmCall {
            norm: Some((&short, 1e-5)),
            ..call
        },
        ops::GemmCall {
            input: gemv::GemvInput::Plain,
            ..call
        },
    ];
    for (i, bad) in bad.into_iter().enumerate() {
        let err = ops::gemm_on(&gpu, &mut rec, bad, few, u64::MAX).unwrap_err();
        assert_eq!(err.code(), "BAD_REQUEST", "case {i}: {err}");
    }
    let tiled = ops::GemmPath::Tiled(GemmTile::DEFAULT);
    let err = ops::gemm_on(&gpu, &mut rec, call, tiled, u64::MAX).unwrap_err();
    assert!(
        err.to_string()
            .contains("tensor cores with f16 input rows only"),
        "{err}"
    );
}

/// `ops::form_f16_rows` (the tensor-core GEMM's f16 input rows, formed once) against the CPU
/// reference of every form it takes, rounded to f16 — on any adapter, tensor cores or not:
/// 1, 5 and 37 tokens (the norm forms' workgroups of one to four tokens: one partial,
/// several), 328 and 4,104 columns (the loops' tails; a thread's runs of four quadruples,
/// one and two of them), X rows on and off vec4 boundaries; and what it refuses
/// (forms and norm weights that do not go together, widths off a multiple of 4, int8 blocks,
/// X shorter than its rows or narrower than its form).
#[test]
fn f16_input_rows_match_the_cpu_for_every_form() {
    let Some(gpu) = support::gpu() else { return };
    for cols in [328, 4104] {
        for norm_tokens in 1..=gpuport_kernels::gemm::X16_NORM_TOKENS_MAX {
            f16_input_rows_match_the_cpu(&gpu, cols, norm_tokens);
        }
    }
}

fn f16_input_rows_match_the_cpu(gpu: &gpuport_runtime::Gpu, cols: usize, norm_tokens: u32) {
    use gpuport_kernels::gemm::X16_INPUTS;
    let w = gpu.zeros_f32(&[4, cols], "w").unwrap();
    let nw: Vec<f32> = support::random_f32(cols, 5)
        .iter()
        .map(|v| 1.0 + 0.5 * v)
        .collect();
    let nwt = gpu.upload_f32(&nw, &[cols], "norm weights").unwrap();
    let eps = 1e-5;
    for (i, input) in X16_INPUTS.into_iter().enumerate() {
        for (j, tokens) in [1usize, 5, 37].into_iter().enumerate() {
            let x_stride = input.x_len(cols) + if (i + j) % 2 == 0 { 4 } else { 3 };
            let x: Vec<f32> = support::random_f32(tokens * x_stride, (10 * i + j) as u64)
                .iter()
                .map(|v| 3.0 * v)
                .collect();
            let xt = gpu.upload_f32(&x, &[x.len()], "x").unwrap();
            let out = gpu.zeros(Elem::F16, &[tokens * cols], "f16 rows").unwrap();
            let norm_form = matches!(
                input,
                gemv::GemvInput::RmsNorm | gemv::GemvInput::RmsNormPlusOne
            );
            let call = ops::GemmCall {
                w: &w,
                x: &xt,
                y: &out,
                tokens,
                x_stride,
                y_stride: 4,
                y_first: 0,
                residual: None,
                bias: None,
                input,
                norm: norm_form.then_some((&nwt, eps)),
            };
            let mut rec = Recorder::new(gpu);
            ops::form_f16_rows(gpu, &mut rec, &call, cols, &out, norm_tokens).unwrap();
            rec.submit().unwrap();
            let got: Vec<f32> = gpu
                .readback(&out)
                .unwrap()
                .chunks_exact(2)
                .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
                .collect();
            for t in 0..tokens {
                let row = &x[t * x_stride..(t + 1) * x_stride];
                let want = input.reference(row, &[], &nw, eps, cols);
                for (k, want) in want.iter().enumerate() {
                    let want = half::f16::from_f32(want.clamp(-65504.0, 65504.0)).to_f32();
                    let got = got[t * cols + k];
                    // One f16 rounding of values the GPU formed in f32 (its own exp and sums).
                    assert!(
                        (got - want).abs() <= 1e-3 * want.abs() + 1e-6,
                        "{input:?} {tokens} tokens, {cols} columns, {norm_tokens} a workgroup: row {t} \
                         column {k}: {got} against {want}"
                    );
                }
            }
            // Refused: a norm form without its weights, another form with them, a width
            // that is not a multiple of 4, int8 blocks.
            let out_cols = if norm_form { cols } else { cols - 2 };
            let bad = ops::GemmCall {
                norm: (!norm_form).then_some((&nwt, eps)),
                ..call
            };
            let mut rec = Recorder::new(gpu);
            let err = ops::form_f16_rows(gpu, &mut rec, &bad, cols, &out, norm_tokens).unwrap_err();
            assert_eq!(err.code(), "BAD_REQUEST", "{input:?}: {err}");
            if !norm_form {
                let err = ops::form_f16_rows(gpu, &mut rec, &call, out_cols, &out, norm_tokens)
                    .unwrap_err();
                assert_eq!(
                    err.code(),
                    "BAD_REQUEST",
                    "{input:?} {out_cols} columns: {err}"
                );
                let q8 = ops::GemmCall {
                    input: gemv::GemvInput::Q8Blocks,
                    ..call
                };
                let err =
                    ops::form_f16_rows(gpu, &mut rec, &q8, cols, &out, norm_tokens).unwrap_err();
                assert_eq!(err.code(), "BAD_REQUEST", "int8 blocks: {err}");
            }
            // Refused: more tokens than X holds rows, or X's row stride below its form's width.
            let long = ops::GemmCall {
                tokens: tokens + 1,
                ..call
            };
            let err =
                ops::form_f16_rows(gpu, &mut rec, &long, cols, &out, norm_tokens).unwrap_err();
            assert_eq!(err.code(), "BAD_REQUEST", "{input:?}, a row past x: {err}");
            let narrow = ops::GemmCall {
                x_stride: input.x_len(cols) - 4,
                ..call
            };
            let err =
                ops::form_f16_rows(gpu, &mut rec, &narrow, cols, &out, norm_tokens).unwrap_err();
            assert_eq!(
                err.code(),
                "BAD_REQUEST",
                "{input:?}, a narrow stride: {err}"
            );
        }
    }
}

/// The tensor-core GEMM on the norm forms (RMSNorm, and with 1 + w): its f16 input rows
/// formed and normed by their own pass, against the CPU — Q4_K, Q6_K and F16 weights, batches
/// of 24, 40 and 130 tokens (the 32-, 64- and 128-token tiles), unsplit and split 3 ways.
#[test]
fn coop_gemm_norms_its_f16_input_rows() {
    let Some(gpu) = support::gpu() else { return };
    if !support::has_coop_f16(&gpu) {
        return;
    }
    let mut c = 0;
    for ty in [GgmlType::Q4K, GgmlType::Q6K, GgmlType::F16] {
        for (tokens, rows) in [(24usize, 77usize), (40, 130), (130, 65)] {
            let tile = ops::coop_tile(ty, rows, tokens);
            for input in [gemv::GemvInput::RmsNorm, gemv::GemvInput::RmsNormPlusOne] {
                let path = ops::GemmPath::Coop {
                    tile,
                    splits: [1, 3][c % 2],
                    x16: true,
                    stream: 0,
                };
                check_gemm_case(
                    &gpu,
                    GemmCase {
                        ty,
                        rows,
                        cols: 512,
                        tokens,
                        input,
                        add: [GemmAdd::Residual, GemmAdd::Nothing][c / 2 % 2],
                        x_pad: if c % 3 == 0 { 3 } else { 4 },
                        y_first: 3,
                        on: Some((path, u64::MAX)),
                    },
                );
                c += 1;
            }
        }
    }
}

/// The few-row kernels' variants under test: (threads, rows, rows per thread, tokens per pass,
/// tokens) — 1 to 256 lanes per row group, several passes, the last one partial; 13 tokens at
/// most 6 per pass run as passes of 5, 5 and 3 (both accumulators of a row); 4 rows a thread
/// over 8 and 4 lanes (a subgroup's transposed reduction stopping with 2 and 4 sums a lane).
const FEW_ROW_VARIANTS: [(u32, u32, u32, u32, usize); 10] = [
    (32, 1, 1, 8, 5),
    (64, 4, 4, 5, 11),
    (256, 32, 4, 8, 8),
    (128, 8, 2, 3, 7),
    (32, 16, 2, 1, 3),
    (256, 1, 1, 4, 13),
    (64, 32, 1, 2, 2),
    (128, 4, 2, 6, 13),
    (32, 16, 4, 8, 9),
    (32, 32, 4, 3, 7),
];

/// The few-row kernel's variants: both reductions (subgroups where the adapter has them) at
/// tunables from 1 to 256 lanes per row group and 1, 2 and 4 rows per thread, passes of 1 to 8
/// tokens (more tokens than a pass: several passes, the last one partial), every weight
/// type, the weights bound in row chunks of a few rows each.
#[test]
fn few_row_gemm_variants_and_row_chunks_match_cpu() {
    let Some(gpu) = support::gpu() else { return };
    for v in few_row_variant_cases(&gpu, GgmlType::ALL, 256) {
        // Case c: every input form with every addition over 9 cases, the shapes in turn.
        let path = ops::GemmPath::FewRows(v.t);
        let case = GemmCase::cycled(
            v.ty,
            (v.rows, v.cols, v.tokens),
            v.c,
            5,
            (path, v.chunk_bytes),
        );
        check_gemm_case(&gpu, case);
    }
}

/// One case of a few-row variants test: case number `c`, the weight type, the tunables, the
/// tokens, and a matrix of `rows × cols` bound in chunks of `chunk_bytes` (whole rows at
/// aligned byte offsets, a few rows each).
struct VariantCase {
    c: usize,
    ty: GgmlType,
    t: gpuport_kernels::gemm::FewRowTunables,
    tokens: usize,
    rows: usize,
    cols: usize,
    chunk_bytes: u64,
}

/// The few-row variants tests' cases over `types`: both reductions (subgroups where the
/// adapter has them) with [`FEW_ROW_VARIANTS`] in turn, matrices of `cols` columns.
fn few_row_variant_cases(
    gpu: &gpuport_runtime::Gpu,
    types: impl IntoIterator<Item = GgmlType>,
    cols: usize,
) -> Vec<VariantCase> {
    let subgroups = support::has_subgroups(gpu);
    let max_wg = gpu.limits().max_compute_invocations_per_workgroup;
    let mut out = Vec::new();
    for ty in types {
        for reduction in Reduction::ALL {
            if reduction == Reduction::Subgroup && !subgroups {
                continue;
            }
            let c = out.len();
            let (wg, rows_wg, rpt, nx, tokens) = FEW_ROW_VARIANTS[c % FEW_ROW_VARIANTS.len()];
            let t = gpuport_kernels::gemm::FewRowTunables {
                wg,
                rows: rows_wg,
                rpt,
                nx,
                reduction,
            };
            assert!(t.is_valid() && t.wg <= max_wg, "{t:?}");
            // Chunks start on aligned byte offsets: whole multiples of `step` rows.
            let row_bytes = ty.row_bytes(cols).unwrap() as u64;
            let step = chunk_step(gpu, ty, row_bytes);
            let rows = (3 * step as usize).max(37) + 5;
            let chunk_rows = step * (rows as u64 / step / 3).max(1);
            out.push(VariantCase {
                c,
                ty,
                t,
                tokens,
                rows,
                cols,
                chunk_bytes: chunk_rows * row_bytes,
            });
        }
    }
    out
}

/// Batched decode's GEMMs on int8 input blocks (`gemm_rows_q8.wgsl`) through `ops::gemm` as
/// the LLM calls them, for every type with int8 kernels: 1 to 9, 13, 31 and
/// `FEW_ROWS_MAX` tokens at the device's default tunables, on 37 rows of 512 columns, with a
/// residual, a bias and neither, X rows of blocks padded by 4 or 8 words and Y written from
/// column 3 of wider rows. The reference is the f64 product with the values the blocks stand
/// for.
#[test]
fn few_row_int8_gemm_matches_cpu_for_every_type() {
    use gpuport_kernels::gemm;
    let Some(gpu) = support::gpu() else { return };
    let adds = [GemmAdd::Residual, GemmAdd::Bias, GemmAdd::Nothing];
    let q8_types = GgmlType::ALL
        .into_iter()
        .filter(|t| gemv::takes_q8_input(*t));
    for (i, ty) in q8_types.enumerate() {
        for tokens in (1..=9).chain([13, 31, gemm::FEW_ROWS_MAX]) {
            let case = GemmCase {
                ty,
                rows: 37,
                cols: 512,
                tokens,
                input: gemv::GemvInput::Q8Blocks,
                add: adds[(i + 2 * tokens) % 3],
                x_pad: 4 * (1 + (i + tokens) % 2),
                y_first: 3,
                on: None,
            };
            check_gemm_case(&gpu, case);
        }
    }
}

/// The int8 few-row kernel's variants: both reductions (subgroups where the adapter has them),
/// 1 to 256 lanes per row group, 1, 2 and 4 rows per thread (rows not a multiple of them),
/// passes of 1 to 16 tokens (several passes, the last one partial), every type with int8
/// kernels, the weights bound in row chunks of a few rows each. Mixing int8 blocks with the
/// float paths, or weights without int8 kernels, is refused.
#[test]
fn few_row_int8_gemm_variants_and_row_chunks_match_cpu() {
    use gpuport_kernels::gemm::FewRowTunables;
    let Some(gpu) = support::gpu() else { return };
    let q8_types = GgmlType::ALL
        .into_iter()
        .filter(|t| gemv::takes_q8_input(*t));
    for v in few_row_variant_cases(&gpu, q8_types, 512) {
        let case = GemmCase {
            ty: v.ty,
            rows: v.rows,
            cols: v.cols,
            tokens: v.tokens,
            input: gemv::GemvInput::Q8Blocks,
            add: [GemmAdd::Bias, GemmAdd::Residual, GemmAdd::Nothing][v.c % 3],
            x_pad: 4,
            y_first: 5,
            on: Some((ops::GemmPath::FewRowsQ8(v.t), v.chunk_bytes)),
        };
        check_gemm_case(&gpu, case);
    }
    // Passes of 9 to 16 tokens (the third and fourth quads, partial and full): 9 as one pass,
    // 20 as 10 + 10, 37 as 13 + 13 + 11, 64 as four of 16; 1, 2 and 4 rows per thread.
    let limit = gpu.limits().max_storage_buffer_binding_size;
    let subgroups = support::has_subgroups(&gpu);
    let q8_types = GgmlType::ALL
        .into_iter()
        .filter(|t| gemv::takes_q8_input(*t));
    for (i, ty) in q8_types.enumerate() {
        for (j, (nx, tokens)) in [(9, 9), (12, 20), (16, 37), (16, 64)]
            .into_iter()
            .enumerate()
        {
            let rpt = [1, 2, 4][(i + j) % 3];
            let base = FewRowTunables::default_for(ty, subgroups);
            let t = FewRowTunables {
                wg: 128,
                rows: 8 * rpt,
                rpt,
                nx,
                ..base
            };
            assert!(t.is_valid_q8() && !t.is_valid(), "{t:?}");
            let case = GemmCase {
                ty,
                rows: 37,
                cols: 512,
                tokens,
                input: gemv::GemvInput::Q8Blocks,
                add: [GemmAdd::Bias, GemmAdd::Residual, GemmAdd::Nothing][(i + j) % 3],
                x_pad: 4,
                y_first: 2,
                on: Some((ops::GemmPath::FewRowsQ8(t), limit)),
            };
            check_gemm_case(&gpu, case);
        }
    }
    // Refusals: int8 blocks on the float kernel, f32 rows on the int8 one, F16 weights with
    // int8 blocks, a block stride that is no whole number of vec4s.
    let t = FewRowTunables::default_for(GgmlType::Q8_0, false);
    let r = Int8Refusals::new(&gpu);
    let (q8, plain) = (gemv::GemvInput::Q8Blocks, gemv::GemvInput::Plain);
    r.assert_refused(
        &gpu,
        &[
            (r.call(&r.q8_0, q8, 12), ops::GemmPath::FewRows(t)),
            (r.call(&r.q8_0, plain, 32), ops::GemmPath::FewRowsQ8(t)),
            (r.call(&r.f16, q8, 12), ops::GemmPath::FewRowsQ8(t)),
            (r.call(&r.q8_0, q8, 14), ops::GemmPath::FewRowsQ8(t)),
        ],
    );
    // `takes_q8_rows`: the int8 types, few rows — or, where the int8 tiled kernel takes
    // every count (a CPU adapter), any number.
    assert!(ops::takes_q8_rows(&gpu, &r.q8_0, 8));
    assert!(!ops::takes_q8_rows(&gpu, &r.f16, 8));
    let many = gpuport_kernels::gemm::FEW_ROWS_MAX + 1;
    assert_eq!(
        ops::takes_q8_rows(&gpu, &r.q8_0, many),
        ops::q8_tiles_min_tokens(&gpu) <= many && !ops::takes_coop_rows(&gpu, many)
    );
    assert_eq!(ops::takes_q8_rows(&gpu, &r.q8_0, 512), gpu.is_cpu());
}

/// The int8 tiled GEMM (`gemm_tiles_q8.wgsl`) against the CPU for every type with int8
/// kernels: tiles of 8 to 64 threads along the rows and 1 to 8 along the tokens, 1, 2 and 4
/// rows per thread (rows not a multiple of a tile's), 1 to 16 tokens per thread (token counts
/// that leave the last tile partial, and more tokens than one tile row holds), unsplit and
/// split 2 or 3 ways along K (splits of unequal length), a residual, a bias and neither, the
/// weights whole or bound in row chunks of a few rows each. `ops::gemm` takes the kernel from
/// `GPUPORT_Q8_TILES_MIN_TOKENS` rows; int8 blocks are its only input, its tiles and splits
/// are checked.
#[test]
fn tiled_int8_gemm_matches_cpu_for_every_type() {
    use gpuport_kernels::gemm::Q8Tile;
    let Some(gpu) = support::gpu() else { return };
    let limit = gpu.limits().max_storage_buffer_binding_size;
    let max_wg = gpu.limits().max_compute_invocations_per_workgroup;
    // (threads along rows, along tokens, rows per thread, tokens per thread, tokens, splits)
    let tiles: [(u32, u32, u32, u32, usize, u32); 9] = [
        (32, 1, 4, 8, 8, 1),
        (8, 4, 2, 5, 20, 2),
        (16, 2, 1, 16, 37, 3),
        (64, 4, 4, 3, 13, 1),
        (32, 8, 2, 8, 64, 2),
        (8, 1, 1, 1, 3, 1),
        (32, 2, 4, 12, 100, 3),
        (16, 8, 4, 9, 64, 1),
        (64, 2, 2, 13, 26, 2),
    ];
    let q8_types = GgmlType::ALL
        .into_iter()
        .filter(|t| gemv::takes_q8_input(*t));
    let mut c = 0;
    for ty in q8_types {
        for _ in 0..3 {
            let (rg, tg, rpt, nx, tokens, splits) = tiles[c % tiles.len()];
            let tile = Q8Tile { rg, tg, rpt, nx };
            assert!(tile.is_valid() && tile.threads() <= max_wg, "{tile:?}");
            let cols = 512;
            // Whole weights, or chunks on aligned byte offsets of a few rows each.
            let row_bytes = ty.row_bytes(cols).unwrap() as u64;
            let step = chunk_step(&gpu, ty, row_bytes);
            let rows = (3 * step as usize).max(37) + 5 + 64 * (c % 2);
            let chunk_bytes = if c % 2 == 0 {
                limit
            } else {
                step * (rows as u64 / step / 3).max(1) * row_bytes
            };
            let path = ops::GemmPath::TilesQ8 { tile, splits };
            let case = GemmCase {
                ty,
                rows,
                cols,
                tokens,
                input: gemv::GemvInput::Q8Blocks,
                add: [GemmAdd::Bias, GemmAdd::Residual, GemmAdd::Nothing][c % 3],
                x_pad: 4 * (1 + c % 2),
                y_first: c % 4,
                on: Some((path, chunk_bytes)),
            };
            check_gemm_case(&gpu, case);
            c += 1;
        }
    }
    // Refusals: f32 rows on the int8 tiled kernel, int8 blocks of F16 weights, a tile that is
    // no variant, more splits than units of columns, none.
    let r = Int8Refusals::new(&gpu);
    let q8 = gemv::GemvInput::Q8Blocks;
    let tile = Q8Tile::for_tokens(2, 32);
    let tiles = |tile, splits| ops::GemmPath::TilesQ8 { tile, splits };
    r.assert_refused(
        &gpu,
        &[
            (r.call(&r.q8_0, gemv::GemvInput::Plain, 32), tiles(tile, 1)),
            (r.call(&r.f16, q8, 12), tiles(tile, 1)),
            (r.call(&r.q8_0, q8, 12), tiles(Q8Tile { rpt: 3, ..tile }, 1)),
            (r.call(&r.q8_0, q8, 12), tiles(tile, 2)),
            (r.call(&r.q8_0, q8, 12), tiles(tile, 0)),
        ],
    );
    // `ops::gemm`'s choice between the int8 kernels.
    let from = ops::q8_tiles_min_tokens(&gpu);
    for tokens in [1usize, 16, 40, 64] {
        let c = ops::GemmCall {
            tokens,
            ..r.call(&r.q8_0, q8, 12)
        };
        let path = ops::gemm_path(&gpu, &c, gpuport_kernels::gemm::GemmTile::DEFAULT).unwrap();
        assert!(path.reads_q8_blocks(), "{path:?}");
        assert_eq!(
            matches!(path, ops::GemmPath::TilesQ8 { .. }),
            tokens >= from,
            "{tokens} tokens: {path:?}"
        );
    }
}

/// Tiny operands for the int8 GEMMs' refusals: a 2 × 32 Q8_0 matrix, a 2 × 32 F16 one (no int8
/// kernels), X and Y of 64 elements.
struct Int8Refusals {
    q8_0: gpuport_runtime::Tensor,
    f16: gpuport_runtime::Tensor,
    x: gpuport_runtime::Tensor,
    y: gpuport_runtime::Tensor,
}

impl Int8Refusals {
    fn new(gpu: &gpuport_runtime::Gpu) -> Self {
        let upload =
            |bytes: &[u8], ty, name| gpu.upload(bytes, Elem::Ggml(ty), &[2, 32], name).unwrap();
        Int8Refusals {
            q8_0: upload(&[0u8; 2 * 34], GgmlType::Q8_0, "w"),
            f16: upload(&[0u8; 128], GgmlType::F16, "w16"),
            x: gpu.zeros_f32(&[64], "x").unwrap(),
            y: gpu.zeros_f32(&[64], "y").unwrap(),
        }
    }

    /// Two tokens over `w`, `input` rows `x_stride` apart.
    fn call<'a>(
        &'a self,
        w: &'a gpuport_runtime::Tensor,
        input: gemv::GemvInput,
        x_stride: usize,
    ) -> ops::GemmCall<'a> {
        ops::GemmCall {
            w,
            x: &self.x,
            y: &self.y,
            tokens: 2,
            x_stride,
            y_stride: 2,
            y_first: 0,
            residual: None,
            bias: None,
            input,
            norm: None,
        }
    }

    /// Each call on its path is a shape error.
    fn assert_refused(
        &self,
        gpu: &gpuport_runtime::Gpu,
        bad: &[(ops::GemmCall<'_>, ops::GemmPath)],
    ) {
        let limit = gpu.limits().max_storage_buffer_binding_size;
        for &(c, path) in bad {
            let mut rec = Recorder::new(gpu);
            let e = ops::gemm_on(gpu, &mut rec, c, path, limit);
            assert!(
                matches!(e, Err(gpuport_runtime::GpuError::Shape(_))),
                "{:?} {path:?}: {e:?}",
                c.input
            );
        }
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// Rows of `ty` (`row_bytes` each) that a chunk of a weight binding steps by: its byte size a
/// multiple of the adapter's offset alignment and of the type's GPU layout group (Q6_K's 1,680
/// bytes), as `ops::weight_chunks` starts chunks.
fn chunk_step(gpu: &gpuport_runtime::Gpu, ty: GgmlType, row_bytes: u64) -> u64 {
    let offsets = u64::from(gpu.limits().min_storage_buffer_offset_alignment);
    let group = gpuport_kernels::quant::gpu_group_bytes(ty) as u64;
    let align = offsets / gcd(offsets, group) * group;
    align / gcd(align, row_bytes)
}

/// The weight types the tensor-core test checks: every type, or only those named in
/// `GPUPORT_KVC_TYPES` (ggml names, comma-separated: `q4_K,q6_K`), for a device call short of
/// time. A name that is no type panics rather than checking nothing.
fn checked_types() -> Vec<GgmlType> {
    let Ok(names) = std::env::var("GPUPORT_KVC_TYPES") else {
        return GgmlType::ALL.to_vec();
    };
    names
        .split(',')
        .map(|n| {
            GgmlType::from_name(n.trim())
                .unwrap_or_else(|| panic!("GPUPORT_KVC_TYPES: {n:?} is no ggml type"))
        })
        .collect()
}

/// The tensor-core GEMM (where the adapter has f16 cooperative matrices: not lavapipe; run on
/// the H200 by the command in docs/performance.md) against the CPU for every weight type:
/// token counts past one tile and ragged (65, 130) and inside one (40: batched decode's rows
/// from the 32-row threshold), rows ragged across row tiles (37, 53, 200),
/// every tile shape, the plain and both GLU inputs, a residual, a bias and neither, X rows
/// on and off vec4 boundaries, Y written from column 3, the weights bound in row chunks,
/// f32/f16 matrices whose width leaves a partial 32-column chunk, the columns split along K
/// 1, 3 and 6 ways (short and odd last splits included), every way of fetching weights
/// (each Q4_K and Q6_K case every way its tile takes, which must give the same bits), Q4_K's
/// chunks of 64 columns (unsplit, the same bits as chunks of 32), and the tiles of 32 rows a
/// subgroup (split or not, the same bits as 64 rows a subgroup).
#[test]
fn coop_gemm_matches_cpu_for_every_type() {
    use gpuport_kernels::gemm;
    let Some(gpu) = support::gpu() else { return };
    if !support::has_coop_f16(&gpu) {
        return;
    }
    let mut n = 0;
    let mut streamed = 0;
    for ty in checked_types() {
        let tiles = ops::coop_tiles(&gpu, ty);
        let cols = match ty {
            GgmlType::F32 => 332,
            GgmlType::F16 => 328,
            _ => 512,
        };
        // 40 tokens: a batched decode step's rows between the threshold (32) and 64, one
        // partial token tile.
        let shapes = [
            (65, 37),
            (130, 200),
            (gemm::FEW_ROWS_MAX + 1, 129),
            (40, 53),
        ];
        // Every shape, and every tile at least once; each 32-token tile also on a batch
        // inside one tile (24 tokens: its second subgroup's fragment half past the rows).
        let mut cases: Vec<_> = (0..shapes.len().max(tiles.len()))
            .map(|i| (shapes[i % shapes.len()], tiles[i % tiles.len()]))
            .collect();
        cases.extend(
            tiles
                .iter()
                .filter(|t| t.sub_tokens == 16)
                .map(|&t| ((24, 77), t)),
        );
        for ((tokens, rows), tile) in cases {
            let c = n;
            n += 1;
            let row_bytes = ty.row_bytes(cols).unwrap() as u64;
            let step = chunk_step(&gpu, ty, row_bytes);
            let chunk_rows = step * (rows as u64 / step / 2).max(1);
            let max_binding = if c % 2 == 0 {
                chunk_rows * row_bytes
            } else {
                gpu.limits().max_storage_buffer_binding_size
            };
            // Unsplit, and split along K 3 and 6 ways (16 chunks of the 512 columns:
            // 6 + 6 + 4 and 3 + 3 + 3 + 3 + 3 + 1, odd counts for the two-chunks-ahead loop;
            // f32/f16 11 chunks: 4 + 4 + 3 and 2 + 2 + 2 + 2 + 2 + 1; Q4_K's 8 chunks of 64
            // columns: 3 + 3 + 2 and 2 + 2 + 2 + 2 + 0 + 0, empty splits that fetch nothing
            // past the matrix and add zeros).
            let splits = [1, 3, 6][(c + c / 3) % 3];
            // Cases cycle through the ways of fetching weights (`CoopTile::fetch`) each tile
            // takes, and the two decodes (`CoopTile::decode`: the same values either way).
            let fetch = tile.fetches();
            let tile = gemm::CoopTile {
                fetch: fetch[(c + c / 4) % fetch.len()],
                decode: gemm::CoopDecode::ALL[c / 2 % 2],
                ..tile
            };
            let path = ops::GemmPath::Coop {
                tile,
                splits,
                x16: false,
                stream: 0,
            };
            let case = GemmCase::cycled(ty, (rows, cols, tokens), c, 3, (path, max_binding));
            let formed_here = check_gemm_case(&gpu, case);
            // The input formed and rounded to f16 by its own pass first: the same operands,
            // the same order, the same bits.
            let path = ops::GemmPath::Coop {
                tile,
                splits,
                x16: true,
                stream: 0,
            };
            let on = Some((path, max_binding));
            let formed_first = check_gemm_case(&gpu, GemmCase { on, ..case });
            // Where two results first differ in their bits.
            let differ = |a: &[f32], b: &[f32]| {
                a.iter()
                    .zip(b)
                    .position(|(a, b)| a.to_bits() != b.to_bits())
            };
            let diff = differ(&formed_here, &formed_first);
            assert!(
                diff.is_none(),
                "{case:?}: f16 input rows differ at {diff:?}"
            );
            // `tile` instead of this case's, unsplit or split as it is: the same bits.
            let same_bits = |tile: gemm::CoopTile, what: &str| {
                let path = ops::GemmPath::Coop {
                    tile,
                    splits,
                    x16: false,
                    stream: 0,
                };
                let on = Some((path, max_binding));
                let got = check_gemm_case(&gpu, GemmCase { on, ..case });
                let diff = differ(&formed_here, &got);
                assert!(diff.is_none(), "{case:?}: {what} differs at {diff:?}");
            };
            // Every way of fetching a run type's weights decodes the same values and sums
            // them in the same order: the same bits as the way this case took.
            if gemm::coop_runs(ty) {
                for other in fetch.into_iter().filter(|&f| f != tile.fetch) {
                    let what = format!("fetching {other:?} (not {:?})", tile.fetch);
                    same_bits(
                        gemm::CoopTile {
                            fetch: other,
                            ..tile
                        },
                        &what,
                    );
                }
            }
            // Integers to floats by conversion or through their bits: the same values.
            if gemm::coop_bits(ty) {
                let other = gemm::CoopDecode::ALL[1 - c / 2 % 2];
                let what = format!("decoding {other:?} (not {:?})", tile.decode);
                same_bits(
                    gemm::CoopTile {
                        decode: other,
                        ..tile
                    },
                    &what,
                );
            }
            // 32 rows a subgroup: each output's fragments are multiplied in the same order
            // as at 64 (only which subgroup holds them moves), split or not: the same bits.
            if tile.sub_rows == 32 {
                let wide = gemm::CoopTile {
                    wn: 2,
                    sub_rows: 64,
                    ..tile
                };
                same_bits(wide, "64 rows a subgroup");
            }
            // Chunks of 64 columns multiply the same fragments in the same order as chunks
            // of 32 (only the barriers move): unsplit, the same bits.
            let narrow = gemm::CoopTile { kc: 32, ..tile };
            if tile.kc > 32 && splits == 1 && narrow.takes(ty) {
                same_bits(narrow, "32 columns a chunk");
            }
            // Streamed (stream-K), every third case: the tiles' chunks in equal runs, 3, 7 or
            // 13 workgroups (runs that start, end, or fall inside a tile; tiles shared by up
            // to several runs, the slots after a tile's last run zeroed), against the CPU.
            let dims = (rows, cols, tokens);
            let stream = [3, 7, 13][c / 3 % 3];
            let slots = ops::coop_stream_slots(tile, dims, stream).filter(|_| c % 3 == 0);
            if let Some(slots) = slots {
                let path = ops::GemmPath::Coop {
                    tile,
                    splits: slots,
                    x16: true,
                    stream,
                };
                let on = Some((path, u64::MAX));
                check_gemm_case(&gpu, GemmCase { on, ..case });
                streamed += 1;
            }
        }
    }
    assert!(streamed > 0, "none of {n} cases streamed");
    // The path `ops::gemm` takes for prompts here, and for f32 rows from `coop_min_tokens`.
    let path = auto_gemm_path(&gpu, 600);
    assert!(
        matches!(path, ops::GemmPath::Coop { x16: true, .. }),
        "{path:?}"
    );
    let from = ops::coop_min_tokens();
    assert!(matches!(
        auto_gemm_path(&gpu, from.max(1)),
        ops::GemmPath::Coop { .. }
    ));
    if from > 1 {
        assert!(matches!(
            auto_gemm_path(&gpu, from - 1),
            ops::GemmPath::FewRows(_)
        ));
    }
}

/// The path `ops::gemm` takes for a 4 × 32 f32 matrix times `tokens` rows.
fn auto_gemm_path(gpu: &gpuport_runtime::Gpu, tokens: usize) -> ops::GemmPath {
    let w = gpu.zeros_f32(&[4, 32], "w").unwrap();
    let x = gpu.zeros_f32(&[32 * tokens], "x").unwrap();
    let probe = ops::GemmCall {
        w: &w,
        x: &x,
        y: &x,
        tokens,
        x_stride: 32,
        y_stride: 32,
        y_first: 0,
        residual: None,
        bias: None,
        input: gemv::GemvInput::Plain,
        norm: None,
    };
    ops::gemm_path(gpu, &probe, gpuport_kernels::gemm::GemmTile::DEFAULT).unwrap()
}

/// A GEMM followed by the normed f16 rows of its output (`ops::gemm_norm_rows`: where the GEMM
/// splits along K, the split sum and the rows in one pass, `gemm_x16.wgsl` SRC 1) leaves the
/// same bits in Y and in the rows as the GEMM and then the f16 pass over Y (`ops::gemm_on`,
/// `ops::form_f16_rows`), whose rows are held to the CPU's norm of that Y here too — split 1
/// to 3 ways (the int8 tiled kernel, and on tensor cores where the adapter has them), with and
/// without a residual, both norm forms, 5 and 37 tokens, Y rows wider than the matrix. A GEMM
/// reading those rows (`ops::gemm_f16_rows`) gives the bits of the GEMM that forms them
/// itself. Refused: rows of a GEMM's output from a column past the first, and another form.
#[test]
fn gemm_norm_rows_match_the_gemm_then_its_f16_pass() {
    let Some(gpu) = support::gpu() else { return };
    use gpuport_kernels::gemm::{GemmTile, Q8Tile};
    use gpuport_runtime::Tensor;
    let (ty, rows, cols) = (GgmlType::Q8_0, 328, 512);
    let raw = random_blocks(
        ty,
        rows * ty.row_bytes(cols).unwrap() / ty.block_bytes(),
        71,
    );
    let w = gpu
        .upload(&raw, Elem::Ggml(ty), &[rows, cols], "w")
        .unwrap();
    let nw: Vec<f32> = support::random_f32(rows, 72)
        .iter()
        .map(|v| 1.0 + 0.5 * v)
        .collect();
    let nwt = gpu.upload_f32(&nw, &[rows], "norm weights").unwrap();
    let eps = 1e-5;
    let f16s = |t: &Tensor| -> Vec<u16> {
        gpu.readback(t)
            .unwrap()
            .chunks_exact(2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
            .collect()
    };
    for (case, tokens) in [5usize, 37].into_iter().enumerate() {
        let y_stride = rows + 4;
        let x = support::random_f32(tokens * cols, 73 + case as u64);
        let xt = gpu.upload_f32(&x, &[x.len()], "x").unwrap();
        let words = ops::Q8Blocks::words(cols);
        let blocks = gpu.zeros_f32(&[tokens * words], "x blocks").unwrap();
        let mut rec = Recorder::new(&gpu);
        let q8 = ops::Q8Blocks {
            x: &xt,
            rows: tokens,
            width: cols,
            gate: None,
            blocks: &blocks,
        };
        ops::q8_blocks(&gpu, &mut rec, q8).unwrap();
        rec.submit().unwrap();
        let res = support::random_f32(tokens * y_stride, 74 + case as u64);
        let rt = gpu.upload_f32(&res, &[res.len()], "residual").unwrap();
        let tile = Q8Tile::for_tokens(tokens, gpu.subgroup_width());
        let mut paths: Vec<(ops::GemmPath, bool)> = (1..=3)
            .map(|splits| (ops::GemmPath::TilesQ8 { tile, splits }, true))
            .collect();
        if gpu.has_coop_f16() {
            let t = ops::coop_tile(ty, rows, tokens);
            paths.extend((1..=3).map(|splits| {
                (
                    ops::GemmPath::Coop {
                        tile: t,
                        splits,
                        x16: true,
                        stream: 0,
                    },
                    false,
                )
            }));
        }
        for (i, (path, q8)) in paths.into_iter().enumerate() {
            let form = [gemv::GemvInput::RmsNorm, gemv::GemvInput::RmsNormPlusOne][i % 2];
            let residual = (i + case) % 3 != 2;
            let fresh = |what| gpu.zeros_f32(&[tokens * y_stride], what).unwrap();
            let (y_ref, y) = (fresh("y, reference"), fresh("y"));
            let out = |what| gpu.zeros(Elem::F16, &[tokens * rows], what).unwrap();
            let (rows_ref, rows16) = (out("rows, reference"), out("rows"));
            let call = |y| ops::GemmCall {
                w: &w,
                x: if q8 { &blocks } else { &xt },
                y,
                tokens,
                x_stride: if q8 { words } else { cols },
                y_stride,
                y_first: 0,
                residual: residual.then_some(&rt),
                bias: None,
                input: if q8 {
                    gemv::GemvInput::Q8Blocks
                } else {
                    gemv::GemvInput::Plain
                },
                norm: None,
            };
            let limit = gpu.limits().max_storage_buffer_binding_size;
            let mut rec = Recorder::new(&gpu);
            ops::gemm_on(&gpu, &mut rec, call(&y_ref), path, limit).unwrap();
            let over_y = ops::GemmCall {
                x: &y_ref,
                x_stride: y_stride,
                input: form,
                norm: Some((&nwt, eps)),
                residual: None,
                ..call(&y_ref)
            };
            ops::form_f16_rows(&gpu, &mut rec, &over_y, rows, &rows_ref, 4).unwrap();
            let then = ops::NormRows {
                form,
                norm: (&nwt, eps),
                out: &rows16,
            };
            ops::gemm_norm_rows_on(&gpu, &mut rec, call(&y), path, limit, then).unwrap();
            rec.submit().unwrap();
            let (want_y, got_y) = (
                gpu.readback_f32(&y_ref).unwrap(),
                gpu.readback_f32(&y).unwrap(),
            );
            let what = format!("{path:?}, {tokens} tokens, {form:?}, residual {residual}");
            assert!(
                want_y
                    .iter()
                    .zip(&got_y)
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "{what}: Y differs"
            );
            let (want, got) = (f16s(&rows_ref), f16s(&rows16));
            assert_eq!(want, got, "{what}: the rows differ");
            // The rows against the CPU's norm of that Y.
            for t in 0..tokens {
                let row = &got_y[t * y_stride..t * y_stride + rows];
                let cpu = form.reference(row, &[], &nw, eps, rows);
                for (k, c) in cpu.iter().enumerate() {
                    let c = half::f16::from_f32(c.clamp(-65504.0, 65504.0)).to_f32();
                    let g = half::f16::from_bits(got[t * rows + k]).to_f32();
                    assert!(
                        (g - c).abs() <= 1e-3 * c.abs() + 1e-6,
                        "{what}: row {t} column {k}: {g} against {c}"
                    );
                }
            }
            // The next GEMM on those rows: the bits of the one that norms Y itself.
            let next = gpu
                .upload_f32(&support::random_f32(64 * rows, 75), &[64, rows], "next w")
                .unwrap();
            if !q8 && ops::takes_norm_rows(&gpu, &next, tokens) {
                let (z_ref, z) = (fresh("z, reference"), fresh("z"));
                let normed = |z| ops::GemmCall {
                    w: &next,
                    x: &y_ref,
                    y: z,
                    tokens,
                    x_stride: y_stride,
                    y_stride,
                    y_first: 0,
                    residual: None,
                    bias: None,
                    input: form,
                    norm: Some((&nwt, eps)),
                };
                let mut rec = Recorder::new(&gpu);
                ops::gemm(&gpu, &mut rec, normed(&z_ref), GemmTile::DEFAULT).unwrap();
                ops::gemm_f16_rows(&gpu, &mut rec, normed(&z), GemmTile::DEFAULT, &rows16).unwrap();
                rec.submit().unwrap();
                let (a, b) = (
                    gpu.readback_f32(&z_ref).unwrap(),
                    gpu.readback_f32(&z).unwrap(),
                );
                assert!(
                    a.iter().zip(&b).all(|(a, b)| a.to_bits() == b.to_bits()),
                    "{what}: the next GEMM on the formed rows differs"
                );
            }
        }
        // Refused: rows of a GEMM's output from its second column on, and a form not a norm.
        let y = gpu.zeros_f32(&[tokens * y_stride], "y").unwrap();
        let out = gpu.zeros(Elem::F16, &[tokens * rows], "rows").unwrap();
        let call = ops::GemmCall {
            w: &w,
            x: &blocks,
            y: &y,
            tokens,
            x_stride: words,
            y_stride,
            y_first: 0,
            residual: Some(&rt),
            bias: None,
            input: gemv::GemvInput::Q8Blocks,
            norm: None,
        };
        let path = ops::GemmPath::TilesQ8 { tile, splits: 2 };
        let limit = gpu.limits().max_storage_buffer_binding_size;
        let mut rec = Recorder::new(&gpu);
        for (y_first, form) in [(1, gemv::GemvInput::RmsNorm), (0, gemv::GemvInput::Plain)] {
            let then = ops::NormRows {
                form,
                norm: (&nwt, eps),
                out: &out,
            };
            let bad = ops::GemmCall { y_first, ..call };
            let err = ops::gemm_norm_rows_on(&gpu, &mut rec, bad, path, limit, then).unwrap_err();
            assert_eq!(err.code(), "BAD_REQUEST", "{y_first} {form:?}: {err}");
        }
    }
}
