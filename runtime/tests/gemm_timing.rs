//! GPU time of the GEMM's two kernels at batched decode's row counts, for choosing the few-row
//! kernel's threshold and defaults on real hardware. Ignored (it measures, it checks nothing);
//! on a GPU: `cargo test --release -p gpuport-runtime --test gemm_timing -- --ignored --nocapture`
//! (`GEMM_TIMING_SWEEP=1` adds the three fastest of every threads / rows-per-workgroup /
//! rows-per-thread combination of the few-row kernel). Weights are random blocks in rotating
//! copies (at least 128 MB in all, so a matrix smaller than the L2 cache is read from memory as
//! in a forward pass); each time is the best of 7 trials of ~5 ms of GPU work after a 20 ms
//! warm-up (short trials run at whatever clock the idle GPU dropped to). Build it in release:
//! a debug build's recording leaves the GPU idle long enough between trials to clock down.

#![allow(clippy::unwrap_used)]

use gpuport_kernels::Reduction;
use gpuport_kernels::gemm::{FEW_ROWS_MAX, FewRowTunables};
use gpuport_kernels::gemv::GemvInput;
use gpuport_kernels::quant::GgmlType;
use gpuport_kernels::quant::random_blocks;
use gpuport_runtime::bench::time_reps;
use gpuport_runtime::ops::{self, GemmCall, GemmPath};
use gpuport_runtime::tuning::TuningTable;
use gpuport_runtime::{Elem, Gpu, GpuError, Recorder, Tensor};

use gpuport_testing as support;

/// (name, type, rows, cols, input): Gemma 3 270M's batched projections, then larger ones.
const SHAPES: [(&str, GgmlType, usize, usize, GemvInput); 11] = [
    ("270m.attn_q", GgmlType::Q5_0, 1024, 640, GemvInput::Plain),
    ("270m.attn_kv", GgmlType::Q5_0, 256, 640, GemvInput::Plain),
    ("270m.ffn_up", GgmlType::Q5_0, 2048, 640, GemvInput::Plain),
    ("270m.attn_out", GgmlType::Q4K, 640, 1024, GemvInput::Plain),
    ("270m.ffn_down", GgmlType::Q4K, 640, 2048, GemvInput::GeGlu),
    (
        "270m.output",
        GgmlType::Q8_0,
        262_144,
        640,
        GemvInput::Plain,
    ),
    ("8b.q4_K", GgmlType::Q4K, 4096, 4096, GemvInput::Plain),
    (
        "8b.down.q6_K",
        GgmlType::Q6K,
        4096,
        14336,
        GemvInput::SwiGlu,
    ),
    ("8b.up.q8_0", GgmlType::Q8_0, 14336, 4096, GemvInput::Plain),
    ("8b.up.q4_0", GgmlType::Q4_0, 14336, 4096, GemvInput::Plain),
    ("2k.f16", GgmlType::F16, 2048, 2048, GemvInput::Plain),
];

fn buffer(gpu: &Gpu, bytes: u64, elem: Elem, shape: &[usize]) -> Tensor {
    Tensor {
        buffer: gpu.storage_buffer(bytes, "timing").unwrap(),
        offset: 0,
        bytes,
        elem,
        shape: shape.to_vec(),
    }
}

/// Microseconds per call of `record` (called once per repetition with its index).
fn time_us(
    gpu: &Gpu,
    mut record: impl FnMut(&mut Recorder<'_>, usize) -> Result<(), GpuError>,
) -> f64 {
    let mut i = 0;
    let mut rep = |rec: &mut Recorder<'_>| {
        i += 1;
        record(rec, i)
    };
    let probe = time_reps(gpu, 10, 1, &mut rep).unwrap().seconds;
    let reps = (5e-3 / probe).clamp(10.0, 5000.0) as u32;
    time_reps(gpu, 4 * reps, 1, &mut rep).unwrap();
    time_reps(gpu, reps, 7, &mut rep).unwrap().seconds * 1e6
}

#[test]
#[ignore = "measures on a GPU; run with --ignored --nocapture"]
fn gemm_timing() {
    let Some(gpu) = support::gpu() else { return };
    let sweep = std::env::var_os("GEMM_TIMING_SWEEP").is_some();
    let table = TuningTable::load();
    let sg = gpu.has_subgroups();
    let reduction = if sg {
        Reduction::Subgroup
    } else {
        Reduction::Shared
    };
    println!("{} ({:?})", gpu.info().name, gpu.info().backend);
    println!("shape tokens | path µs GB/s | ...");
    for (name, ty, rows, cols, input) in SHAPES {
        let row_bytes = ty.row_bytes(cols).unwrap();
        let bytes = (rows * row_bytes) as u64;
        let raw = random_blocks(ty, rows * row_bytes / ty.block_bytes(), rows as u64);
        let copies = (128_000_000u64.div_ceil(bytes)).clamp(1, 64) as usize;
        let ws: Vec<Tensor> = (0..copies)
            .map(|_| {
                gpu.upload(&raw, Elem::Ggml(ty), &[rows, cols], "w")
                    .unwrap()
            })
            .collect();
        drop(raw);
        let width = input.x_len(cols);
        let xs = support::random_f32(16 * width, 5);
        let x = gpu.upload_f32(&xs, &[16 * width], "x").unwrap();
        let y = buffer(&gpu, (4 * rows * 16) as u64, Elem::F32, &[16 * rows]);
        let tile = gpu.gemm_tile_in(&table, ty);
        for tokens in [1, 2, 4, 8, FEW_ROWS_MAX + 8] {
            let call = |w| GemmCall {
                w,
                x: &x,
                y: &y,
                tokens,
                x_stride: width,
                y_stride: rows,
                y_first: 0,
                residual: None,
                bias: None,
                input,
                norm: None,
            };
            let limit = gpu.limits().max_storage_buffer_binding_size;
            let time = |path: GemmPath| {
                time_us(&gpu, |rec, i| {
                    ops::gemm_on(&gpu, rec, call(&ws[i % copies]), path, limit)
                })
            };
            let gbps = |us: f64| bytes as f64 / us / 1e3;
            let mut line = format!("{name:<14} {tokens:>2} |");
            let tiled = time(GemmPath::Tiled(tile));
            line += &format!(
                " tiled {}x{} {tiled:.1} {:.0} |",
                tile.tm,
                tile.tn,
                gbps(tiled)
            );
            let auto = ops::gemm_path(&gpu, &call(&ws[0]), tile).unwrap();
            // The shaped default (what `ops::gemm` runs up to FEW_ROWS_MAX tokens), and it
            // with half and twice the lanes per row group.
            let target = gpuport_kernels::gemm::TARGET_THREADS;
            let t = FewRowTunables::for_matrix(ty, rows, cols, input, sg, target);
            let us = time(GemmPath::FewRows(t));
            let forced = if matches!(auto, GemmPath::FewRows(_)) {
                ""
            } else {
                "(forced)"
            };
            line += &format!(
                " few{forced} {}/{}/{} {us:.1} {:.0} |",
                t.wg,
                t.rows,
                t.rpt,
                gbps(us)
            );
            let halved = FewRowTunables {
                rows: 2 * t.rows,
                ..t
            };
            let doubled = FewRowTunables {
                rows: t.rows / 2,
                ..t
            };
            for alt in [halved, doubled].into_iter().filter(|a| a.is_valid()) {
                let us = time(GemmPath::FewRows(alt));
                line += &format!(" {}/{}/{} {us:.1}", alt.wg, alt.rows, alt.rpt);
            }
            line += " |";
            if tokens == 1 {
                let t = gpu.gemv_tunables_in(&table, ty).fit_rows(rows, 264);
                let xv = x.view(0, width);
                let yv = y.view(0, rows);
                let us = time_us(&gpu, |rec, i| {
                    let gcall = ops::GemvCall {
                        input,
                        ..ops::GemvCall::new(&ws[i % copies], &xv, &yv)
                    };
                    ops::gemv_call(&gpu, rec, gcall, t)
                });
                line += &format!(" gemv {us:.1} {:.0} |", gbps(us));
            }
            if sweep && (2..=FEW_ROWS_MAX).contains(&tokens) {
                let mut best: Vec<(f64, FewRowTunables)> = FewRowTunables::all()
                    .into_iter()
                    .filter(|t| t.reduction == reduction && t.wg >= 64)
                    .map(|t| (time(GemmPath::FewRows(t)), t))
                    .collect();
                best.sort_by(|a, b| a.0.total_cmp(&b.0));
                for (us, t) in best.iter().take(3) {
                    line += &format!(" {}/{}/{} {us:.1} {:.0}", t.wg, t.rows, t.rpt, gbps(*us));
                }
            }
            println!("{line}");
        }
        for w in ws {
            gpu.recycle(w);
        }
        gpu.recycle(x);
        gpu.recycle(y);
    }
}
