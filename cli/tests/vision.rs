//! The two ONNX vision bundles (`cargo xtask fetch-models` builds them) end to end on the GPU
//! (lavapipe where there is none): each of six photos through `gpuport preprocess` and
//! `gpuport run --save-outputs --annotate` (the six photos in one batched call where the graph
//! allows), against onnxruntime on the same input tensor and post-processing written with numpy
//! (`tools/vision_reference.py`); plus `gpuport golden`, and `modelport validate`/`verify`.
//!
//! What must hold: gpuport's input equals modelport's for every PNG (JPEG decoders differ by a
//! level, docs/spec/preprocess.md); raw outputs within 1e-4 of onnxruntime's (relative to the
//! value where it exceeds 1: YOLO boxes are in pixels, up to 320); top-5 classes the same with
//! probabilities within 1e-3; detections matched 1:1 by label with IoU > 0.9 and scores within
//! 1e-3.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use gpuport_onnx::npy;
use gpuport_preprocess::post::iou;
use serde_json::Value;

const PHOTOS: &[&str] = &[
    "astronaut.png",
    "chelsea.png",
    "coffee.png",
    "motorcycle_left.png",
    "grace_hopper.jpg",
    "rocket.jpg",
];

fn gpuport(args: &[&std::ffi::OsStr]) -> std::process::Output {
    let out = Command::new(env!("CARGO_BIN_EXE_gpuport"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "gpuport {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn bundle(name: &str) -> Option<PathBuf> {
    let manifest = gpuport_testing::model(&format!("{name}/modelport.json"))?;
    Some(manifest.parent().unwrap().to_path_buf())
}

fn photos() -> Option<Vec<PathBuf>> {
    PHOTOS
        .iter()
        .map(|p| gpuport_testing::model(&format!("photos/{p}")))
        .collect()
}

fn box_of(v: &Value) -> [f64; 4] {
    let b: Vec<f64> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    [b[0], b[1], b[2], b[3]]
}

fn check_bundle(name: &str, output: &str) {
    if !gpuport_testing::python_modules_available(&["onnxruntime", "modelport", "numpy"]) {
        return;
    }
    let (Some(dir), Some(photos)) = (bundle(name), photos()) else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    // gpuport's preprocessing of every photo, then the reference on those tensors.
    let mut args: Vec<std::ffi::OsString> = vec![dir.clone().into(), work.path().into()];
    for (k, photo) in photos.iter().enumerate() {
        let x = work.path().join(format!("{k}.gp.npy"));
        gpuport(&[
            "preprocess".as_ref(),
            dir.as_os_str(),
            photo.as_os_str(),
            "-o".as_ref(),
            x.as_os_str(),
        ]);
        args.push(format!("{}={}", photo.display(), x.display()).into());
    }
    let script: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    let reference = gpuport_testing::python_tool("vision_reference.py", &script);
    let reference: Vec<Value> = String::from_utf8(reference)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(reference.len(), photos.len());
    // End to end on the GPU (lavapipe here), the photos in one `gpuport run` that also saves
    // the raw outputs.
    let raw = work.path().join("raw");
    let drawn = work.path().join("annotated");
    let mut run: Vec<&std::ffi::OsStr> = vec![
        "run".as_ref(),
        dir.as_os_str(),
        "--json".as_ref(),
        "--save-outputs".as_ref(),
        raw.as_os_str(),
        "--annotate".as_ref(),
        drawn.as_os_str(),
    ];
    run.extend(photos.iter().map(|p| p.as_os_str()));
    let out = gpuport(&run);
    for (k, photo) in photos.iter().enumerate() {
        if photo.extension().is_some_and(|e| e == "png") {
            let ours = npy::read(&work.path().join(format!("{k}.gp.npy"))).unwrap();
            let theirs = npy::read(&work.path().join(format!("{k}.input.npy"))).unwrap();
            assert_eq!(
                ours,
                theirs,
                "{}: gpuport's input differs from modelport's",
                photo.display()
            );
        }
        let got = npy::read(&raw.join(format!("{k}.{output}.npy"))).unwrap();
        let want = npy::read(&work.path().join(format!("{k}.npy"))).unwrap();
        assert_eq!(got.shape, want.shape);
        let (g, w) = (got.data.to_f64(), want.data.to_f64());
        let worst = g
            .iter()
            .zip(&w)
            .map(|(a, b)| (a - b).abs() / b.abs().max(1.0))
            .fold(0.0, f64::max);
        assert!(
            worst <= 1e-4,
            "{}: raw output off by {worst:e} (relative to max(1, |value|))",
            photo.display()
        );
        eprintln!(
            "{name} {}: raw output within {worst:.2e} of onnxruntime",
            photo.display()
        );
    }
    let ours: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for ((photo, o), r) in photos.iter().zip(&ours).zip(&reference) {
        let at = photo.display();
        if let Some(want) = r["results"].as_array() {
            let got = o["results"].as_array().unwrap();
            assert_eq!(got.len(), want.len(), "{at}");
            for (g, w) in got.iter().zip(want) {
                assert_eq!(
                    (&g["index"], &g["label"]),
                    (&w["index"], &w["label"]),
                    "{at}"
                );
                let d = (g["score"].as_f64().unwrap() - w["score"].as_f64().unwrap()).abs();
                assert!(
                    d <= 1e-3,
                    "{at}: class {} probability off by {d}",
                    w["index"]
                );
            }
        } else {
            let want = r["detections"].as_array().unwrap();
            let got = o["detections"].as_array().unwrap();
            assert_eq!(got.len(), want.len(), "{at}: {got:?} vs {want:?}");
            let mut used = vec![false; got.len()];
            for w in want {
                let wb = box_of(&w["box"]);
                let hit = got.iter().enumerate().position(|(i, g)| {
                    !used[i] && g["label"] == w["label"] && iou(&box_of(&g["box"]), &wb) > 0.9
                });
                let i = hit.unwrap_or_else(|| panic!("{at}: no match for {w}"));
                used[i] = true;
                let d = (got[i]["score"].as_f64().unwrap() - w["score"].as_f64().unwrap()).abs();
                assert!(d <= 1e-3, "{at}: {} score off by {d}", w["label"]);
            }
        }
    }
    // The annotated copies: the photo's size, the photo itself away from what was drawn, and
    // each detection's box edge in a drawn colour.
    for (photo, o) in photos.iter().zip(&ours) {
        let stem = photo.file_stem().unwrap().to_string_lossy();
        let copy = image::open(drawn.join(format!("{stem}.png")))
            .unwrap()
            .to_rgb8();
        let original = image::open(photo).unwrap().to_rgb8();
        assert_eq!(copy.dimensions(), original.dimensions(), "{stem}");
        let changed = copy
            .pixels()
            .zip(original.pixels())
            .filter(|(a, b)| a != b)
            .count();
        let total = (copy.width() * copy.height()) as usize;
        let found = ["detections", "results"]
            .iter()
            .any(|k| o[*k].as_array().is_some_and(|a| !a.is_empty()));
        // Nothing found: an unchanged copy.
        assert_eq!(changed > 0, found, "{stem}: {changed} of {total} changed");
        assert!(changed < total / 2, "{stem}: {changed} of {total} changed");
        for d in o["detections"].as_array().into_iter().flatten() {
            let [x0, _, _, y1] = box_of(&d["box"]);
            let (x, y) = (x0.floor() as u32, (y1.ceil() as u32).saturating_sub(1));
            let (x, y) = (x.min(copy.width() - 1), y.min(copy.height() - 1));
            assert_ne!(
                copy.get_pixel(x, y),
                original.get_pixel(x, y),
                "{stem}: box corner of {d}"
            );
        }
    }
    // The golden test, by gpuport and by modelport.
    gpuport(&["golden".as_ref(), dir.as_os_str()]);
    if gpuport_testing::modelport_available() {
        for verb in ["validate", "verify"] {
            let out = Command::new("modelport")
                .arg(verb)
                .arg(&dir)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "modelport {verb}: {}",
                String::from_utf8_lossy(&out.stdout)
            );
        }
    }
}

#[test]
fn efficientnet_lite0_matches_onnxruntime() {
    check_bundle("efficientnet_lite0", "logits");
}

#[test]
fn nudenet_yolov8n_matches_onnxruntime() {
    check_bundle("nudenet_320n", "rows");
}

#[test]
fn a_failing_golden_exits_1_naming_the_element() {
    let Some(dir) = bundle("efficientnet_lite0") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let copy = work.path().join("b");
    copy_dir(&dir, &copy);
    // Perturb one expected logit and re-declare the file so the manifest stays valid.
    let golden = copy.join("golden/logits.bin");
    let mut bytes = std::fs::read(&golden).unwrap();
    let v = f32::from_le_bytes(bytes[400..404].try_into().unwrap()) + 0.5;
    bytes[400..404].copy_from_slice(&v.to_le_bytes());
    std::fs::write(&golden, &bytes).unwrap();
    let manifest = copy.join("modelport.json");
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    use sha2::Digest;
    let sha: String = sha2::Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    doc["golden"]["outputs"]["logits"]["sha256"] = Value::String(sha);
    std::fs::write(&manifest, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_gpuport"))
        .arg("golden")
        .arg(&copy)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("FAIL at element 100"), "{text}");
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let t = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &t);
        } else {
            std::fs::copy(e.path(), t).unwrap();
        }
    }
}
