//! Measurement helpers shared by `gpuport probe --bench` and `cargo xtask bench`: GPU time of a
//! recorded workload (pass timestamps when the adapter has them, else wall clock around submit
//! and wait), and the streaming-read ceiling every bandwidth-bound kernel is compared with.

use serde::Serialize;

use crate::device::Gpu;
use crate::error::GpuError;
use crate::ops::stream_read;
use crate::recorder::Recorder;
use crate::tensor::Elem;

/// How a time was measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Clock {
    /// GPU timestamps around the pass.
    GpuTimestamps,
    /// Host wall clock around submit and wait (includes submission overhead).
    WallClock,
}

/// Seconds per repetition of a workload, and how they were measured.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Timing {
    /// Seconds per repetition (the best of the trials).
    pub seconds: f64,
    /// The clock used.
    pub clock: Clock,
}

/// How long a workload runs untimed before it is timed, on a GPU that is not a CPU: a GPU's
/// clock falls between bursts of work and ramps back only under steady load. On the H200 a
/// sweep of 256 MB GEMVs (one compile, one short burst each) ran at 345–915 MHz of its
/// 1,980 MHz for 2.5 minutes right after a warm-up at full clock (docs/bench/h200-llm-v17),
/// which throttles every instruction-bound kernel. `GPUPORT_BENCH_HOLD_MS` overrides it.
pub const CLOCK_HOLD_MS: u64 = 300;

fn clock_hold(gpu: &Gpu) -> std::time::Duration {
    let ms = std::env::var("GPUPORT_BENCH_HOLD_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if gpu.is_cpu() { 0 } else { CLOCK_HOLD_MS });
    std::time::Duration::from_millis(ms)
}

/// Times `record` (which records one repetition into the recorder): `reps` repetitions in one
/// pass and one submit, best of `trials`, after one warm-up submit and, on a GPU, repeated
/// untimed submits for [`CLOCK_HOLD_MS`] so that its clock is up.
pub fn time_reps(
    gpu: &Gpu,
    reps: u32,
    trials: u32,
    mut record: impl FnMut(&mut Recorder<'_>) -> Result<(), GpuError>,
) -> Result<Timing, GpuError> {
    let mut warm = Recorder::new(gpu);
    record(&mut warm)?;
    warm.submit()?;
    gpu.wait()?;
    let hold = clock_hold(gpu);
    let held = std::time::Instant::now();
    while held.elapsed() < hold {
        let mut rec = Recorder::new(gpu);
        for _ in 0..reps.max(1) {
            record(&mut rec)?;
        }
        rec.submit()?;
        gpu.wait()?;
    }
    let mut best = f64::INFINITY;
    let clock = if gpu.has_timestamps() {
        Clock::GpuTimestamps
    } else {
        Clock::WallClock
    };
    for _ in 0..trials.max(1) {
        let mut rec = match clock {
            Clock::GpuTimestamps => Recorder::profiling(gpu)?,
            Clock::WallClock => Recorder::new(gpu),
        };
        for _ in 0..reps.max(1) {
            record(&mut rec)?;
        }
        let start = std::time::Instant::now();
        rec.submit()?;
        gpu.wait()?;
        let wall = start.elapsed().as_secs_f64();
        let seconds = match clock {
            Clock::GpuTimestamps => rec.pass_times_ns().iter().sum::<f64>() * 1e-9,
            Clock::WallClock => wall,
        };
        best = best.min(seconds / f64::from(reps.max(1)));
    }
    Ok(Timing {
        seconds: best,
        clock,
    })
}

/// One streaming-read configuration and its result.
#[derive(Debug, Clone, Serialize)]
pub struct StreamPoint {
    /// Buffer size read.
    pub bytes: u64,
    /// Threads per workgroup.
    pub wg: u32,
    /// Workgroups.
    pub groups: u32,
    /// Achieved GB/s (10^9 bytes per second).
    pub gbps: f64,
    /// How it was timed.
    pub clock: Clock,
}

/// The streaming-read ceiling: the best GB/s of a vec4 grid-stride read over several buffer
/// sizes, workgroup sizes and grid sizes.
#[derive(Debug, Clone, Serialize)]
pub struct StreamCeiling {
    /// The best point's GB/s.
    pub gbps: f64,
    /// Every point measured.
    pub points: Vec<StreamPoint>,
}

/// Measures the ceiling. `max_bytes` caps the largest buffer (it is also capped by the
/// adapter's binding limit); `quick` measures fewer points.
pub fn stream_ceiling(gpu: &Gpu, max_bytes: u64, quick: bool) -> Result<StreamCeiling, GpuError> {
    let limits = gpu.limits();
    let cap = max_bytes.min(limits.max_storage_buffer_binding_size) / 16 * 16;
    let sizes: Vec<u64> = if quick {
        vec![cap]
    } else {
        vec![cap / 8, cap / 2, cap]
    };
    let wgs: Vec<u32> = [128u32, 256, 512]
        .into_iter()
        .filter(|w| *w <= limits.max_compute_invocations_per_workgroup)
        .collect();
    let grids: &[u32] = if quick {
        &[1024, 8192]
    } else {
        &[256, 1024, 4096, 16384, 65535]
    };
    let mut points = Vec::new();
    for &bytes in &sizes {
        let src = gpu.storage_buffer(bytes, "stream source")?;
        let src = crate::tensor::Tensor {
            buffer: src,
            offset: 0,
            bytes,
            elem: Elem::U32,
            shape: vec![(bytes / 4) as usize],
        };
        for &wg in &wgs {
            for &groups in grids
                .iter()
                .filter(|g| **g <= limits.max_compute_workgroups_per_dimension)
            {
                let sink = gpu.zeros_f32(&[(wg * groups) as usize], "stream sink")?;
                let reps = if quick { 2 } else { 5 };
                let t = time_reps(gpu, reps, if quick { 1 } else { 3 }, |rec| {
                    stream_read(gpu, rec, &src, &sink, wg, groups)
                })?;
                points.push(StreamPoint {
                    bytes,
                    wg,
                    groups,
                    gbps: bytes as f64 / t.seconds / 1e9,
                    clock: t.clock,
                });
                gpu.recycle(sink);
            }
        }
        gpu.recycle(src);
    }
    let gbps = points.iter().map(|p| p.gbps).fold(0.0, f64::max);
    Ok(StreamCeiling { gbps, points })
}
