//! NMS and detection decoding against the independent numpy implementation in
//! `tools/preprocess_reference.py` (fixtures in `fixtures/post/`), on random boxes.

#![allow(clippy::unwrap_used)]

use std::path::Path;

use gpuport_manifest_core::Choice;
use gpuport_manifest_core::modelport::{
    Activation, BoxFormat, DetectionFormat, DetectionPostprocess,
};
use gpuport_preprocess::image::InverseTransform;
use gpuport_preprocess::post::{OutputTensor, batched_nms, detect};
use serde_json::Value;

fn fixture(name: &str) -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/post")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn f64s(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

fn choice<T: Choice>(v: &Value) -> T {
    *T::ALL
        .iter()
        .find(|c| c.name() == v.as_str().unwrap())
        .unwrap()
}

#[test]
fn batched_nms_keeps_what_the_numpy_reference_keeps() {
    let cases = fixture("nms.json");
    assert_eq!(cases.len(), 12);
    for case in cases {
        let boxes: Vec<[f64; 4]> = case["boxes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| f64s(b).try_into().unwrap())
            .collect();
        let scores = f64s(&case["scores"]);
        let classes: Vec<usize> = case["classes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_u64().unwrap() as usize)
            .collect();
        let expected: Vec<usize> = case["kept"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_u64().unwrap() as usize)
            .collect();
        let threshold = case["iou_threshold"].as_f64().unwrap();
        assert_eq!(
            batched_nms(&boxes, &scores, &classes, threshold),
            expected,
            "threshold {threshold}"
        );
    }
}

fn transform(v: &Value) -> InverseTransform {
    let u = |k: &str| v[k].as_u64().unwrap() as usize;
    InverseTransform {
        original_width: u("original_width"),
        original_height: u("original_height"),
        resized_width: u("resized_width"),
        resized_height: u("resized_height"),
        crop_left: v["crop_left"].as_i64().unwrap(),
        crop_top: v["crop_top"].as_i64().unwrap(),
        input_width: u("input_width"),
        input_height: u("input_height"),
    }
}

#[test]
fn detection_decoding_matches_the_numpy_reference() {
    for case in fixture("detection.json") {
        let name = case["name"].as_str().unwrap();
        let p = &case["post"];
        let post = DetectionPostprocess {
            format: choice::<DetectionFormat>(&p["format"]),
            boxes_output: Some("boxes".into()),
            activation: choice::<Activation>(&p["activation"]),
            background_class: p["background_class"].as_bool().unwrap(),
            box_format: choice::<BoxFormat>(&p["box_format"]),
            normalized: p["normalized"].as_bool().unwrap(),
            has_objectness: p["has_objectness"].as_bool().unwrap(),
            score_threshold: p["score_threshold"].as_f64().unwrap(),
            iou_threshold: p["iou_threshold"].as_f64().unwrap(),
            max_detections: p["max_detections"].as_u64().unwrap(),
            labels: None,
        };
        let tensor = |v: &Value| -> (Vec<usize>, Vec<f32>) {
            let shape = v["shape"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d.as_u64().unwrap() as usize)
                .collect();
            (
                shape,
                f64s(&v["values"]).into_iter().map(|x| x as f32).collect(),
            )
        };
        let (score_shape, score_values) = tensor(&case["scores"]);
        let scores = OutputTensor {
            name: "scores",
            shape: &score_shape,
            values: &score_values,
        };
        let boxes_data = (!case["boxes"].is_null()).then(|| tensor(&case["boxes"]));
        let boxes = boxes_data.as_ref().map(|(s, v)| OutputTensor {
            name: "boxes",
            shape: s,
            values: v,
        });
        let labels = vec!["zero".to_owned()];
        let got = detect(
            &scores,
            boxes.as_ref(),
            &post,
            &labels,
            &transform(&case["transform"]),
        )
        .unwrap();
        let expected = case["expected"].as_array().unwrap();
        assert_eq!(got.len(), expected.len(), "{name}");
        assert!(!got.is_empty(), "{name}");
        for (g, e) in got.iter().zip(expected) {
            assert_eq!(
                g.class_index as u64,
                e["class_index"].as_u64().unwrap(),
                "{name}"
            );
            assert_eq!(g.label.is_some(), g.class_index == 0);
            assert!(
                (g.score - e["score"].as_f64().unwrap()).abs() < 1e-12,
                "{name}"
            );
            for (a, b) in g.input_box.iter().zip(f64s(&e["input_box"])) {
                assert!((a - b).abs() < 1e-9, "{name} input box {a} {b}");
            }
            for (a, b) in g.image_box.iter().zip(f64s(&e["image_box"])) {
                assert!((a - b).abs() < 1e-9, "{name} image box {a} {b}");
            }
        }
    }
}
