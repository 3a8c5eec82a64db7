//! ModelPort image preprocessing (resize → crop → normalize → layout) on decoded photos of common
//! sizes, ours against Pillow and `modelport.preprocess` on the same pixels in the same run.
//!
//! `cargo bench -p gpuport-benches --bench preprocess` runs the criterion groups, then prints a
//! table of ratios: ours with 1 thread and with all threads ÷ Pillow's resize+crop (1 thread) and
//! ÷ the whole Python reference pipeline. The Python side is `tools/preprocess_bench.py`; without
//! it (no `python3` with `modelport-cli`) the ratio table says so and only criterion runs.

#![allow(missing_docs)] // `criterion_group!` generates an undocumented public function.

use std::hint::black_box;
use std::process::Command;
use std::time::Duration;

use criterion::{Criterion, criterion_group};
use gpuport_benches::{median_time, synthetic_rgb};
use gpuport_manifest_core::modelport::{
    ColorOrder, DType, Dim, ImagePreprocess, InputSpec, Layout, Resize, ResizeMethod, ResizeTarget,
};
use gpuport_preprocess::image::{RgbImage, preprocess_image};

struct Case {
    name: &'static str,
    width: usize,
    height: usize,
    spec: InputSpec,
}

fn spec(
    target: ResizeTarget,
    method: ResizeMethod,
    antialias: bool,
    crop: Option<[u64; 2]>,
    dtype: DType,
) -> InputSpec {
    let imagenet = dtype != DType::Uint8;
    let [h, w] = crop.unwrap_or(match target {
        ResizeTarget::Size(hw) => hw,
        ResizeTarget::ShorterSide(_) => [0, 0],
    });
    let dim = |v: u64| if v == 0 { Dim::Dynamic } else { Dim::Fixed(v) };
    InputSpec {
        name: "pixel_values".into(),
        dtype,
        shape: vec![Dim::Fixed(1), Dim::Fixed(3), dim(h), dim(w)],
        layout: Some(Layout::Nchw),
        preprocess: Some(ImagePreprocess {
            resize: Resize {
                target,
                method,
                antialias,
            },
            center_crop: crop,
            color: ColorOrder::Rgb,
            scale: if imagenet { 1.0 / 255.0 } else { 1.0 },
            mean: if imagenet {
                [0.485, 0.456, 0.406]
            } else {
                [0.0; 3]
            },
            std: if imagenet {
                [0.229, 0.224, 0.225]
            } else {
                [1.0; 3]
            },
        }),
    }
}

fn cases() -> Vec<Case> {
    use ResizeMethod::*;
    let short = ResizeTarget::ShorterSide(256);
    vec![
        Case {
            name: "4032x3024 bilinear-aa shorter 256 crop 224 f32",
            width: 4032,
            height: 3024,
            spec: spec(short, Bilinear, true, Some([224, 224]), DType::Float32),
        },
        Case {
            name: "4032x3024 bicubic-aa shorter 256 crop 224 f32",
            width: 4032,
            height: 3024,
            spec: spec(short, Bicubic, true, Some([224, 224]), DType::Float32),
        },
        Case {
            name: "1920x1080 bilinear-aa size 640x640 u8",
            width: 1920,
            height: 1080,
            spec: spec(
                ResizeTarget::Size([640, 640]),
                Bilinear,
                true,
                None,
                DType::Uint8,
            ),
        },
        Case {
            name: "640x480 bilinear-aa shorter 256 crop 224 f32",
            width: 640,
            height: 480,
            spec: spec(short, Bilinear, true, Some([224, 224]), DType::Float32),
        },
        Case {
            name: "1920x1080 float bilinear shorter 256 crop 224 f32",
            width: 1920,
            height: 1080,
            spec: spec(short, Bilinear, false, Some([224, 224]), DType::Float32),
        },
        Case {
            name: "1920x1080 nearest size 320x320 u8",
            width: 1920,
            height: 1080,
            spec: spec(
                ResizeTarget::Size([320, 320]),
                Nearest,
                false,
                None,
                DType::Uint8,
            ),
        },
    ]
}

fn image(case: &Case) -> RgbImage {
    RgbImage::new(
        case.width,
        case.height,
        synthetic_rgb(case.width, case.height),
    )
    .expect("synthetic image size")
}

fn single_thread() -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("a one-thread pool")
}

fn bench_preprocess(c: &mut Criterion) {
    let one = single_thread();
    let mut group = c.benchmark_group("preprocess");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(3));
    for case in cases() {
        let img = image(&case);
        group.bench_function(format!("{} / 1 thread", case.name), |b| {
            b.iter(|| {
                one.install(|| preprocess_image(black_box(&img), &case.spec).expect("preprocess"))
            })
        });
        group.bench_function(format!("{} / all threads", case.name), |b| {
            b.iter(|| preprocess_image(black_box(&img), &case.spec).expect("preprocess"))
        });
    }
    group.finish();
}

criterion_group!(benches, bench_preprocess);

/// Median seconds of the Python peers on the same pixels: (Pillow resize+crop, modelport), each
/// `None` where that peer has no such path or is not installed.
fn python_peer(
    case: &Case,
    raw: &std::path::Path,
    runs: usize,
) -> Result<(Option<f64>, Option<f64>), String> {
    let spec = serde_json::to_string(&case.spec).map_err(|e| e.to_string())?;
    // The checkout this bench was built in, else the current directory (a copied binary).
    let built_in = concat!(env!("CARGO_MANIFEST_DIR"), "/../tools/preprocess_bench.py");
    let script = if std::path::Path::new(built_in).is_file() {
        built_in
    } else {
        "tools/preprocess_bench.py"
    };
    let out = Command::new("python3")
        .arg(script)
        .arg(raw)
        .args([
            case.width.to_string(),
            case.height.to_string(),
            runs.to_string(),
            spec,
        ])
        .output()
        .map_err(|e| format!("python3: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())?;
    Ok((v["pillow_resize"].as_f64(), v["modelport"].as_f64()))
}

fn ratio_table() {
    let one = single_thread();
    let threads = rayon::current_num_threads();
    let runs = 7;
    println!(
        "\npreprocess ratios (median of {runs}; < 1 means gpuport is faster; {threads} threads):"
    );
    println!(
        "| case | ours 1T ÷ Pillow | ours {threads}T ÷ Pillow | ours 1T ÷ modelport | ours {threads}T ÷ modelport |"
    );
    println!("| --- | --- | --- | --- | --- |");
    let dir = std::env::temp_dir().join(format!("gpuport-bench-{}", std::process::id()));
    if let Err(e) = std::fs::create_dir_all(&dir) {
        println!("cannot create {}: {e}", dir.display());
        return;
    }
    for case in cases() {
        let img = image(&case);
        let raw = dir.join(format!("{}x{}.rgb", case.width, case.height));
        if let Err(e) = std::fs::write(&raw, img.pixels()) {
            println!("cannot write {}: {e}", raw.display());
            continue;
        }
        let st = median_time(runs, || {
            one.install(|| black_box(preprocess_image(&img, &case.spec).expect("preprocess")));
        })
        .as_secs_f64();
        let mt = median_time(runs, || {
            black_box(preprocess_image(&img, &case.spec).expect("preprocess"));
        })
        .as_secs_f64();
        match python_peer(&case, &raw, runs) {
            Ok((pillow, modelport)) => {
                let ratio = |t: f64, peer: Option<f64>| {
                    peer.map_or("n/a".to_owned(), |p| format!("{:.2}", t / p))
                };
                println!(
                    "| {} | {} | {} | {} | {} |",
                    case.name,
                    ratio(st, pillow),
                    ratio(mt, pillow),
                    ratio(st, modelport),
                    ratio(mt, modelport)
                );
            }
            Err(e) => println!(
                "| {} | peer unavailable: {} |",
                case.name,
                e.lines().last().unwrap_or("")
            ),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    ratio_table();
}
