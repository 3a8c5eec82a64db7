//! `cargo xtask fuzz [--seconds N] [TARGET...]`: every libFuzzer target of `fuzz/`, seeded
//! from the project's real files, each for N seconds, then its corpus minimized into the
//! committed `fuzz/corpus/<target>/`. Findings land in `fuzz/artifacts/<target>/`; each becomes
//! a fixed bug plus a file under `fuzz/regressions/<target>/` that the ordinary test suite
//! replays. Needs the nightly toolchain and `cargo install cargo-fuzz`; without them it says it
//! skipped and succeeds (CI's smoke run).
//!
//! One line per target is printed and, with `--json`, written: seconds, executions, coverage
//! (edges) and features as libFuzzer reports them, out-of-memory / timeout / crash counts, the
//! committed corpus's size, and findings (new files in the artifacts folder).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};
use gpuport_runtime::gguf::{Gguf, GgufWriter, Value};
use serde_json::json;

use crate::repo_root;

/// Every target, in the order they run.
pub const TARGETS: &[&str] = &[
    "gguf",
    "gguf_model",
    "tokenizer",
    "chat_template",
    "tuning_table",
    "modelport",
    "mlc",
    "store_documents",
    "image_decode",
    "wav_decode",
    "onnx",
];

/// Options of one run.
pub struct Options {
    /// Seconds per target.
    pub seconds: u64,
    /// Targets (default: all).
    pub targets: Vec<String>,
    /// Parallel libFuzzer jobs per target (`-fork`); 1 runs in-process.
    pub jobs: u32,
    /// Write the results here as JSON.
    pub json: Option<PathBuf>,
}

/// Whether the nightly toolchain and cargo-fuzz are installed.
fn available() -> bool {
    Command::new("cargo")
        .args(["+nightly", "fuzz", "--version"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs the targets; prints and returns one JSON object per target.
pub fn run(options: Options) -> anyhow::Result<()> {
    if !available() {
        eprintln!(
            "SKIPPED: cargo xtask fuzz needs the nightly toolchain and cargo-fuzz \
             (`rustup toolchain install nightly`, `cargo install cargo-fuzz`)"
        );
        return Ok(());
    }
    let root = repo_root();
    let fuzz = root.join("fuzz");
    let targets: Vec<String> = if options.targets.is_empty() {
        TARGETS.iter().map(|t| t.to_string()).collect()
    } else {
        options.targets.clone()
    };
    for t in &targets {
        if !TARGETS.contains(&t.as_str()) {
            bail!(
                "unknown fuzz target `{t}` (targets: {})",
                TARGETS.join(", ")
            );
        }
    }
    crate::run_command("cargo", &["+nightly", "fuzz", "build", "-O"], &[])?;
    let mut results = Vec::new();
    let mut failed = Vec::new();
    for t in &targets {
        let work = fuzz.join("work").join(t);
        let seeds = work.join("seeds");
        let corpus = work.join("corpus");
        let committed = fuzz.join("corpus").join(t);
        let artifacts = fuzz.join("artifacts").join(t);
        for d in [&seeds, &corpus, &committed, &artifacts] {
            std::fs::create_dir_all(d).with_context(|| d.display().to_string())?;
        }
        write_seeds(t, &root, &seeds)?;
        let before = count_files(&artifacts);
        let out = libfuzzer(
            &fuzz,
            t,
            &[&corpus, &committed, &seeds],
            &[
                format!("-max_total_time={}", options.seconds),
                format!("-max_len={}", max_len(t)),
                format!("-timeout={}", timeout_s(t)),
                "-rss_limit_mb=2048".into(),
                "-print_final_stats=1".into(),
                format!("-fork={}", options.jobs.max(1)),
                "-ignore_crashes=1".into(),
                format!("-artifact_prefix={}/", artifacts.display()),
            ],
        )?;
        let findings = count_files(&artifacts).saturating_sub(before);
        minimize(&fuzz, t, &committed, &[&corpus, &committed])?;
        let stats = Stats::read(&out);
        let result = json!({
            "target": t,
            "seconds": options.seconds,
            "jobs": options.jobs.max(1),
            "executions": stats.executions,
            "coverage": stats.coverage,
            "features": stats.features,
            "ooms": stats.ooms,
            "timeouts": stats.timeouts,
            "crashes": stats.crashes,
            "corpus_files": count_files(&committed),
            "corpus_bytes": dir_bytes(&committed),
            "findings": findings,
        });
        println!("{result}");
        if findings > 0 {
            failed.push(format!(
                "{t}: {findings} finding(s) in {}",
                artifacts.display()
            ));
        }
        results.push(result);
    }
    if let Some(path) = &options.json {
        std::fs::write(path, serde_json::to_string_pretty(&results)?)
            .with_context(|| path.display().to_string())?;
    }
    if !failed.is_empty() {
        bail!("fuzzing found problems:\n{}", failed.join("\n"));
    }
    Ok(())
}

/// Input length bound per target: images and WAVs need room for a real header and some data.
fn max_len(target: &str) -> usize {
    match target {
        "image_decode" | "wav_decode" => 65_536,
        "gguf" | "gguf_model" => 16_384,
        _ => 4_096,
    }
}

/// Seconds one input may take before libFuzzer calls it a hang: 1 s, except for the image
/// decoders, where a 8.7 KB progressive JPEG that legitimately declares 160 × 65,535 pixels
/// decodes in 0.61 s in a release build and 15 s under the fuzzer's AddressSanitizer.
fn timeout_s(target: &str) -> u32 {
    match target {
        "image_decode" => 20,
        _ => 1,
    }
}

/// Runs one target over `corpora` (new inputs go to the first) and returns its stderr.
fn libfuzzer(
    fuzz: &Path,
    target: &str,
    corpora: &[&Path],
    flags: &[String],
) -> anyhow::Result<String> {
    let mut cmd = Command::new("cargo");
    cmd.args(["+nightly", "fuzz", "run", "-O", target]);
    cmd.args(corpora);
    cmd.arg("--")
        .args(flags)
        .current_dir(fuzz.parent().unwrap_or(fuzz));
    eprintln!(
        "$ cargo +nightly fuzz run -O {target} … -- {}",
        flags.join(" ")
    );
    let out = cmd.output().with_context(|| format!("fuzz run {target}"))?;
    Ok(String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Minimizes `sources` into `into` (libFuzzer's `-merge=1`: the fewest inputs with the same
/// features), replacing what `into` held.
fn minimize(fuzz: &Path, target: &str, into: &Path, sources: &[&Path]) -> anyhow::Result<()> {
    let merged = into.with_extension("merged");
    let _ = std::fs::remove_dir_all(&merged);
    std::fs::create_dir_all(&merged)?;
    let mut corpora: Vec<&Path> = vec![&merged];
    corpora.extend_from_slice(sources);
    libfuzzer(
        fuzz,
        target,
        &corpora,
        &[
            "-merge=1".into(),
            format!("-max_len={}", max_len(target)),
            format!("-timeout={}", timeout_s(target)),
        ],
    )?;
    cap_bytes(&merged, CORPUS_BYTES)?;
    if count_files(&merged) > 0 {
        std::fs::remove_dir_all(into)?;
        std::fs::rename(&merged, into)?;
    } else {
        std::fs::remove_dir_all(&merged)?;
    }
    Ok(())
}

/// Most bytes a committed corpus keeps (the rule: well under 1 MiB per target).
const CORPUS_BYTES: u64 = 512 * 1024;

/// Drops the largest inputs of `dir` until it holds at most `limit` bytes.
fn cap_bytes(dir: &Path, limit: u64) -> anyhow::Result<()> {
    let mut files: Vec<(u64, PathBuf)> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .filter_map(|e| Some((e.metadata().ok()?.len(), e.path())))
        .collect();
    files.sort();
    let mut total: u64 = files.iter().map(|f| f.0).sum();
    while total > limit {
        let Some((len, path)) = files.pop() else {
            break;
        };
        std::fs::remove_file(&path)?;
        total -= len;
    }
    Ok(())
}

/// libFuzzer's final figures.
#[derive(Default)]
struct Stats {
    executions: u64,
    coverage: u64,
    features: u64,
    ooms: u64,
    timeouts: u64,
    crashes: u64,
}

impl Stats {
    fn read(log: &str) -> Stats {
        let mut s = Stats::default();
        for line in log.lines() {
            let field = |name: &str| {
                line.split_whitespace()
                    .skip_while(|w| *w != name)
                    .nth(1)
                    .and_then(|v| v.parse::<u64>().ok())
            };
            if let Some(v) = line
                .strip_prefix("stat::number_of_executed_units:")
                .and_then(|v| v.trim().parse::<u64>().ok())
            {
                s.executions += v;
            }
            // `#1234 NEW cov: 567 ft: 890 ...` (in-process) or `#1234: cov: 567 ft: 890 ...`
            // (fork mode): the last report wins.
            if line.starts_with('#') {
                if let Some(v) = field("cov:") {
                    s.coverage = v;
                }
                if let Some(v) = field("ft:") {
                    s.features = v;
                }
                // Fork mode: `oom/timeout/crash: 0/0/0`.
                if let Some(counts) = line
                    .split_whitespace()
                    .skip_while(|w| *w != "oom/timeout/crash:")
                    .nth(1)
                {
                    let n: Vec<u64> = counts.split('/').filter_map(|c| c.parse().ok()).collect();
                    if let [o, t, c] = n[..] {
                        (s.ooms, s.timeouts, s.crashes) = (o, t, c);
                    }
                }
                if let Some(v) = line
                    .split_whitespace()
                    .next()
                    .and_then(|w| w.trim_start_matches('#').trim_end_matches(':').parse().ok())
                {
                    s.executions = s.executions.max(v);
                }
            }
        }
        s
    }
}

fn count_files(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |d| d.filter_map(Result::ok).count())
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir).map_or(0, |d| {
        d.filter_map(Result::ok)
            .filter_map(|e| e.metadata().ok())
            .map(|m| m.len())
            .sum()
    })
}

/// Writes the seeds of `target` from the project's real files into `dir`.
fn write_seeds(target: &str, root: &Path, dir: &Path) -> anyhow::Result<()> {
    let mut n = 0usize;
    let mut put = |bytes: &[u8]| -> anyhow::Result<()> {
        n += 1;
        let path = dir.join(format!("seed-{n:04}"));
        std::fs::write(&path, bytes).with_context(|| path.display().to_string())
    };
    let files = |sub: &str, ext: &[&str]| -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut stack = vec![root.join(sub)];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| ext.iter().any(|e| x == *e)) {
                    out.push(p);
                }
            }
        }
        out.sort();
        out
    };
    let models = root.join("models");
    match target {
        "gguf" | "gguf_model" => {
            for m in [
                "SmolLM2-135M-Instruct.Q4_1.gguf",
                "gemma-3-270m-q4_k_m.gguf",
            ] {
                if let Ok(g) = Gguf::open(&models.join(m)) {
                    put(&miniature(&g))?;
                }
            }
        }
        "tokenizer" => {
            let corpus = root.join("llm/tests/fixtures/llama_cpp/tokenizer_corpus.json");
            let texts: Vec<String> =
                serde_json::from_slice(&std::fs::read(&corpus).context("tokenizer corpus")?)?;
            for (i, t) in texts.iter().enumerate().take(120) {
                // Mode byte: tokenizer (bit 0), encode (bit 1 clear), BOS (bit 2).
                let mut b = vec![(i % 8) as u8 & !2];
                b.extend_from_slice(t.as_bytes());
                put(&b)?;
            }
            for head in [2u8, 3, 6, 7] {
                let mut b = vec![head];
                for id in [1u32, 2, 100, 1000, 20_000, 49_000, 250_000, 262_143] {
                    b.extend_from_slice(&id.to_le_bytes());
                }
                put(&b)?;
            }
        }
        "chat_template" => {
            let convo: &[&[u8]] = &[
                b"\x01\x00You are helpful.\xff\x01Hi there\xff\x02Hello! How can I help?\xff\x01Tell me a joke",
                b"\x00\x01What is 2+2?",
                b"\x01\x03tool\x00{\"x\": 1}\xff\x01<|im_start|>user\n",
            ];
            for c in convo {
                put(c)?;
            }
        }
        "tuning_table" => put(&std::fs::read(root.join("runtime/tuning/default.json"))?)?,
        "modelport" => {
            for p in files("examples/modelport", &["json"])
                .into_iter()
                .chain(files("manifest-core/tests/cases", &["json"]))
            {
                put(&std::fs::read(p)?)?;
            }
        }
        "mlc" => {
            for p in files("examples/mlc", &["json"]) {
                put(&std::fs::read(p)?)?;
            }
        }
        "store_documents" => {
            put(&std::fs::read(root.join("store/catalog/default.json"))?)?;
        }
        "image_decode" => {
            for p in files(
                "preprocess/tests/fixtures/image",
                &["png", "jpg", "jpeg", "webp", "gif", "bmp"],
            ) {
                let b = std::fs::read(p)?;
                if b.len() <= max_len(target) {
                    put(&b)?;
                }
            }
        }
        "onnx" => {
            // The backend node tests the `onnx` wheel ships (tools/requirements-test.txt):
            // every small model and test-data tensor, one in three.
            let out = std::process::Command::new("python3")
                .args([
                    "-c",
                    "import onnx, os; print(os.path.dirname(onnx.__file__))",
                ])
                .output();
            if let Ok(out) = out
                && out.status.success()
            {
                let pkg = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
                let node = pkg.join("backend/test/data/node");
                let mut all = Vec::new();
                let mut stack = vec![node];
                while let Some(d) = stack.pop() {
                    for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                        let p = e.path();
                        if p.is_dir() {
                            stack.push(p);
                        } else if p.extension().is_some_and(|x| x == "onnx" || x == "pb") {
                            all.push(p);
                        }
                    }
                }
                all.sort();
                for p in all.iter().step_by(3) {
                    let b = std::fs::read(p)?;
                    if b.len() <= max_len(target) {
                        put(&b)?;
                    }
                }
            }
        }
        "wav_decode" => {
            for p in files("preprocess/tests/fixtures/audio", &["wav"]) {
                let mut b = std::fs::read(p)?;
                // A valid header and the first samples (the data size field then lies, which
                // the decoder must handle too).
                b.truncate(max_len(target));
                put(&b)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// A miniature of a real model: every scalar metadata value as stored, every array cut to its
/// first 256 elements (so the tokenizer still builds), and each tensor's info with a few bytes
/// of data — a few KiB that exercise the same parser paths as the real file.
fn miniature(g: &Gguf) -> Vec<u8> {
    let mut w = GgufWriter::new();
    for (k, v) in &g.metadata {
        let v = match v {
            Value::Array(t, items) => Value::Array(*t, items.iter().take(256).cloned().collect()),
            v => v.clone(),
        };
        w.meta(k, v);
    }
    if let Some(t) = g.tensors.iter().find(|t| t.name == "token_embd.weight")
        && let Some(info) = gpuport_runtime::gguf::type_info(t.type_id)
    {
        let dims = [t.dims[0], 2];
        let bytes = (t.dims[0] / info.block_elems * info.block_bytes * 2) as usize;
        w.tensor(&t.name, &dims, t.type_id, vec![0x11; bytes]);
    }
    w.to_bytes()
}
