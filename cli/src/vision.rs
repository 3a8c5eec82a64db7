//! `gpuport run BUNDLE IMAGE…` and `gpuport golden BUNDLE`: ModelPort image-classification and
//! object-detection bundles through their `onnx` variant. Preprocessing is the bit-exact one of
//! `gpuport-preprocess`; post-processing (softmax/top-k, detection decoding, NMS, boxes mapped
//! back to the original image) is `gpuport_preprocess::post`.

use std::path::{Path, PathBuf};

use gpuport_manifest_core::document::Opened;
use gpuport_manifest_core::modelport::{Manifest, Postprocess, select_variant};
use gpuport_onnx::bundle::{Device, GoldenReport, VisionBundle};
use gpuport_onnx::{Data, HostTensor};
use gpuport_preprocess::image::{decode_image_file, preprocess_image};
use gpuport_preprocess::post::{OutputTensor, classify, detect, parse_labels};
use gpuport_preprocess::tensor::TensorData;
use gpuport_runtime::{Gpu, GpuOptions};
use serde_json::{Value, json};

use crate::output::open_valid;
use crate::{EXIT_INVALID, EXIT_OK, EXIT_USAGE};

/// Prints a line to stdout; a closed stdout (`gpuport run … | head`) ends the command
/// quietly instead of panicking.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        if writeln!(std::io::stdout(), $($arg)*).is_err() {
            std::process::exit(i32::from(EXIT_OK));
        }
    }};
}

/// Where `run`, `golden` and `onnx-run` execute the graph.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum DeviceArg {
    /// The GPU executor (wgpu: the GPU, or Mesa's software Vulkan when there is none).
    Gpu,
    /// The host reference evaluator: exact and slow, every supported element type.
    Cpu,
}

/// The device for `arg`, opening the GPU; prints the error and gives the exit code.
pub fn device(arg: DeviceArg) -> Result<Device, u8> {
    match arg {
        DeviceArg::Cpu => Ok(Device::Host),
        DeviceArg::Gpu => match Gpu::new(&GpuOptions::default()) {
            Ok(g) => Ok(Device::Gpu(std::sync::Arc::new(g))),
            Err(e) => {
                eprintln!("error: no GPU adapter: {e} (--device cpu runs on the host)");
                Err(EXIT_USAGE)
            }
        },
    }
}

/// Opens the bundle at `path` and its chosen (or named) `onnx` variant.
fn open_bundle(
    path: &Path,
    variant: Option<&str>,
    device_arg: DeviceArg,
) -> Result<VisionBundle, u8> {
    let (manifest, root) = match open_valid(path)? {
        Opened::Modelport { manifest, root } => (manifest, root),
        _ => {
            eprintln!("error: {}: not a ModelPort bundle", path.display());
            return Err(EXIT_USAGE);
        }
    };
    let index = match variant {
        Some(id) => manifest
            .variants
            .iter()
            .position(|v| v.id == id)
            .ok_or_else(|| {
                let ids: Vec<&str> = manifest.variants.iter().map(|v| v.id.as_str()).collect();
                eprintln!("error: no variant `{id}` (have: {})", ids.join(", "));
                EXIT_USAGE
            })?,
        None => {
            let registered = crate::host::registered(&[]);
            let selection = select_variant(&manifest.variants, &registered, crate::host::ram_mb());
            selection.chosen.ok_or_else(|| {
                eprintln!("error: no variant of {} runs here:", manifest.id);
                for s in &selection.skipped {
                    eprintln!("    {}: {:?}", s.id, s.reason);
                }
                EXIT_INVALID
            })?
        }
    };
    let dev = device(device_arg)?;
    VisionBundle::open(manifest, &root, index, &dev).map_err(|e| {
        eprintln!("error: {e}");
        EXIT_INVALID
    })
}

fn labels(manifest: &Manifest, root: &Path) -> Result<Vec<String>, String> {
    let Some(file) = manifest
        .outputs
        .iter()
        .find_map(|o| o.postprocess.as_ref().and_then(Postprocess::labels))
    else {
        return Ok(Vec::new());
    };
    let rel = file.path().ok_or("the labels file is a URL")?;
    let path = root.join(rel);
    let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse_labels(&bytes).map_err(|e| format!("{}: {e}", path.display()))
}

/// What `gpuport run` was asked for.
pub struct RunArgs {
    pub bundle: PathBuf,
    pub images: Vec<PathBuf>,
    pub json: bool,
    pub top_k: Option<usize>,
    pub variant: Option<String>,
    pub device: DeviceArg,
    pub save_outputs: Option<PathBuf>,
    /// One image: the annotated copy's path; several: a folder for `<stem>.png` each.
    pub annotate: Option<PathBuf>,
    /// Images per call when the graph's batch dim is symbolic.
    pub batch: usize,
}

/// Where the annotated copy of image `k` of `images` goes.
fn annotate_path(out: &Path, images: &[PathBuf], k: usize) -> PathBuf {
    if images.len() == 1 {
        return out.to_path_buf();
    }
    let stem = images[k]
        .file_stem()
        .map_or_else(|| format!("image{k}"), |s| s.to_string_lossy().into_owned());
    // Two images of one name (from different folders) must not overwrite each other.
    let clash = images
        .iter()
        .enumerate()
        .any(|(j, p)| j != k && p.file_stem() == images[k].file_stem());
    if clash {
        out.join(format!("{stem}.{k}.png"))
    } else {
        out.join(format!("{stem}.png"))
    }
}

pub fn run(args: RunArgs) -> u8 {
    let b = match open_bundle(&args.bundle, args.variant.as_deref(), args.device) {
        Ok(b) => b,
        Err(code) => return code,
    };
    let labels = match labels(&b.manifest, &b.root) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("error: labels: {e}");
            return EXIT_INVALID;
        }
    };
    let [input] = &b.manifest.inputs[..] else {
        eprintln!("error: `gpuport run` takes bundles with one image input");
        return EXIT_USAGE;
    };
    if args.batch == 0 {
        eprintln!("error: --batch must be at least 1");
        return EXIT_USAGE;
    }
    for dir in [
        &args.save_outputs,
        &args
            .annotate
            .as_ref()
            .filter(|_| args.images.len() > 1)
            .cloned(),
    ]
    .into_iter()
    .flatten()
    {
        if let Err(e) = std::fs::create_dir_all(dir) {
            eprintln!("error: {}: {e}", dir.display());
            return EXIT_USAGE;
        }
    }
    let indexed: Vec<(usize, &PathBuf)> = args.images.iter().enumerate().collect();
    for chunk in indexed.chunks(args.batch) {
        let mut prepared = Vec::new();
        for (_, image_path) in chunk {
            match prepare(input, image_path) {
                Ok(p) => prepared.push(p),
                Err((code, e)) => {
                    eprintln!("error: {}: {e}", image_path.display());
                    return code;
                }
            }
        }
        let tensors = prepared.iter().map(|p| p.tensor.clone()).collect();
        let outputs = match b.run_items(&input.name, tensors) {
            Ok(o) => o,
            Err(e) => {
                let code = match e {
                    gpuport_onnx::EvalError::Unsupported { .. } => {
                        crate::onnx_run::EXIT_UNSUPPORTED
                    }
                    _ => EXIT_INVALID,
                };
                let names: Vec<String> =
                    chunk.iter().map(|(_, p)| p.display().to_string()).collect();
                eprintln!("error: {}: {e}", names.join(", "));
                return code;
            }
        };
        for (((k, image_path), p), outputs) in chunk.iter().zip(&prepared).zip(outputs) {
            let save = args.save_outputs.as_deref().map(|d| (d, *k));
            let report = match report(&b, image_path, p, &outputs, &labels, args.top_k, save) {
                Ok(r) => r,
                Err((code, e)) => {
                    eprintln!("error: {}: {e}", image_path.display());
                    return code;
                }
            };
            if let Some(out) = &args.annotate {
                let path = annotate_path(out, &args.images, *k);
                if let Err(e) = crate::annotate::annotate(&p.image, &report, &path) {
                    eprintln!("error: --annotate: {e}");
                    return EXIT_USAGE;
                }
            }
            if args.json {
                out!("{report}");
            } else {
                print_report(image_path, &report);
            }
        }
    }
    EXIT_OK
}

/// An image decoded and made into the bundle's input tensor.
struct Prepared {
    image: gpuport_preprocess::image::RgbImage,
    transform: gpuport_preprocess::image::InverseTransform,
    tensor: HostTensor,
}

fn prepare(
    input: &gpuport_manifest_core::modelport::InputSpec,
    image_path: &Path,
) -> Result<Prepared, (u8, String)> {
    let usage = |e: String| (EXIT_USAGE, e);
    let invalid = |e: String| (EXIT_INVALID, e);
    let image = decode_image_file(image_path).map_err(|e| usage(e.to_string()))?;
    let pre = preprocess_image(&image, input).map_err(|e| invalid(e.to_string()))?;
    let data = match pre.tensor.data {
        TensorData::F32(v) => Data::F32(v),
        TensorData::U8(v) => Data::U8(v),
        other => {
            return Err(invalid(format!(
                "input dtype {} is not supported",
                other_name(&other)
            )));
        }
    };
    let tensor =
        HostTensor::new(pre.tensor.shape, data).ok_or_else(|| invalid("input tensor".into()))?;
    Ok(Prepared {
        image,
        transform: pre.transform,
        tensor,
    })
}

/// One image's result from its outputs: classes or detections, as `gpuport run` prints them.
fn report(
    b: &VisionBundle,
    image_path: &Path,
    prepared: &Prepared,
    outputs: &[(String, HostTensor)],
    labels: &[String],
    top_k: Option<usize>,
    save: Option<(&Path, usize)>,
) -> Result<Value, (u8, String)> {
    let usage = |e: String| (EXIT_USAGE, e);
    let invalid = |e: String| (EXIT_INVALID, e);
    if let Some((dir, k)) = save {
        for (name, t) in outputs {
            let path = dir.join(format!("{k}.{}.npy", crate::onnx_run::file_stem(name)));
            gpuport_onnx::npy::write(&path, t).map_err(|e| usage(e.to_string()))?;
        }
    }
    let f32_output = |name: &str| -> Result<(Vec<usize>, Vec<f32>), (u8, String)> {
        let (_, t) = outputs
            .iter()
            .find(|(n, _)| n == name)
            .ok_or_else(|| invalid(format!("the graph has no output `{name}`")))?;
        match &t.data {
            Data::F32(v) => Ok((t.shape.clone(), v.clone())),
            d => Err(invalid(format!(
                "output `{name}` is {}, not FLOAT",
                d.dtype()
            ))),
        }
    };
    for spec in &b.manifest.outputs {
        match &spec.postprocess {
            Some(Postprocess::Classification(post)) => {
                let (shape, values) = f32_output(&spec.name)?;
                let out = OutputTensor {
                    name: &spec.name,
                    shape: &shape,
                    values: &values,
                };
                let ranked =
                    classify(&out, post, labels, top_k).map_err(|e| invalid(e.to_string()))?;
                let results: Vec<Value> = ranked
                    .iter()
                    .map(|c| json!({"index": c.index, "label": c.label, "score": c.score}))
                    .collect();
                return Ok(json!({"image": image_path, "results": results}));
            }
            Some(Postprocess::Detection(post)) => {
                let (shape, values) = f32_output(&spec.name)?;
                let boxes_owned = match &post.boxes_output {
                    Some(name) => Some(f32_output(name)?),
                    None => None,
                };
                let out = OutputTensor {
                    name: &spec.name,
                    shape: &shape,
                    values: &values,
                };
                let boxes = boxes_owned.as_ref().map(|(s, v)| OutputTensor {
                    name: post.boxes_output.as_deref().unwrap_or_default(),
                    shape: s,
                    values: v,
                });
                let found = detect(&out, boxes.as_ref(), post, labels, &prepared.transform)
                    .map_err(|e| invalid(e.to_string()))?;
                let detections: Vec<Value> = found
                    .iter()
                    .map(|d| {
                        json!({"index": d.class_index, "label": d.label, "score": d.score,
                               "box": d.image_box})
                    })
                    .collect();
                return Ok(json!({"image": image_path, "detections": detections}));
            }
            None => {}
        }
    }
    Err(invalid(
        "no output has a classification or detection postprocess".into(),
    ))
}

fn other_name(d: &TensorData) -> &'static str {
    d.type_name()
}

fn print_report(image: &Path, report: &Value) {
    out!("{}", image.display());
    let label = |v: &Value| {
        v["label"]
            .as_str()
            .map_or_else(|| format!("class {}", v["index"]), str::to_string)
    };
    if let Some(results) = report["results"].as_array() {
        for r in results {
            out!(
                "  {:>7.3}%  {} ({})",
                r["score"].as_f64().unwrap_or(0.0) * 100.0,
                label(r),
                r["index"]
            );
        }
    }
    if let Some(dets) = report["detections"].as_array() {
        if dets.is_empty() {
            out!("  no detections");
        }
        for d in dets {
            let b: Vec<String> = d["box"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|v| format!("{:.1}", v.as_f64().unwrap_or(0.0)))
                        .collect()
                })
                .unwrap_or_default();
            out!(
                "  {:.3}  {}  [{}]",
                d["score"].as_f64().unwrap_or(0.0),
                label(d),
                b.join(", ")
            );
        }
    }
}

pub fn golden(bundle: &Path, variant: Option<&str>, json_out: bool, device: DeviceArg) -> u8 {
    let b = match open_bundle(bundle, variant, device) {
        Ok(b) => b,
        Err(code) => return code,
    };
    let report = match b.golden() {
        Ok(Some(r)) => r,
        Ok(None) => {
            eprintln!("error: {} has no golden test", b.manifest.id);
            return EXIT_USAGE;
        }
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_INVALID;
        }
    };
    if json_out {
        out!("{}", golden_json(&report));
    } else {
        out!(
            "variant {} (atol {}, rtol {})",
            report.variant,
            report.tolerance.atol,
            report.tolerance.rtol
        );
        for o in &report.outputs {
            let verdict = match o.first_failure {
                None => "pass".to_string(),
                Some((i, got, want)) => format!("FAIL at element {i}: got {got}, expected {want}"),
            };
            out!(
                "  {}: {} elements, max abs error {:.3e}, max rel error {:.3e}: {verdict}",
                o.name,
                o.elements,
                o.max_abs,
                o.max_rel
            );
        }
    }
    if report.passed() {
        EXIT_OK
    } else {
        EXIT_INVALID
    }
}

fn golden_json(r: &GoldenReport) -> Value {
    json!({
        "variant": r.variant,
        "tolerance": {"atol": r.tolerance.atol, "rtol": r.tolerance.rtol},
        "passed": r.passed(),
        "outputs": r.outputs.iter().map(|o| json!({
            "name": o.name,
            "elements": o.elements,
            "max_abs_error": o.max_abs,
            "max_rel_error": o.max_rel,
            "first_failure": o.first_failure.map(|(i, got, want)| json!({"index": i, "got": got, "expected": want})),
        })).collect::<Vec<_>>(),
    })
}
