//! `gpuport`: run model bundles on any GPU. This binary is a thin layer over the library crates:
//! argument parsing and printing only.

mod hash;
mod host;
mod inspect;
mod output;
mod probe;
mod validate;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Exit code for a valid run.
const EXIT_OK: u8 = 0;
/// Exit code for an invalid document (every problem was printed).
const EXIT_INVALID: u8 = 1;
/// Exit code for a usage or I/O error.
const EXIT_USAGE: u8 = 2;

#[derive(Parser)]
#[command(
    name = "gpuport",
    version,
    about = "Run model bundles on any GPU through WebGPU"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Validate a ModelPort bundle or manifest, an MLC package folder or sidecar, or a
    /// compiled-program document. Exit 0 valid, 1 invalid (every problem listed with its JSON
    /// pointer), 2 usage or I/O error.
    Validate {
        /// Bundle folder, manifest file, MLC package folder, or program document.
        path: PathBuf,
        /// Print a JSON report on stdout.
        #[arg(long)]
        json: bool,
        /// Check the document alone: skip local file existence, size and SHA-256 checks.
        #[arg(long)]
        no_files: bool,
        /// A compiled-program document to match against the MLC package at PATH.
        #[arg(long, value_name = "FILE")]
        program: Option<PathBuf>,
    },
    /// Summarize a bundle or package: task, variants (and which one this machine would choose),
    /// inputs, outputs, files and sizes.
    Inspect {
        /// Bundle folder, manifest file, MLC package folder, or program document.
        path: PathBuf,
        /// Pretend these runtimes have executors (repeatable), to see which variant another
        /// host would choose. Default: the runtimes this build of gpuport executes.
        #[arg(long = "runtime", value_name = "RUNTIME")]
        runtimes: Vec<String>,
        /// Pretend the device has this much RAM (MiB). Default: this machine's.
        #[arg(long, value_name = "MIB")]
        ram_mb: Option<u64>,
    },
    /// Show the GPU adapter: backend, driver, features, limits; `--bench` measures its
    /// streaming-read bandwidth.
    Probe {
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// Measure the streaming-read ceiling (GB/s).
        #[arg(long)]
        bench: bool,
    },
    /// Print the canonical ids and sizes an MLC package should carry, so a producer can fill
    /// them in (see docs/spec/hashes.md).
    Hash {
        /// Which value to compute.
        #[arg(value_enum)]
        what: hash::HashKind,
        /// MLC package folder or `mlc-model-manifest.json`.
        path: PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let code = match cli.command {
        Command::Validate {
            path,
            json,
            no_files,
            program,
        } => validate::run(&path, json, !no_files, program),
        Command::Inspect {
            path,
            runtimes,
            ram_mb,
        } => inspect::run(&path, &runtimes, ram_mb),
        Command::Hash { what, path } => hash::run(what, &path),
        Command::Probe { json, bench } => probe::run(json, bench),
    };
    ExitCode::from(code)
}
