//! The recorder keeps one compute pass open until a flush, and counts what it issued; large
//! matrices are split across storage bindings transparently.

#![allow(clippy::unwrap_used)]

use gpuport_testing as support;

use gpuport_kernels::gemv::{self, GemvTunables};
use gpuport_kernels::quant::{GgmlType, random_blocks};
use gpuport_runtime::{Elem, Recorder, RecorderStats, ops};

#[test]
fn a_forward_shaped_sequence_is_one_pass_per_flush() {
    let Some(gpu) = support::gpu() else { return };
    let t = GemvTunables::default_for(gpu.has_subgroups());
    let n = 256;
    let w = gpu
        .upload(
            &random_blocks(GgmlType::Q8_0, n * n / 32, 3),
            Elem::Ggml(GgmlType::Q8_0),
            &[n, n],
            "w",
        )
        .unwrap();
    let a = gpu
        .upload_f32(&support::random_f32(n, 5), &[n], "a")
        .unwrap();
    let b = gpu.zeros_f32(&[n], "b").unwrap();
    let mut rec = Recorder::new(&gpu);
    // 20 dependent kernels: a -> b -> a -> ... (each reads the previous one's output).
    for i in 0..20 {
        let (src, dst) = if i % 2 == 0 { (&a, &b) } else { (&b, &a) };
        ops::gemv(&gpu, &mut rec, &w, src, dst, t).unwrap();
    }
    assert_eq!(
        rec.stats(),
        RecorderStats {
            dispatches: 20,
            passes: 1,
            submits: 0
        }
    );
    rec.submit().unwrap();
    assert_eq!(
        rec.stats(),
        RecorderStats {
            dispatches: 20,
            passes: 1,
            submits: 1
        }
    );
    // A copy is a flush point: the next dispatch opens a second pass.
    rec.copy(&a.buffer, 0, &b.buffer, 0, 16);
    ops::gemv(&gpu, &mut rec, &w, &a, &b, t).unwrap();
    rec.submit().unwrap();
    assert_eq!(
        rec.stats(),
        RecorderStats {
            dispatches: 21,
            passes: 2,
            submits: 2
        }
    );
    // The chained result equals 20 CPU GEMVs (ordering inside one pass is honoured).
    let raw = random_blocks(GgmlType::Q8_0, n * n / 32, 3);
    let mut v = support::random_f32(n, 5);
    for _ in 0..20 {
        v = gemv::reference(GgmlType::Q8_0, &raw, n, n, &v);
    }
    let mut rec = Recorder::new(&gpu);
    let c = gpu
        .upload_f32(&support::random_f32(n, 5), &[n], "c")
        .unwrap();
    let d = gpu.zeros_f32(&[n], "d").unwrap();
    for i in 0..20 {
        let (src, dst) = if i % 2 == 0 { (&c, &d) } else { (&d, &c) };
        ops::gemv(&gpu, &mut rec, &w, src, dst, t).unwrap();
    }
    rec.submit().unwrap();
    let got = gpu.readback_f32(&c).unwrap();
    for (g, w) in got.iter().zip(&v) {
        assert!((g - w).abs() <= 1e-3 * w.abs().max(1e-3), "{g} vs {w}");
    }
}

#[test]
fn matrices_larger_than_a_binding_are_split() {
    let Some(gpu) = support::gpu() else { return };
    let t = GemvTunables::default_for(gpu.has_subgroups());
    let (rows, cols) = (1000, 96);
    let ty = GgmlType::Q5_0;
    let raw = random_blocks(ty, rows * cols / 32, 11);
    let x = support::random_f32(cols, 12);
    let w = gpu
        .upload(&raw, Elem::Ggml(ty), &[rows, cols], "w")
        .unwrap();
    let xt = gpu.upload_f32(&x, &[cols], "x").unwrap();
    let y = gpu.zeros_f32(&[rows], "y").unwrap();
    let mut rec = Recorder::new(&gpu);
    // 66-byte rows, 4 KiB bindings: many chunks, each starting on an aligned offset.
    ops::gemv_chunked(&gpu, &mut rec, ops::GemvCall::new(&w, &xt, &y), t, 4096).unwrap();
    assert!(rec.stats().dispatches > 10);
    rec.submit().unwrap();
    let got = gpu.readback_f32(&y).unwrap();
    let want = gemv::reference(ty, &raw, rows, cols, &x);
    for (r, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-4 * w.abs().max(1.0),
            "row {r}: {g} vs {w}"
        );
    }
}

#[test]
fn buffers_are_reused_and_pipelines_cached() {
    let Some(gpu) = support::gpu() else { return };
    let t = gpu.zeros_f32(&[1000], "a").unwrap();
    let id = format!("{:?}", t.buffer.as_ref() as *const _);
    gpu.recycle(t);
    assert_eq!(gpu.pool.idle(), 1);
    let again = gpu.zeros_f32(&[900], "b").unwrap();
    assert_eq!(
        gpu.pool.idle(),
        0,
        "a same-class request takes the idle buffer"
    );
    drop((id, again));
    let spec = gemv::spec(GgmlType::F32, GemvTunables::default_for(false));
    let before = gpu.pipelines.len();
    gpu.pipeline(&spec).unwrap();
    gpu.pipeline(&spec).unwrap();
    assert_eq!(gpu.pipelines.len(), before + 1);
}
