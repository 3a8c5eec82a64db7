//! `cargo xtask bench-vision MODEL.onnx --batch 1,32`: the ONNX GPU executor's speed on this
//! adapter. Per batch size: the plan's build time, then — after a steady warm-up so the GPU's
//! clock is up — the wall-clock latency of whole calls (input upload, one compute pass, output
//! readback: what `gpuport run` pays) as median and p10/p90, images per second at the median,
//! and the GPU time of the pass by timestamps. `--profile` adds the GPU time per kernel
//! family from per-dispatch timestamps, which says where a call spends its time.
//!
//! The input is seeded random data of the graph's input shape with its first (batch) dim set
//! to each `--batch` value: the executor's speed does not depend on the pixel values.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use gpuport_onnx::gpu::GpuModel;
use gpuport_onnx::model::{Dim, Type};
use gpuport_onnx::{HostTensor, OnnxModel};
use gpuport_runtime::{Gpu, GpuOptions};
use serde::Serialize;

/// Options of `bench-vision`.
pub struct Options {
    /// The ONNX file.
    pub model: PathBuf,
    /// Batch sizes (the graph's batch dim must be symbolic for any but its own).
    pub batch: Vec<usize>,
    /// Seconds of timed calls per batch size.
    pub seconds: f64,
    /// Milliseconds of untimed calls first.
    pub warmup_ms: u64,
    /// Per-kernel GPU time from per-dispatch timestamps.
    pub profile: bool,
    /// Write the results here as JSON.
    pub json: Option<PathBuf>,
}

#[derive(Serialize)]
struct BatchResult {
    batch: usize,
    plan_ms: f64,
    /// MiB of intermediate buffers with one per value, and as planned (shared by liveness).
    activation_mib_unshared: f64,
    activation_mib: f64,
    calls: usize,
    launches: u64,
    wall_ms_p10: f64,
    wall_ms_median: f64,
    wall_ms_p90: f64,
    images_per_s: f64,
    /// GPU time of the call's pass by timestamps (median of the profiled calls), when the
    /// adapter has timestamps.
    gpu_ms_median: Option<f64>,
    /// Kernel family → (launches, GPU ms) from per-dispatch timestamps (`--profile`).
    kernels: BTreeMap<String, (usize, f64)>,
}

#[derive(Serialize)]
struct Report {
    model: String,
    adapter: String,
    backend: String,
    results: Vec<BatchResult>,
}

/// A seeded uniform [0, 1) stream (xorshift64*): the same input on every run and machine.
fn random(n: usize, mut seed: u64) -> Vec<f32> {
    (0..n)
        .map(|_| {
            seed ^= seed >> 12;
            seed ^= seed << 25;
            seed ^= seed >> 27;
            (seed.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 40) as f32 / (1u64 << 24) as f32
        })
        .collect()
}

fn percentile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

/// Inputs of `model` at batch `batch`: every non-initializer input, f32.
fn inputs(model: &OnnxModel, batch: usize) -> anyhow::Result<Vec<(String, HostTensor)>> {
    model
        .model()
        .graph
        .runtime_inputs()
        .map(|vi| {
            let Some(Type::Tensor {
                shape: Some(dims), ..
            }) = &vi.ty
            else {
                bail!("input `{}` has no tensor shape", vi.name);
            };
            let shape = dims
                .iter()
                .enumerate()
                .map(|(i, d)| match (i, d) {
                    (0, Dim::Value(v)) if *v as usize != batch => bail!(
                        "input `{}` has a fixed batch of {v}; --batch {batch} needs a symbolic one",
                        vi.name
                    ),
                    (0, _) => Ok(batch),
                    (_, Dim::Value(v)) => Ok(*v as usize),
                    (_, _) => bail!("input `{}` dim {i} is symbolic", vi.name),
                })
                .collect::<anyhow::Result<Vec<usize>>>()?;
            let n = shape.iter().product();
            let t =
                HostTensor::f32(shape, random(n, 0x9E37_79B9_7F4A_7C15)).context("input tensor")?;
            Ok((vi.name.clone(), t))
        })
        .collect()
}

/// Runs the benchmark.
pub fn run(o: Options) -> anyhow::Result<()> {
    let gpu = Arc::new(Gpu::new(&GpuOptions::default())?);
    let info = gpu.info().clone();
    println!(
        "adapter: {} ({:?}, {:?})",
        info.name, info.device_type, info.backend
    );
    let onnx = OnnxModel::open(&o.model)?;
    let model = GpuModel::new(gpu.clone(), OnnxModel::open(&o.model)?);
    let mut results = Vec::new();
    for &batch in &o.batch {
        let inputs = inputs(&onnx, batch)?;
        let t0 = Instant::now();
        model.run(&inputs)?;
        let plan_ms = t0.elapsed().as_secs_f64() * 1e3;
        let (unshared, shared) = model.activation_bytes(&inputs)?;
        let warm = Instant::now();
        while warm.elapsed() < Duration::from_millis(o.warmup_ms) {
            model.run(&inputs)?;
        }
        let mut wall = Vec::new();
        let timed = Instant::now();
        while timed.elapsed().as_secs_f64() < o.seconds || wall.len() < 5 {
            let t = Instant::now();
            model.run(&inputs)?;
            wall.push(t.elapsed().as_secs_f64() * 1e3);
        }
        wall.sort_by(f64::total_cmp);
        let (mut gpu_ms, mut launches, mut kernels) = (None, 0, BTreeMap::new());
        if gpu.has_timestamps() {
            let mut passes = Vec::new();
            for _ in 0..20 {
                let (_, p) = model.run_profiled(&inputs, false)?;
                passes.push(p.pass_ns / 1e6);
                launches = p.launches;
            }
            passes.sort_by(f64::total_cmp);
            gpu_ms = Some(percentile(&passes, 0.5));
            if o.profile {
                let (_, p) = model.run_profiled(&inputs, true)?;
                for (label, ns) in p.dispatches {
                    let family = label.split([' ', '(']).next().unwrap_or("").to_string();
                    let e: &mut (usize, f64) = kernels.entry(family).or_default();
                    e.0 += 1;
                    e.1 += ns / 1e6;
                }
            }
        }
        let median = percentile(&wall, 0.5);
        let r = BatchResult {
            batch,
            plan_ms,
            activation_mib_unshared: unshared as f64 / (1 << 20) as f64,
            activation_mib: shared as f64 / (1 << 20) as f64,
            calls: wall.len(),
            launches,
            wall_ms_p10: percentile(&wall, 0.1),
            wall_ms_median: median,
            wall_ms_p90: percentile(&wall, 0.9),
            images_per_s: batch as f64 / (median / 1e3),
            gpu_ms_median: gpu_ms,
            kernels,
        };
        println!(
            "batch {:>3}: wall {:.3} ms median ({:.3}–{:.3} p10–p90, {} calls), {:.0} img/s; GPU {} ; {} launches; plan {:.0} ms; activations {:.1} MiB ({:.1} unshared)",
            r.batch,
            r.wall_ms_median,
            r.wall_ms_p10,
            r.wall_ms_p90,
            r.calls,
            r.images_per_s,
            r.gpu_ms_median
                .map_or("n/a".to_string(), |g| format!("{g:.3} ms")),
            r.launches,
            r.plan_ms,
            r.activation_mib,
            r.activation_mib_unshared
        );
        for (k, (n, ms)) in &r.kernels {
            println!("    {k:<28} {n:>4} launches {ms:>9.3} ms");
        }
        results.push(r);
    }
    if let Some(path) = &o.json {
        let report = Report {
            model: o.model.display().to_string(),
            adapter: info.name.clone(),
            backend: format!("{:?}", info.backend),
            results,
        };
        std::fs::write(path, serde_json::to_string_pretty(&report)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}
