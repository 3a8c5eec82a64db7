//! `gpuport preprocess`: build one input tensor exactly as the runtime would — a ModelPort image
//! input (resize, crop, normalize, layout, dtype) or an MLC package input (`image_decode`,
//! `audio_decode`) — and write it as raw little-endian bytes (the golden-file format) or `.npy`.

use std::path::{Path, PathBuf};

use gpuport_manifest_core::document::Opened;
use gpuport_manifest_core::mlc::{self, AdapterDtype, ModelPackage, Processor};
use gpuport_manifest_core::modelport::Manifest;
use gpuport_preprocess::image::{InverseTransform, decode_image_file, preprocess_image};
use gpuport_preprocess::mlc::{adapter_input_dtype, audio_decode, image_decode};
use gpuport_preprocess::tensor::Tensor;
use serde_json::json;

use crate::output::open_valid;
use crate::{EXIT_OK, EXIT_USAGE};

/// What `gpuport preprocess` was asked for.
pub struct PreprocessArgs {
    pub path: PathBuf,
    pub image: Option<PathBuf>,
    pub audio: Option<PathBuf>,
    pub input: Option<String>,
    pub task: Option<String>,
    pub program: Option<PathBuf>,
    pub out: Option<PathBuf>,
    pub print: bool,
    pub json: bool,
}

/// A failure, printed as `error: …`; every one exits with [`EXIT_USAGE`].
type Failure = String;

pub fn run(args: PreprocessArgs) -> u8 {
    let opened = match open_valid(&args.path) {
        Ok(opened) => opened,
        Err(code) => return code,
    };
    let result = match opened {
        Opened::Modelport { manifest, .. } => modelport_tensor(&manifest, &args),
        Opened::Package { package, .. } => package_tensor(&package, &args),
        Opened::Program(_) => Err(format!(
            "{}: a compiled program has no inputs; give the MLC package",
            args.path.display()
        )),
    };
    match result.and_then(|(name, tensor, transform)| finish(&args, &name, &tensor, transform)) {
        Ok(()) => EXIT_OK,
        Err(e) => {
            eprintln!("error: {e}");
            EXIT_USAGE
        }
    }
}

/// Picks `wanted` among `names`, or the only one when nothing is asked for.
fn pick<'a>(what: &str, wanted: Option<&str>, names: &[&'a str]) -> Result<&'a str, Failure> {
    match wanted {
        Some(w) => names
            .iter()
            .find(|n| **n == w)
            .copied()
            .ok_or_else(|| format!("no {what} `{w}` (have: {})", names.join(", "))),
        None => match names {
            [one] => Ok(one),
            [] => Err(format!("there is no {what} to preprocess")),
            many => Err(format!(
                "several {what}s; pick one with --{what} ({})",
                many.join(", ")
            )),
        },
    }
}

fn image_path(args: &PreprocessArgs) -> Result<&Path, Failure> {
    args.image
        .as_deref()
        .ok_or_else(|| "this input is an image: give IMAGE or --image FILE".to_owned())
}

type Built = (String, Tensor, Option<InverseTransform>);

fn modelport_tensor(manifest: &Manifest, args: &PreprocessArgs) -> Result<Built, Failure> {
    let names: Vec<&str> = manifest
        .inputs
        .iter()
        .filter(|i| i.preprocess.is_some())
        .map(|i| i.name.as_str())
        .collect();
    let name = pick("input", args.input.as_deref(), &names)?;
    let input = manifest
        .inputs
        .iter()
        .find(|i| i.name == name)
        .ok_or_else(|| format!("no input `{name}`"))?;
    if args.audio.is_some() {
        return Err(format!("input `{name}` takes an image, not audio"));
    }
    let image = decode_image_file(image_path(args)?).map_err(|e| e.to_string())?;
    let out = preprocess_image(&image, input).map_err(|e| e.to_string())?;
    Ok((name.to_owned(), out.tensor, Some(out.transform)))
}

fn package_tensor(package: &ModelPackage, args: &PreprocessArgs) -> Result<Built, Failure> {
    let tasks: Vec<&str> = package.tasks.keys().map(String::as_str).collect();
    let task_name = pick("task", args.task.as_deref(), &tasks)?;
    let task = &package.tasks[task_name];
    let names: Vec<&str> = task
        .inputs
        .iter()
        .filter(|(_, i)| !matches!(i.processor, Processor::Tokenizer))
        .map(|(n, _)| n.as_str())
        .collect();
    let name = pick("input", args.input.as_deref(), &names)?;
    let input = &task.inputs[name];
    match &input.processor {
        Processor::ImageDecode(spec) => {
            let dtype = match (&args.program, &input.adapter) {
                (Some(file), Some(adapter)) => {
                    let text = std::fs::read_to_string(file)
                        .map_err(|e| format!("{}: {e}", file.display()))?;
                    let program = mlc::parse_program(&text)
                        .map_err(|p| {
                            format!(
                                "{}: not a valid compiled program ({} problems)",
                                file.display(),
                                p.len()
                            )
                        })?
                        .document;
                    let executor = program.programs.get(&task.executor).ok_or_else(|| {
                        format!("{}: no program `{}`", file.display(), task.executor)
                    })?;
                    adapter_input_dtype(executor, adapter)
                }
                _ => AdapterDtype::Uint8,
            };
            let image = decode_image_file(image_path(args)?).map_err(|e| e.to_string())?;
            let tensor = image_decode(&image, spec, dtype).map_err(|e| e.to_string())?;
            Ok((name.to_owned(), tensor, None))
        }
        Processor::AudioDecode(spec) => {
            let file = args
                .audio
                .as_deref()
                .ok_or_else(|| format!("input `{name}` is audio: give --audio FILE.wav"))?;
            let bytes = std::fs::read(file).map_err(|e| format!("{}: {e}", file.display()))?;
            let samples =
                audio_decode(&bytes, spec).map_err(|e| format!("{}: {e}", file.display()))?;
            let tensor = Tensor {
                shape: vec![1, samples.len()],
                data: gpuport_preprocess::tensor::TensorData::F32(samples),
            };
            Ok((name.to_owned(), tensor, None))
        }
        Processor::Tokenizer => Err(format!(
            "input `{name}` is text (tokenizer), not preprocessed here"
        )),
    }
}

/// Writes `bytes` to `path` through a temporary file in the same folder, so a failure never
/// leaves a partial or stale-looking output behind.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), Failure> {
    let file_name = path
        .file_name()
        .ok_or_else(|| format!("{}: not a file path", path.display()))?;
    let temp = path.with_file_name(format!(
        ".{}.partial-{}",
        file_name.to_string_lossy(),
        std::process::id()
    ));
    let result = std::fs::write(&temp, bytes).and_then(|()| std::fs::rename(&temp, path));
    if let Err(e) = result {
        let _ = std::fs::remove_file(&temp);
        return Err(format!("{}: {e}", path.display()));
    }
    Ok(())
}

fn finish(
    args: &PreprocessArgs,
    name: &str,
    tensor: &Tensor,
    transform: Option<InverseTransform>,
) -> Result<(), Failure> {
    if let Some(out) = &args.out {
        let npy = out
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("npy"));
        let bytes = if npy {
            tensor.to_npy()
        } else {
            tensor.data.to_le_bytes()
        };
        write_atomically(out, &bytes)?;
    }
    let stats = tensor.stats();
    if args.json {
        let report = json!({
            "input": name,
            "dtype": tensor.data.type_name(),
            "shape": tensor.shape,
            "min": stats.map(|s| s.min),
            "max": stats.map(|s| s.max),
            "mean": stats.map(|s| s.mean),
            "transform": transform,
            "out": args.out,
        });
        println!("{report:#}");
        return Ok(());
    }
    println!(
        "input {name}: {} {:?}",
        tensor.data.type_name(),
        tensor.shape
    );
    if let (true, Some(s)) = (args.print, stats) {
        println!("min {} max {} mean {:.6}", s.min, s.max, s.mean);
    }
    if let Some(t) = transform {
        println!(
            "transform: {}x{} -> resize {}x{} -> input {}x{} at ({}, {}) of the resized image",
            t.original_width,
            t.original_height,
            t.resized_width,
            t.resized_height,
            t.input_width,
            t.input_height,
            t.crop_left,
            t.crop_top
        );
    }
    if let Some(out) = &args.out {
        println!("wrote {}", out.display());
    }
    Ok(())
}
