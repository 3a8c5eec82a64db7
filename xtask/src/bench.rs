//! `cargo xtask bench`: the kernel tuning tool. In one run on the current adapter it measures the
//! streaming-read ceiling, then every GEMV variant at named shapes (the decode GEMVs of the two
//! test models, and one matrix per weight type large enough not to sit in cache), and reports
//! achieved GB/s, the ceiling and their ratio. `--write-table` stores the best tunables per
//! weight type for this adapter in `runtime/tuning/default.json`.

use std::path::PathBuf;

use anyhow::Context;
use gpuport_kernels::Reduction;
use gpuport_kernels::attention::KV_TYPES;
use gpuport_kernels::gemm;
use gpuport_kernels::gemv::{self, GemvTunables};
use gpuport_kernels::quant::{GgmlType, random_blocks};
use gpuport_runtime::bench::{stream_ceiling, time_reps};
use gpuport_runtime::tuning::{
    AdapterTuning, TunedGemm, TuningTable, gemm_key, gemv_key, gemv_q8_key,
};
use gpuport_runtime::{Elem, Gpu, GpuOptions, ops};
use gpuport_runtime::{GpuError, Recorder};
use serde::Serialize;

/// A named GEMV shape.
#[derive(Debug, Clone)]
pub struct Shape {
    name: String,
    ty: GgmlType,
    rows: usize,
    cols: usize,
}

impl Shape {
    /// A matrix of this shape and type with random blocks (speed does not depend on the
    /// values).
    fn random_weights(&self, gpu: &Gpu, seed: u64) -> Result<gpuport_runtime::Tensor, GpuError> {
        let raw = random_blocks(self.ty, self.rows * self.cols / self.ty.block_elems(), seed);
        gpu.upload(
            &raw,
            Elem::Ggml(self.ty),
            &[self.rows, self.cols],
            &self.name,
        )
    }
}

/// The decode GEMVs of SmolLM2-135M (Q4_1, Q8_0 tied head) and Gemma 3 270M (Q5_0, Q8_0, Q4_K,
/// Q6_K, Q8_0 tied head), rows × cols as the kernel sees them.
fn model_shapes() -> Vec<Shape> {
    let s = |name: &str, ty, rows, cols| Shape {
        name: name.to_owned(),
        ty,
        rows,
        cols,
    };
    vec![
        s("smollm2.attn_q", GgmlType::Q4_1, 576, 576),
        s("smollm2.attn_kv", GgmlType::Q4_1, 192, 576),
        s("smollm2.ffn_up", GgmlType::Q4_1, 1536, 576),
        s("smollm2.ffn_down", GgmlType::Q4_1, 576, 1536),
        s("smollm2.lm_head", GgmlType::Q8_0, 49152, 576),
        s("gemma3.attn_q", GgmlType::Q5_0, 1024, 640),
        s("gemma3.attn_kv", GgmlType::Q5_0, 256, 640),
        s("gemma3.attn_v", GgmlType::Q8_0, 256, 640),
        s("gemma3.ffn_up", GgmlType::Q5_0, 2048, 640),
        s("gemma3.attn_output", GgmlType::Q4K, 640, 1024),
        s("gemma3.ffn_down", GgmlType::Q4K, 640, 2048),
        s("gemma3.ffn_down6", GgmlType::Q6K, 640, 2048),
        s("gemma3.lm_head", GgmlType::Q8_0, 262144, 640),
        // The Llama-3.2-1B and Llama-3.1-8B shapes of the H200 kit (Q4_K_M type mix).
        s("llama1b.attn_qkv", GgmlType::Q4K, 3072, 2048),
        s("llama1b.ffn_gate_up", GgmlType::Q4K, 16384, 2048),
        s("llama1b.ffn_down", GgmlType::Q6K, 2048, 8192),
        s("llama8b.attn_qkv", GgmlType::Q4K, 6144, 4096),
        s("llama8b.attn_output", GgmlType::Q4K, 4096, 4096),
        s("llama8b.ffn_gate_up", GgmlType::Q4K, 28672, 4096),
        s("llama8b.ffn_down", GgmlType::Q6K, 4096, 14336),
        // Their output projections (the kit's layouts carry SmolLM2's 49,152-token vocabulary).
        s("llama1b.lm_head", GgmlType::Q6K, 49152, 2048),
        s("llama8b.lm_head", GgmlType::Q6K, 49152, 4096),
    ]
}

/// Largest matrix `--matrix` takes (bytes of weights).
const MATRIX_MAX_BYTES: u64 = 1 << 32;

/// Parses a `--matrix`, `TYPE:ROWSxCOLS` (a GGUF type name, any case; whole blocks a row; at
/// most [`MATRIX_MAX_BYTES`] of weights), into the shape named `matrix.TYPE.ROWSxCOLS`.
pub fn parse_matrix(text: &str) -> Result<Shape, String> {
    let (ty, dims) = text
        .split_once(':')
        .ok_or_else(|| format!("`{text}`: expected TYPE:ROWSxCOLS, e.g. q4_K:16896x4096"))?;
    let ty = GgmlType::ALL
        .into_iter()
        .find(|t| t.name().eq_ignore_ascii_case(ty))
        .ok_or_else(|| format!("`{text}`: no weight type `{ty}`"))?;
    let (rows, cols) = dims
        .split_once(['x', 'X'])
        .ok_or_else(|| format!("`{text}`: expected ROWSxCOLS after the type"))?;
    let number = |what: &str, v: &str| match v.trim().parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!(
            "`{text}`: {what} `{v}` is not a positive whole number"
        )),
    };
    let (rows, cols) = (number("rows", rows)?, number("columns", cols)?);
    let row_bytes = ty.row_bytes(cols).ok_or_else(|| {
        format!(
            "`{text}`: {cols} columns are not whole {} blocks",
            ty.name()
        )
    })?;
    if (rows as u64).saturating_mul(row_bytes as u64) > MATRIX_MAX_BYTES {
        return Err(format!(
            "`{text}`: more than {MATRIX_MAX_BYTES} bytes of weights"
        ));
    }
    Ok(Shape {
        name: format!("matrix.{}.{rows}x{cols}", ty.name()),
        ty,
        rows,
        cols,
    })
}

/// The unroll of the sweep's first stage (the loop without unrolling: stage 2 can only improve on it).
const SWEEP_UNROLL: u32 = 1;

/// One matrix per type of about `bytes` of weights, 8192 columns.
fn large_shapes(bytes: usize) -> Vec<Shape> {
    GgmlType::ALL
        .into_iter()
        .map(|ty| {
            let cols = 8192;
            let row_bytes = ty.row_bytes(cols).unwrap_or(1);
            let rows = (bytes / row_bytes).max(1);
            Shape {
                name: format!("large.{}MB", bytes / 1_000_000),
                ty,
                rows,
                cols,
            }
        })
        .collect()
}

#[derive(Serialize, Clone)]
struct Row {
    kernel: &'static str,
    quant: &'static str,
    shape: String,
    rows: usize,
    cols: usize,
    tunables: String,
    seconds: f64,
    gbps: f64,
    ceiling_gbps: f64,
    ratio: f64,
    adapter: String,
    clock: String,
}

pub struct Options {
    pub quick: bool,
    pub json: Option<PathBuf>,
    pub write_table: bool,
    pub table_out: Option<PathBuf>,
    pub max_bytes: Option<u64>,
    /// Only the shapes whose names start with one of these (all when empty).
    pub shapes: Vec<String>,
    /// Only the shapes of these weight types (GGUF names; all when empty).
    pub types: Vec<String>,
    /// Matrices measured beside the selected shapes (`--matrix`).
    pub matrix: Vec<Shape>,
    /// Only the prefill GEMM, at the tuned tiled tile and every tensor-core tile.
    pub gemm_only: bool,
    /// Only the latency-bound kernels ([`other_kernels`]).
    pub other_kernels: bool,
    /// Token rows per GEMM measurement ([`GEMM_TOKENS`] when `None`).
    pub gemm_tokens: Option<usize>,
    /// Extra split counts for the tensor-core GEMMs (see [`gemm_sweep`]).
    pub splits: Vec<u32>,
    /// Streamed grids (workgroups) the tensor-core GEMMs are also timed on.
    pub streams: Vec<u32>,
    /// Each GEMV kernel only at the tuning table's tunables for this adapter and type; each
    /// GEMM only on the path a forward takes.
    pub tuned: bool,
    /// Only this GEMV kernel (both when `None`).
    pub kernel: Option<Kernel>,
    /// Every GEMV variant at every unroll (no two-stage search).
    pub exhaustive: bool,
    /// Only GEMV variants of these workgroup sizes (all when empty).
    pub wg: Vec<u32>,
    /// Only GEMV variants with these lanes per row group (all when empty).
    pub lanes: Vec<u32>,
}

pub fn run(opts: Options) -> anyhow::Result<()> {
    let gpu = Gpu::new(&GpuOptions::default())?;
    let report = gpu.report();
    let adapter = format!(
        "{} ({}, {} {})",
        report.name, report.backend, report.driver, report.driver_info
    );
    eprintln!("adapter: {adapter}; features {:?}", report.features);
    let max = opts
        .max_bytes
        .unwrap_or(if opts.quick { 32 << 20 } else { 1 << 30 });
    let ceiling = stream_ceiling(&gpu, max, opts.quick)?;
    let best_point = ceiling
        .points
        .iter()
        .max_by(|a, b| a.gbps.total_cmp(&b.gbps))
        .context("no stream point")?;
    println!(
        "streaming-read ceiling: {:.1} GB/s ({} MB, WG {}, {} groups, {:?})",
        ceiling.gbps,
        best_point.bytes / 1_000_000,
        best_point.wg,
        best_point.groups,
        best_point.clock
    );
    let mut shapes = if opts.quick {
        Vec::new()
    } else {
        model_shapes()
    };
    shapes.extend(large_shapes(if opts.quick {
        2_000_000
    } else {
        (max as usize).min(256_000_000)
    }));
    if !opts.shapes.is_empty() {
        shapes.retain(|s| opts.shapes.iter().any(|p| s.name.starts_with(p.as_str())));
    }
    if !opts.types.is_empty() {
        shapes.retain(|s| {
            opts.types
                .iter()
                .any(|t| t.eq_ignore_ascii_case(s.ty.name()))
        });
    }
    shapes.extend(opts.matrix);
    let all: Vec<GemvTunables> = GemvTunables::all()
        .into_iter()
        .filter(|t| gpu.has_subgroups() || t.reduction == Reduction::Shared)
        .filter(|t| t.wg <= gpu.limits().max_compute_invocations_per_workgroup)
        .filter(|t| opts.wg.is_empty() || opts.wg.contains(&t.wg))
        .filter(|t| opts.lanes.is_empty() || opts.lanes.contains(&t.lanes_per_group()))
        // Quick: two float GEMV variants and one of the int8 GEMV (one row per lane group).
        .filter(|t| {
            !opts.quick
                || matches!(
                    (t.wg, t.rows, t.rpt),
                    (128, 8, 2) | (64, 16, 4) | (256, 32, 1)
                )
        })
        .collect();
    let mut rows = Vec::new();
    // Per type: total seconds over its shapes and the shapes measured, for each tunable, to
    // pick one per type among those measured on all its shapes.
    let mut totals = Totals::default();
    println!(
        "{:<20} {:<8} {:<6} {:>7} {:>6} {:>9} {:>7} {:>6} {:>9}  best tunables",
        "shape", "kernel", "quant", "rows", "cols", "MB", "GB/s", "ratio", "µs"
    );
    let table = gpuport_runtime::tuning::TuningTable::load();
    for shape in shapes
        .iter()
        .filter(|_| !opts.gemm_only && !opts.other_kernels)
    {
        let w = shape.random_weights(&gpu, 1)?;
        let x = gpu.upload_f32(&vec![0.5; shape.cols], &[shape.cols], "bench x")?;
        let y = gpu.zeros_f32(&[shape.rows], "bench y")?;
        // --tuned: each kernel at the one variant decode runs here.
        let tuned = |kernel: Kernel| match kernel {
            Kernel::Float => vec![gpu.gemv_tunables_in(&table, shape.ty)],
            Kernel::Q8 => vec![gpu.gemv_q8_tunables_in(&table, shape.ty).q8_for_cols(
                shape.ty,
                shape.cols,
                gpu.has_subgroups(),
            )],
        };
        let sweep = |kernel: Kernel| Sweep {
            gpu: &gpu,
            shape,
            all: if opts.tuned {
                tuned(kernel)
            } else {
                all.clone()
            },
            exhaustive: opts.tuned || opts.exhaustive,
            quick: opts.quick,
            ceiling: ceiling.gbps,
            adapter: &adapter,
        };
        let measures = |kernel: Kernel| opts.kernel.is_none_or(|k| k == kernel);
        if measures(Kernel::Float) {
            let float = sweep(Kernel::Float).run(Kernel::Float, &mut totals, |rec, t| {
                ops::gemv(&gpu, rec, &w, &x, &y, t)
            })?;
            rows.extend(float);
        }
        if measures(Kernel::Q8) && gemv::takes_q8_input(shape.ty) && shape.cols.is_multiple_of(32) {
            let words = gemv::quantize_q8_input(&vec![0.5; shape.cols]);
            let bits: Vec<f32> = words.iter().map(|w| f32::from_bits(*w)).collect();
            let xq = gpu.upload_f32(&bits, &[bits.len()], "bench xq")?;
            let q8 = sweep(Kernel::Q8).run(Kernel::Q8, &mut totals, |rec, t| {
                let call = ops::GemvCall {
                    input: gemv::GemvInput::Q8Blocks,
                    ..ops::GemvCall::new(&w, &xq, &y)
                };
                ops::gemv_call(&gpu, rec, call, t)
            })?;
            rows.extend(q8);
            gpu.recycle(xq);
        }
        gpu.recycle(w);
        gpu.recycle(x);
        gpu.recycle(y);
    }
    // The prefill GEMM at the model shapes, or one small shape when quick. An output
    // projection runs as a GEMM of one row (the last of a prompt, or a decode step's on the
    // int8 tiled kernel): only when `--shapes` names it whole.
    let named = |s: &Shape| opts.shapes.contains(&s.name);
    let gemm_shapes: Vec<&Shape> = shapes
        .iter()
        .filter(|s| (!s.name.ends_with("lm_head") || named(s)) && !s.name.starts_with("large"))
        .filter(|_| !opts.other_kernels)
        .collect();
    let quick_shape = Shape {
        name: "quick".into(),
        ty: GgmlType::Q4K,
        rows: 64,
        cols: 256,
    };
    let gemm_shapes = if opts.quick {
        vec![&quick_shape]
    } else {
        gemm_shapes
    };
    let tokens = match (opts.quick, opts.gemm_tokens) {
        (true, _) => 8,
        (false, t) => t.unwrap_or(GEMM_TOKENS),
    };
    let (gemm_rows, gemm_best) = gemm_sweep(
        &gpu,
        &gemm_shapes,
        tokens,
        opts.quick,
        opts.gemm_only,
        opts.tuned,
        CoopExtras {
            splits: &opts.splits,
            streams: &opts.streams,
        },
    )?;
    let others = if opts.quick || opts.gemm_only {
        Vec::new()
    } else {
        other_kernels(&gpu)?
    };
    if let Some(path) = &opts.json {
        let doc = serde_json::json!({ "adapter": report, "ceiling": ceiling, "results": rows, "gemm": gemm_rows, "other_kernels": others });
        std::fs::write(path, serde_json::to_string_pretty(&doc)?)?;
        eprintln!("wrote {}", path.display());
    }
    if opts.write_table {
        let mut entry = AdapterTuning {
            vendor: gpu.info().vendor,
            device: gpu.info().device,
            driver: gpu.info().driver.clone(),
            name: gpu.info().name.clone(),
            gemv: Default::default(),
            gemm: gemm_best
                .iter()
                .map(|(ty, t)| (gemm_key(*ty), TunedGemm { tm: t.tm, tn: t.tn }))
                .collect(),
        };
        for ty in GgmlType::ALL {
            for kernel in [Kernel::Float, Kernel::Q8] {
                let shapes_of = shapes.iter().filter(|s| s.ty == ty).count();
                let best = totals
                    .iter()
                    .filter(|((k, t, _), (_, n))| *k == kernel && *t == ty && *n == shapes_of)
                    .min_by(|a, b| a.1.0.total_cmp(&b.1.0));
                if let Some(((_, _, tun), _)) = best {
                    entry.gemv.insert(kernel.key(ty), (*tun).into());
                }
            }
        }
        let path = opts
            .table_out
            .clone()
            .unwrap_or_else(|| crate::repo_root().join("runtime/tuning/default.json"));
        let mut table = TuningTable::committed();
        table.upsert(entry);
        std::fs::write(&path, serde_json::to_string_pretty(&table)? + "\n")?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

/// The two GEMV kernels: float input (`gemv.wgsl`, every type) and int8 input
/// (`gemv_q8.wgsl`, the types `gemv::takes_q8_input` accepts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
pub enum Kernel {
    /// `gemv.wgsl`.
    #[value(name = "gemv")]
    Float,
    /// `gemv_q8.wgsl`.
    #[value(name = "gemv_q8")]
    Q8,
}

impl Kernel {
    fn name(self) -> &'static str {
        match self {
            Kernel::Float => "gemv",
            Kernel::Q8 => "gemv_q8",
        }
    }

    fn key(self, ty: GgmlType) -> String {
        match self {
            Kernel::Float => gemv_key(ty),
            Kernel::Q8 => gemv_q8_key(ty),
        }
    }

    /// Whether the kernel has tunables `t` (the int8 GEMV takes at most
    /// [`gemv::Q8_MAX_RPT`] rows per thread).
    fn takes(self, t: &GemvTunables) -> bool {
        self == Kernel::Float || t.rpt <= gemv::Q8_MAX_RPT
    }
}

/// Per kernel and type: total seconds over its shapes and the shapes measured, for each
/// tunable, to pick one per type among those measured on all its shapes.
type Totals = std::collections::BTreeMap<(Kernel, GgmlType, GemvTunables), (f64, usize)>;

/// One shape's tunable sweep.
struct Sweep<'a> {
    gpu: &'a Gpu,
    shape: &'a Shape,
    all: Vec<GemvTunables>,
    /// Time every tunable in `all` as given (no two-stage unroll search).
    exhaustive: bool,
    quick: bool,
    ceiling: f64,
    adapter: &'a str,
}

impl Sweep<'_> {
    /// Times `record` at every tunable of `kernel` in two stages: every (WG, ROWS, RPT,
    /// reduction) without unrolling, then the other unrolls for the best few (a full cross
    /// product takes minutes per shape); `exhaustive`: every tunable given, in one stage.
    /// Prints the best and returns every measurement.
    fn run(
        &self,
        kernel: Kernel,
        totals: &mut Totals,
        mut record: impl FnMut(&mut Recorder<'_>, GemvTunables) -> Result<(), GpuError>,
    ) -> anyhow::Result<Vec<Row>> {
        let shape = self.shape;
        let bytes = gemv::bytes_moved(shape.ty, shape.rows, shape.cols) as f64;
        // About 1 GB of traffic per measurement (a few MB when quick), at least one repetition.
        let budget = if self.quick { 4e6 } else { 1e9 };
        let reps = (budget / bytes).clamp(1.0, 200.0) as u32;
        let all: Vec<GemvTunables> = self
            .all
            .iter()
            .copied()
            .filter(|t| kernel.takes(t))
            .collect();
        let mut best: Option<Row> = None;
        let mut rows = Vec::new();
        let mut measured: Vec<(GemvTunables, f64)> = Vec::new();
        let mut queue: Vec<GemvTunables> = all
            .iter()
            .copied()
            .filter(|t| self.exhaustive || t.unroll == SWEEP_UNROLL)
            .collect();
        let mut stage = if self.exhaustive { 2 } else { 1 };
        while let Some(t) = queue.pop() {
            let trials = if self.quick { 1 } else { 3 };
            let timing = time_reps(self.gpu, reps, trials, |rec| record(rec, t))?;
            let total = totals.entry((kernel, shape.ty, t)).or_default();
            total.0 += timing.seconds;
            total.1 += 1;
            measured.push((t, timing.seconds));
            if queue.is_empty() && stage == 1 {
                stage = 2;
                measured.sort_by(|a, b| a.1.total_cmp(&b.1));
                queue = measured
                    .iter()
                    .take(4)
                    .flat_map(|(best, _)| {
                        all.iter().copied().filter(move |t| {
                            t.unroll != SWEEP_UNROLL
                                && GemvTunables {
                                    unroll: SWEEP_UNROLL,
                                    ..*t
                                } == *best
                        })
                    })
                    .collect();
            }
            let gbps = bytes / timing.seconds / 1e9;
            let row = Row {
                kernel: kernel.name(),
                quant: shape.ty.name(),
                shape: shape.name.clone(),
                rows: shape.rows,
                cols: shape.cols,
                tunables: format!(
                    "WG={} ROWS={} RPT={} U={} {}",
                    t.wg,
                    t.rows,
                    t.rpt,
                    t.unroll,
                    t.reduction.name()
                ),
                seconds: timing.seconds,
                gbps,
                ceiling_gbps: self.ceiling,
                ratio: gbps / self.ceiling,
                adapter: self.adapter.to_owned(),
                clock: format!("{:?}", timing.clock),
            };
            if best.as_ref().is_none_or(|b| row.gbps > b.gbps) {
                best = Some(row.clone());
            }
            rows.push(row);
        }
        if let Some(b) = &best {
            println!(
                "{:<20} {:<8} {:<6} {:>7} {:>6} {:>9.1} {:>7.1} {:>6.3} {:>9.1}  {}",
                b.shape,
                b.kernel,
                b.quant,
                b.rows,
                b.cols,
                bytes / 1e6,
                b.gbps,
                b.ratio,
                b.seconds * 1e6,
                b.tunables
            );
        }
        Ok(rows)
    }
}

/// Per weight type, the GEMM tile that measured fastest.
type BestTiles = Vec<(GgmlType, gemm::GemmTile)>;

/// Tokens per GEMM measurement by default: a full prefill batch.
const GEMM_TOKENS: usize = 256;

#[derive(Serialize, Clone)]
struct GemmRow {
    shape: String,
    quant: &'static str,
    rows: usize,
    cols: usize,
    tokens: usize,
    tile: String,
    seconds: f64,
    tflops: f64,
    clock: String,
}

/// What the tensor-core GEMMs of [`gemm_sweep`] are timed at besides their usual splits.
#[derive(Clone, Copy)]
struct CoopExtras<'a> {
    /// Split counts along K.
    splits: &'a [u32],
    /// Streamed grids' workgroups.
    streams: &'a [u32],
}

impl CoopExtras<'_> {
    /// Tile `t` over `dims` streamed by each of the grids that can stream it.
    fn streamed(
        self,
        tile: gemm::CoopTile,
        dims: (usize, usize, usize),
        x16: bool,
    ) -> impl Iterator<Item = ops::GemmPath> {
        self.streams.iter().filter_map(move |&stream| {
            let splits = ops::coop_stream_slots(tile, dims, stream)?;
            Some(ops::GemmPath::Coop {
                tile,
                splits,
                x16,
                stream,
            })
        })
    }
}

/// Times the prefill GEMM of `tokens` token rows at every tile the adapter's workgroup memory
/// holds on each shape (with `tuned_only`, the tiled kernel at the tuned tile only), and the
/// tensor-core kernel at each of its tiles where the adapter has it; prints the best per
/// shape and returns every measurement and, per weight type, the tiled kernel's tile with the
/// least total time over that type's shapes. `extras`: what each tensor-core tile (with
/// `engine_only`, the engine's) is timed at besides its usual splits.
fn gemm_sweep(
    gpu: &Gpu,
    shapes: &[&Shape],
    tokens: usize,
    quick: bool,
    tuned_only: bool,
    engine_only: bool,
    extras: CoopExtras<'_>,
) -> anyhow::Result<(Vec<GemmRow>, BestTiles)> {
    let extra_splits = extras.splits;
    let storage = gpu.limits().max_compute_workgroup_storage_size;
    let table = gpuport_runtime::tuning::TuningTable::load();
    let mut rows = Vec::new();
    let mut totals: std::collections::BTreeMap<(GgmlType, gemm::GemmTile), f64> =
        Default::default();
    let limit = gpu.limits().max_storage_buffer_binding_size;
    for shape in shapes {
        let tuned = gpu.gemm_tile_in(&table, shape.ty);
        let mut paths: Vec<ops::GemmPath> = gemm::GemmTile::all()
            .into_iter()
            .filter(|t| t.workgroup_bytes() <= storage)
            .filter(|t| !quick || *t == gemm::GemmTile::DEFAULT)
            .filter(|t| !tuned_only || *t == tuned)
            .map(ops::GemmPath::Tiled)
            .collect();
        // Every tensor-core tile unsplit, split as `ops::coop_splits` would, and 2-8 ways.
        for tile in ops::coop_tiles(gpu, shape.ty) {
            let auto = ops::coop_splits(tile, shape.rows, shape.cols, tokens);
            let mut splits = vec![1, auto, 2, 4, 8];
            splits.extend_from_slice(extra_splits);
            splits.retain(|&s| ops::coop_split_fits(tile, (shape.rows, shape.cols, tokens), s));
            splits.sort_unstable();
            splits.dedup();
            // Each with its input rounded to f16 first (what `ops::gemm` runs) and formed in
            // the kernel.
            paths.extend(splits.into_iter().flat_map(|splits| {
                [true, false].map(|x16| ops::GemmPath::Coop {
                    tile,
                    splits,
                    x16,
                    stream: 0,
                })
            }));
            paths.extend(extras.streamed(tile, (shape.rows, shape.cols, tokens), true));
        }
        let w = shape.random_weights(gpu, 2)?;
        let x = gpu.upload_f32(
            &vec![0.5; tokens * shape.cols],
            &[tokens * shape.cols],
            "gemm x",
        )?;
        let y = gpu.zeros_f32(&[tokens * shape.rows], "gemm y")?;
        let call = ops::GemmCall {
            w: &w,
            x: &x,
            y: &y,
            tokens,
            x_stride: shape.cols,
            y_stride: shape.rows,
            y_first: 0,
            residual: None,
            bias: None,
            input: gemv::GemvInput::Plain,
            norm: None,
        };
        // Batched decode's row counts: the few-row kernel at its default, and on int8 blocks
        // at its default and 1, 2, 4 rows per thread × 8 to 64 lanes per row.
        let words = gemv::GemvInput::Q8Blocks.x_len(shape.cols);
        let few = tokens <= gemm::FEW_ROWS_MAX;
        let blocks = gpu.zeros_f32(&[tokens * words.max(1)], "gemm int8 x")?;
        let q8_call = ops::GemmCall {
            x: &blocks,
            x_stride: words,
            input: gemv::GemvInput::Q8Blocks,
            ..call
        };
        if few {
            let sg = gpu.has_subgroups();
            let target = gemm::TARGET_THREADS;
            let t = gemm::FewRowTunables::for_matrix(
                shape.ty,
                shape.rows,
                shape.cols,
                gemv::GemvInput::Plain,
                sg,
                target,
            );
            paths.push(ops::GemmPath::FewRows(t));
            if gemv::takes_q8_input(shape.ty) {
                let rule = ops::q8_rows_rule(gpu, shape.ty, tokens, (shape.rows, shape.cols));
                let t =
                    gemm::FewRowTunables::for_q8_matrix(shape.ty, shape.rows, shape.cols, sg, rule);
                paths.push(ops::GemmPath::FewRowsQ8(t));
                for rpt in gemm::FEW_RPT_VALUES {
                    for lanes in [8, 16, 32, 64] {
                        let rows_wg = (128 / lanes * rpt).min(32);
                        let v = gemm::FewRowTunables {
                            wg: rows_wg / rpt * lanes,
                            rows: rows_wg,
                            rpt,
                            ..t
                        };
                        if v != t && v.is_valid() {
                            paths.push(ops::GemmPath::FewRowsQ8(v));
                        }
                    }
                }
                // Each of those in passes of up to 16 tokens too (past 8 rows).
                if tokens > gemm::NX_MAX as usize {
                    let wide: Vec<ops::GemmPath> = paths
                        .iter()
                        .filter_map(|p| match p {
                            ops::GemmPath::FewRowsQ8(v) => {
                                Some(ops::GemmPath::FewRowsQ8(gemm::FewRowTunables {
                                    nx: gemm::NX_Q8_MAX,
                                    ..*v
                                }))
                            }
                            _ => None,
                        })
                        .collect();
                    paths.extend(wide);
                }
            }
        }
        // The int8 tiled kernel (any number of rows) at its default tile for this adapter,
        // 1, 2 and 4 rows per thread, half and double the token groups, and the splits
        // `ops::gemm_path` would take, unsplit and 4 ways.
        if gemv::takes_q8_input(shape.ty) {
            let dims = (shape.rows, shape.cols, tokens);
            let base = gemm::Q8Tile::for_tokens(tokens, gpu.subgroup_width());
            let mut tiles = vec![base];
            for rpt in gemm::FEW_RPT_VALUES {
                tiles.push(gemm::Q8Tile { rpt, ..base });
            }
            for tg in [base.tg / 2, base.tg * 2] {
                let nx = (tokens.div_ceil(tg.max(1) as usize) as u32).min(gemm::NX_Q8_MAX);
                tiles.push(gemm::Q8Tile { tg, nx, ..base });
            }
            tiles.retain(|t| t.is_valid());
            tiles.sort_unstable();
            tiles.dedup();
            for tile in tiles {
                let auto = ops::q8_tile_splits(gpu, shape.ty, tile, dims);
                let mut splits = vec![1, auto, 4];
                splits.retain(|&s| ops::q8_tile_split_fits(shape.ty, dims, s));
                splits.sort_unstable();
                splits.dedup();
                paths.extend(
                    splits
                        .into_iter()
                        .map(|splits| ops::GemmPath::TilesQ8 { tile, splits }),
                );
            }
        }
        // --tuned: only what a forward of `tokens` rows runs here, on f32 input and (where the
        // type takes it) on int8 blocks.
        if engine_only {
            let engine = ops::gemm_path(gpu, &call, tuned)?;
            paths = vec![engine];
            if let ops::GemmPath::Coop { tile, x16, .. } = engine {
                let dims = (shape.rows, shape.cols, tokens);
                paths.extend(
                    extra_splits
                        .iter()
                        .filter(|&&s| ops::coop_split_fits(tile, dims, s))
                        .map(|&splits| ops::GemmPath::Coop {
                            tile,
                            splits,
                            x16,
                            stream: 0,
                        }),
                );
                paths.extend(extras.streamed(tile, dims, x16));
            }
            if few && gemv::takes_q8_input(shape.ty) {
                paths.push(ops::gemm_path(gpu, &q8_call, tuned)?);
            }
        }
        let mut best: Option<GemmRow> = None;
        for &path in &paths {
            let this = if path.reads_q8_blocks() {
                q8_call
            } else {
                call
            };
            let timing = time_reps(
                gpu,
                if quick { 1 } else { 10 },
                if quick { 1 } else { 3 },
                |rec| ops::gemm_on(gpu, rec, this, path, limit),
            )?;
            let tile = match path {
                ops::GemmPath::Tiled(t) => {
                    *totals.entry((shape.ty, t)).or_default() += timing.seconds;
                    format!("TM={} TN={}", t.tm, t.tn)
                }
                ops::GemmPath::Coop {
                    tile: t,
                    splits,
                    x16,
                    stream,
                } => {
                    let x = if x16 { "f16 x" } else { "f32 x" };
                    let grid = if stream > 0 {
                        format!("streamed={stream} slots={splits}")
                    } else {
                        format!("splits={splits}")
                    };
                    format!(
                        "coop WM={} WN={} TOK={} ROWS={} KC={} {grid} {x}",
                        t.wm, t.wn, t.sub_tokens, t.sub_rows, t.kc
                    )
                }
                ops::GemmPath::FewRows(t) => format!("{t:?}"),
                ops::GemmPath::FewRowsQ8(t) => format!("int8 {t:?}"),
                ops::GemmPath::TilesQ8 { tile: t, splits } => format!(
                    "int8 tiles RG={} TG={} RPT={} NX={} splits={splits}",
                    t.rg, t.tg, t.rpt, t.nx
                ),
            };
            let flops = 2.0 * (shape.rows * shape.cols * tokens) as f64;
            let row = GemmRow {
                shape: shape.name.clone(),
                quant: shape.ty.name(),
                rows: shape.rows,
                cols: shape.cols,
                tokens,
                tile,
                seconds: timing.seconds,
                tflops: flops / timing.seconds / 1e12,
                clock: format!("{:?}", timing.clock),
            };
            println!(
                "gemm {:<20} {:<6} {:>6} x {:>5} x {:>3} tokens {:>9.1} µs {:>7.2} TFLOP/s  {}",
                row.shape,
                row.quant,
                row.rows,
                row.cols,
                row.tokens,
                row.seconds * 1e6,
                row.tflops,
                row.tile
            );
            if best.as_ref().is_none_or(|b| row.seconds < b.seconds) {
                best = Some(row.clone());
            }
            rows.push(row);
        }
        if let Some(b) = best {
            println!("gemm {:<20} best: {}", b.shape, b.tile);
        }
        gpu.recycle(w);
        gpu.recycle(x);
        gpu.recycle(y);
        gpu.recycle(blocks);
    }
    let mut best: BestTiles = Vec::new();
    for ty in GgmlType::ALL {
        let shapes_of = shapes.iter().filter(|s| s.ty == ty).count();
        if shapes_of == 0 {
            continue;
        }
        if let Some(((_, tile), _)) = totals
            .iter()
            .filter(|((t, _), _)| *t == ty)
            .min_by(|a, b| a.1.total_cmp(b.1))
        {
            best.push((ty, *tile));
        }
    }
    Ok((rows, best))
}

#[derive(Serialize)]
struct KernelTime {
    kernel: String,
    microseconds: f64,
    clock: String,
}

/// GPU time per call of the decode-step kernels that are latency-bound rather than
/// bandwidth-bound (so µs, not a ratio, is their figure), at Gemma 3 270M's sizes; and the
/// attention of batched decode's rows ([`rows_attention`]) at the four layouts' shapes.
fn other_kernels(gpu: &Gpu) -> anyhow::Result<Vec<KernelTime>> {
    use gpuport_kernels::attention::{DecodeAttnParams, QkNorm};
    use gpuport_kernels::rowops::{ElementOp, NormKind};
    use gpuport_kernels::sample::SampleParams;
    let mut out = Vec::new();
    let mut time = |name: String,
                    f: &mut dyn FnMut(
        &mut gpuport_runtime::Recorder<'_>,
    ) -> Result<(), gpuport_runtime::GpuError>|
     -> anyhow::Result<()> {
        let t = time_reps(gpu, 50, 3, |rec| f(rec))?;
        println!("{name:<44} {:>9.2} µs", t.seconds * 1e6);
        out.push(KernelTime {
            kernel: name,
            microseconds: t.seconds * 1e6,
            clock: format!("{:?}", t.clock),
        });
        Ok(())
    };
    let x = gpu.upload_f32(&vec![0.25; 640], &[640], "x")?;
    let wn = gpu.upload_f32(&vec![1.0; 640], &[640], "w")?;
    let y = gpu.zeros_f32(&[640], "y")?;
    time("rmsnorm 640".into(), &mut |rec| {
        let call = ops::Norm {
            kind: NormKind::Rms,
            x: &x,
            w: &wn,
            y: &y,
            cols: 640,
            eps: 1e-6,
        };
        ops::norm(gpu, rec, call)
    })?;
    let a = gpu.upload_f32(&vec![0.5; 2048], &[2048], "a")?;
    let o = gpu.zeros_f32(&[2048], "o")?;
    time("geglu 2048".into(), &mut |rec| {
        let call = ops::Elementwise {
            op: ElementOp::GeluMul,
            a: &a,
            b: &a,
            out: &o,
            s: 1.0,
        };
        ops::elementwise(gpu, rec, call)
    })?;
    for (ctx, kv_type) in [512u32, 4096]
        .into_iter()
        .flat_map(|c| KV_TYPES.map(|t| (c, t)))
    {
        let p = DecodeAttnParams {
            heads: 4,
            kv_heads: 1,
            head_dim: 256,
            n_keys: ctx,
            max_ctx: ctx,
            window: 0,
            scale: 0.0625,
            cap: 0.0,
            blocks: 0,
            q_src: 0,
            k_src: 1024,
            v_src: 1280,
            rot_dims: 256,
            rope_base: 10_000.0,
            freq_scale: 1.0,
            norm: QkNorm::Rms.code(),
            eps: 1e-6,
            tokens: 1,
            qkv_stride: 0,
            page: 0,
            row_table: 0,
            rows_first: 0,
            split_keys: 0,
            group: 0,
        };
        let qkv = gpu.upload_f32(&vec![0.1; 1536], &[1536], "q, k, v")?;
        let norms = gpu.upload_f32(&vec![1.0; 512], &[512], "q, k norms")?;
        let page = gpuport_kernels::attention::PAGE_MULTIPLE;
        let pages = ctx.div_ceil(page);
        let elem = ops::cache_elem(kv_type).context("a KV cache type")?;
        let cache = |what| gpu.zeros(elem, &[(pages * page * 256) as usize], what);
        let (k, v) = (cache("k")?, cache("v")?);
        let table: Vec<u8> = (0..pages).flat_map(u32::to_le_bytes).collect();
        let table = gpu.upload(&table, Elem::U32, &[pages as usize], "pages")?;
        let kv = ops::KvLayer {
            k: &k,
            v: &v,
            pages: &table,
            page,
        };
        let s = gpu.zeros_f32(&[ops::attention_scratch(4, 256, ctx)], "scratch")?;
        let o = gpu.zeros_f32(&[1024], "out")?;
        let call = ops::DecodeAttention {
            p,
            neox: true,
            qkv: &qkv,
            part: &s,
            kv,
            qk_norm: Some(&norms),
        };
        time(
            format!(
                "attention decode 4q/1kv x 256, {ctx} keys, {} cache",
                kv_type.name()
            ),
            &mut |rec| ops::attention_decode(gpu, rec, call, &o),
        )?;
    }
    // Batched decode's attention: each row its own sequence of 192 keys, as a decode step of
    // the many-stream figures sees (docs/performance.md, "v32").
    let rows_shapes = [
        ("Llama-8B", 32, 8, 128, 8),
        ("Llama-8B", 32, 8, 128, 64),
        ("Llama-1B", 32, 8, 64, 64),
        ("Gemma 3 270M", 4, 1, 256, 64),
        ("SmolLM2", 9, 3, 64, 64),
    ];
    for (kv_type, (name, heads, kv_heads, head_dim, rows)) in KV_TYPES
        .into_iter()
        .flat_map(|t| rows_shapes.map(|s| (t, s)))
    {
        let shape = RowsShape {
            heads,
            kv_heads,
            head_dim,
            rows,
            keys: 192,
            kv_type,
        };
        time(
            format!(
                "attention rows {name} {rows} x 192 keys, {} cache",
                kv_type.name()
            ),
            &mut rows_attention(gpu, shape)?,
        )?;
    }
    for vocab in [49_152usize, 262_144] {
        let logits = gpu.upload_f32(
            &(0..vocab)
                .map(|i| (i % 977) as f32 * 0.01)
                .collect::<Vec<_>>(),
            &[vocab],
            "logits",
        )?;
        let probs = gpu.zeros_f32(&[vocab], "probs")?;
        let recent = gpu.upload(&[0u8; 260], Elem::U32, &[65], "tokens")?;
        let outp = gpu.upload(&[0u8; 8], Elem::U32, &[2], "out")?;
        let p = SampleParams {
            vocab: vocab as u32,
            top_k: 40,
            n_recent: 64,
            draw: gpuport_kernels::sample::draw_word(1, 0),
            temperature: 0.8,
            top_p: 0.95,
            penalty: 1.1,
            recent_start: 0,
            out_index: 64,
            round: 0,
        };
        let words = gpuport_kernels::sample::scratch_words(vocab);
        let part = gpu.zeros_f32(&[words], "sampler partials")?;
        let call = ops::Sample {
            p,
            logits: &logits,
            probs: &probs,
            tokens: &recent,
            out: &outp,
            part: &part,
        };
        time(
            format!("sample top-k 40 top-p 0.95, vocab {vocab}"),
            &mut |rec| ops::sample(gpu, rec, call),
        )?;
        let top_p = SampleParams {
            top_k: 0,
            penalty: 1.0,
            top_p: 0.9,
            temperature: 0.7,
            ..p
        };
        time(format!("sample top-p 0.9, vocab {vocab}"), &mut |rec| {
            ops::sample(gpu, rec, ops::Sample { p: top_p, ..call })
        })?;
        let g = SampleParams {
            temperature: 0.0,
            ..p
        };
        time(format!("sample greedy, vocab {vocab}"), &mut |rec| {
            ops::sample(gpu, rec, ops::Sample { p: g, ..call })
        })?;
    }
    Ok(out)
}

/// A batch of decode rows for [`rows_attention`]: `rows` sequences of `keys` keys each (the
/// new one included), `heads` query heads on `kv_heads` KV heads of `head_dim` values.
struct RowsShape {
    heads: u32,
    kv_heads: u32,
    head_dim: u32,
    rows: u32,
    keys: u32,
    /// The cache's element type (one of `KV_TYPES`).
    kv_type: GgmlType,
}

/// One launch of batched decode's attention (`ops::attention_rows` over a row table: the
/// preparation pass, the per-row causal pass split as the engine splits it, the combine) at
/// `s`, each row its own sequence in pages of its own; the buffers live in the closure.
fn rows_attention(
    gpu: &Gpu,
    s: RowsShape,
) -> anyhow::Result<
    impl FnMut(&mut gpuport_runtime::Recorder<'_>) -> Result<(), gpuport_runtime::GpuError> + '_,
> {
    use gpuport_kernels::attention::{
        DecodeAttnParams, PAGE_MULTIPLE, ROW_SPLITS_MAX, part_stride,
    };
    let (qn, kvn) = (s.heads * s.head_dim, s.kv_heads * s.head_dim);
    let stride = qn + 2 * kvn;
    let page = PAGE_MULTIPLE;
    let per_seq = s.keys.div_ceil(page);
    let pool = (s.rows * per_seq * page * kvn) as usize;
    let elem = ops::cache_elem(s.kv_type).context("a KV cache type")?;
    let k = gpu.zeros(elem, &[pool], "k")?;
    let v = gpu.zeros(elem, &[pool], "v")?;
    let table: Vec<u8> = (0..s.rows * per_seq).flat_map(u32::to_le_bytes).collect();
    let pages = gpu.upload(&table, Elem::U32, &[(s.rows * per_seq) as usize], "pages")?;
    // (position, page-table base, token index, 0) per row.
    let rows: Vec<u8> = (0..s.rows)
        .flat_map(|t| [s.keys - 1, t * per_seq, t, 0])
        .flat_map(u32::to_le_bytes)
        .collect();
    let table = gpu.upload(&rows, Elem::U32, &[4 * s.rows as usize], "rows")?;
    let n = (s.rows * stride) as usize;
    let qkv = gpu.upload_f32(&vec![0.1; n], &[n], "q, k, v")?;
    let q = gpu.zeros_f32(&[(s.rows * qn) as usize], "queries")?;
    let out = gpu.zeros_f32(&[(s.rows * qn) as usize], "out")?;
    let part_len = (s.rows * s.heads * ROW_SPLITS_MAX) as usize * part_stride(s.head_dim);
    let part = gpu.zeros_f32(&[part_len], "partials")?;
    let p = DecodeAttnParams {
        heads: s.heads,
        kv_heads: s.kv_heads,
        head_dim: s.head_dim,
        n_keys: per_seq * page,
        max_ctx: per_seq * page,
        window: 0,
        scale: 1.0 / (s.head_dim as f32).sqrt(),
        cap: 0.0,
        blocks: 0,
        q_src: 0,
        k_src: qn,
        v_src: qn + kvn,
        rot_dims: s.head_dim,
        rope_base: 10_000.0,
        freq_scale: 1.0,
        norm: 0,
        eps: 1e-6,
        tokens: s.rows,
        qkv_stride: stride,
        page: 0,
        row_table: 0,
        rows_first: 0,
        split_keys: 0,
        group: 0,
    };
    Ok(move |rec: &mut gpuport_runtime::Recorder<'_>| {
        let call = ops::RowsAttention {
            p,
            neox: false,
            qkv: &qkv,
            q: &q,
            kv: ops::KvLayer {
                k: &k,
                v: &v,
                pages: &pages,
                page,
            },
            rows: Some(ops::RowTable {
                table: &table,
                first: 0,
                keys: s.keys,
            }),
            out: Some(&out),
            qk_norm: None,
            part: Some(&part),
            out_blocks: None,
        };
        ops::attention_rows(gpu, rec, call).map(|_| ())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matrices_parse_and_bad_ones_name_what_is_wrong() {
        let m = parse_matrix("Q4_k:16896x4096").unwrap();
        assert_eq!((m.ty, m.rows, m.cols), (GgmlType::Q4K, 16896, 4096));
        assert_eq!(m.name, "matrix.q4_K.16896x4096");
        let m = parse_matrix("f32:3X5").unwrap();
        assert_eq!((m.ty, m.rows, m.cols), (GgmlType::F32, 3, 5));
        for (text, names) in [
            ("q4_K", "TYPE:ROWSxCOLS"),
            ("q9:1x256", "no weight type `q9`"),
            ("q4_K:256", "ROWSxCOLS"),
            ("q4_K:0x256", "rows `0`"),
            ("q4_K:2x-1", "columns `-1`"),
            ("q4_K:2x100", "not whole q4_K blocks"),
            ("q8_0:100000000x100000", "bytes of weights"),
        ] {
            let err = parse_matrix(text).unwrap_err();
            assert!(err.contains(names), "{text}: {err}");
        }
    }
}
