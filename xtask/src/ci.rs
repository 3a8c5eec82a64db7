//! `cargo xtask ci`: what `.ci/run` runs once dependencies are installed.

use crate::run_command;

/// The README's test command.
pub const TEST_COMMAND: &[&str] = &["test", "--workspace"];

pub fn run() -> anyhow::Result<()> {
    run_command("cargo", &["fmt", "--all", "--", "--check"], &[])?;
    run_command(
        "cargo",
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ],
        &[],
    )?;
    run_command(
        "cargo",
        &["doc", "--workspace", "--no-deps"],
        &[("RUSTDOCFLAGS", "-D warnings")],
    )?;
    run_command("cargo", TEST_COMMAND, &[])?;
    eprintln!("$ cargo xtask bench --quick");
    crate::bench::run(crate::bench::Options {
        quick: true,
        json: None,
        write_table: false,
        table_out: None,
        max_bytes: None,
        shapes: Vec::new(),
        types: Vec::new(),
        matrix: Vec::new(),
        gemm_only: false,
        other_kernels: false,
        gemm_tokens: None,
        splits: Vec::new(),
        streams: Vec::new(),
        tuned: false,
        kernel: None,
        exhaustive: false,
        wg: Vec::new(),
        lanes: Vec::new(),
    })?;
    // A smoke run of every fuzz target (the long runs are in docs/reliability.md); it says
    // SKIPPED where the nightly toolchain or cargo-fuzz is missing.
    eprintln!("$ cargo xtask fuzz --seconds {FUZZ_SMOKE_SECONDS}");
    crate::fuzz::run(crate::fuzz::Options {
        seconds: FUZZ_SMOKE_SECONDS,
        targets: Vec::new(),
        jobs: 1,
        json: None,
    })
}

/// Seconds per fuzz target in CI's smoke run.
const FUZZ_SMOKE_SECONDS: u64 = 5;
