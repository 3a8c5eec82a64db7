//! MLC `image_decode` against Pillow (`tools/preprocess_reference.py mlc`), and the uint32
//! widening a WebGPU program asks for through `adapter_dtypes`.

#![allow(clippy::unwrap_used)]

use std::path::Path;

use gpuport_manifest_core::mlc::{
    AdapterDtype, ImageDecode, ImageFormat, ImageLayout, ImageResize, Program, ProgramKind,
    ResizeMode,
};
use gpuport_preprocess::image::decode_image_file;
use gpuport_preprocess::mlc::{adapter_input_dtype, image_decode};
use gpuport_preprocess::tensor::TensorData;
use serde_json::Value;

#[test]
fn image_decode_matches_pillow_bit_for_bit() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let cases: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(root.join("mlc/cases.json")).unwrap())
            .unwrap();
    assert_eq!(cases.len(), 7);
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let image =
            decode_image_file(&root.join("image").join(case["source"].as_str().unwrap())).unwrap();
        let (h, w) = (
            case["height"].as_u64().unwrap(),
            case["width"].as_u64().unwrap(),
        );
        let mode = if case["mode"] == "stretch" {
            ResizeMode::Stretch
        } else {
            ResizeMode::CenterCrop
        };
        let spec = ImageDecode {
            format: ImageFormat::RgbU8,
            layout: ImageLayout::Nhwc,
            resize: ImageResize {
                mode,
                height: h,
                width: w,
            },
            num_embeddings: 1,
        };
        let expected =
            std::fs::read(root.join("mlc").join(case["expected"].as_str().unwrap())).unwrap();
        let tensor = image_decode(&image, &spec, AdapterDtype::Uint8).unwrap();
        assert_eq!(tensor.shape, [1, h as usize, w as usize, 3], "{name}");
        assert_eq!(tensor.data, TensorData::U8(expected.clone()), "{name}");
        let wide = image_decode(&image, &spec, AdapterDtype::Uint32).unwrap();
        assert_eq!(
            wide.data,
            TensorData::U32(expected.iter().map(|&v| u32::from(v)).collect()),
            "{name}"
        );
    }
}

#[test]
fn adapter_dtypes_pick_the_wide_type() {
    let mut program = Program {
        kind: ProgramKind::TokenGeneration,
        exports: Default::default(),
        adapters: [("image".to_owned(), "image_embed".to_owned())].into(),
        adapter_dtypes: Default::default(),
    };
    assert_eq!(adapter_input_dtype(&program, "image"), AdapterDtype::Uint8);
    program
        .adapter_dtypes
        .insert("image".into(), AdapterDtype::Uint32);
    assert_eq!(adapter_input_dtype(&program, "image"), AdapterDtype::Uint32);
}
