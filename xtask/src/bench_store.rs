//! `cargo xtask bench-store`: how fast `Store::import` hashes and copies a file, against
//! `sha256sum` reading and hashing the same file, in one run.
//!
//! Both sides read from the page cache (the file is read once before timing). `import` does
//! strictly more work — it also writes the copy and fsyncs it — so a ratio near 1 means the
//! copy is hidden behind the hash (one pass; hashing on a second thread while the next chunk
//! is read and the current one written). Rounds alternate (ours, theirs, ours, …) so both see
//! the same machine state; the median of each is reported.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use gpuport_runtime::gguf;
use gpuport_store::{ImportOptions, NoProgress, Store};

/// Options of `bench-store`.
pub struct Options {
    /// File to import (a GGUF; default: the Gemma model if fetched, else a generated file).
    pub file: Option<PathBuf>,
    /// Size of the generated file when none is given (MiB).
    pub generated_mib: u64,
    /// Rounds of each side.
    pub rounds: usize,
    /// Folder the scratch stores are made in (default: the system temp folder). On a tmpfs
    /// (`/dev/shm`) the fsync is free and the ratio measures hash + copy alone.
    pub store_dir: Option<PathBuf>,
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn generate(path: &Path, mib: u64) -> anyhow::Result<()> {
    // A valid GGUF (the store parses its header before storing it): one i8 tensor of
    // pseudo-random bytes.
    let len = (mib << 20) as usize;
    let mut tensor = Vec::with_capacity(len);
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    while tensor.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        tensor.extend_from_slice(&x.to_le_bytes());
    }
    tensor.truncate(len);
    let mut w = gguf::GgufWriter::new();
    w.meta("general.architecture", gguf::Value::String("llama".into()))
        .tensor("weights", &[len as u64], 24, tensor);
    std::fs::write(path, w.to_bytes()).with_context(|| path.display().to_string())
}

/// Runs the benchmark and prints one line per side and the ratio.
pub fn run(options: Options) -> anyhow::Result<()> {
    let scratch = match &options.store_dir {
        Some(dir) => tempfile::tempdir_in(dir)?,
        None => tempfile::tempdir()?,
    };
    let default_model = crate::repo_root().join("models/gemma-3-270m-q4_k_m.gguf");
    let file = match options.file {
        Some(f) => f,
        None if default_model.is_file() => default_model,
        None => {
            let path = scratch.path().join("generated.gguf");
            generate(&path, options.generated_mib)?;
            path
        }
    };
    let size = std::fs::metadata(&file)
        .with_context(|| file.display().to_string())?
        .len();
    // Warm the page cache so both sides read from memory.
    std::io::copy(&mut std::fs::File::open(&file)?, &mut std::io::sink())?;

    let mut ours = Vec::new();
    let mut theirs = Vec::new();
    for round in 0..options.rounds {
        let root = scratch.path().join(format!("store-{round}"));
        let store = Store::open(&root)?;
        let started = Instant::now();
        store.import(&file, &ImportOptions::default(), &NoProgress)?;
        ours.push(started.elapsed());
        std::fs::remove_dir_all(&root)?;

        let started = Instant::now();
        let out = std::process::Command::new("sha256sum")
            .arg(&file)
            .output()
            .context("cannot run sha256sum")?;
        theirs.push(started.elapsed());
        ensure!(out.status.success(), "sha256sum failed");
    }
    let gbps = |t: Duration| size as f64 / t.as_secs_f64() / 1e9;
    let (ours, theirs) = (median(ours), median(theirs));
    println!(
        "file: {} ({size} bytes), store in {}, {} rounds, medians",
        file.display(),
        scratch.path().display(),
        options.rounds
    );
    println!(
        "gpuport import (hash + copy + fsync): {:.2} GB/s",
        gbps(ours)
    );
    println!(
        "sha256sum (hash only):                {:.2} GB/s",
        gbps(theirs)
    );
    println!(
        "ratio import / sha256sum: {:.2}x",
        gbps(ours) / gbps(theirs)
    );
    Ok(())
}
