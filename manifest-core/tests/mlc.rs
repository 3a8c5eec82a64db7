//! MLC model package v1 and compiled-program v1: the spec's examples, every rule, package ↔
//! program matching, package folder checks, and the canonical ids pinned against values computed
//! independently by `tools/make_mlc_examples.py`.

#![allow(clippy::unwrap_used)]

mod support;

use std::path::{Path, PathBuf};

use gpuport_manifest_core::document::{ValidateOptions, validate_path};
use gpuport_manifest_core::hash::{canonical_json, interface_id};
use gpuport_manifest_core::mlc::{
    check_package_files, check_resources, match_package_program, read_package,
    read_program_document,
};
use gpuport_manifest_core::{ProblemKind, Problems};
use serde_json::{Value, json};

fn example(rel: &str) -> PathBuf {
    support::repo_root().join("examples/mlc").join(rel)
}

fn load(rel: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(example(rel)).unwrap()).unwrap()
}

/// A named edit of a valid document and the pointers it must produce.
type EditCase = (&'static str, Box<dyn Fn(&mut Value)>, Vec<String>);

fn pointers(p: &Problems) -> Vec<&str> {
    p.iter().map(|p| p.pointer.as_str()).collect()
}

fn package_problems(doc: &Value) -> Problems {
    read_package(doc).err().unwrap_or_default()
}

fn program_problems(doc: &Value) -> Problems {
    read_program_document(doc).err().unwrap_or_default()
}

/// Re-computes a package's interface_id after editing its tasks, so a test sees only the rule
/// it is about.
fn rehash(mut doc: Value) -> Value {
    let well_formed = doc["interface_id"]
        .as_str()
        .is_some_and(gpuport_manifest_core::hash::is_canonical_id);
    if let (true, Ok(id)) = (well_formed, interface_id(&doc["tasks"])) {
        doc["interface_id"] = id.into();
    }
    doc
}

const GEMMA_INTERFACE: &str =
    "sha256:d40adc35de07e2e9e9042a1641f1bbb172df3889383e276dcdbb743e00d1c574";
const LLAVA_INTERFACE: &str =
    "sha256:ead024d2949f0dca224328ad0b5fc6194ad3101ec82e26b7b148186c5117ddb5";
const TINY_PARAMS: &str = "sha256:0f97508c7e8297f348544281db8a19f17cf9be5b8e3196f1651cd3d7a2293cee";

#[test]
fn spec_examples_validate_as_documents() {
    for dir in ["gemma4-audio", "llava-image", "tiny-package"] {
        let options = ValidateOptions {
            check_files: false,
            program: Some(example(dir).join("program.json")),
        };
        for report in validate_path(&example(dir), &options).unwrap() {
            assert!(
                report.is_valid(),
                "{}: {}",
                report.path.display(),
                report.problems
            );
        }
    }
}

#[test]
fn interface_ids_are_pinned() {
    let gemma = load("gemma4-audio/mlc-model-manifest.json");
    assert_eq!(interface_id(&gemma["tasks"]).unwrap(), GEMMA_INTERFACE);
    // Byte-identical canonical text for a package without an image input: adding the
    // image_decode processor kind changed nothing for it.
    assert_eq!(
        canonical_json(&gemma["tasks"]).unwrap(),
        r#"{"chat.completions":{"executor":"generation","inputs":{"audio":{"adapter":"audio","processor":{"channels":1,"format":"pcm_f32","kind":"audio_decode","max_samples":480000,"min_samples":161,"sample_rate_hz":16000},"prompt":{"placeholder_token_id":258881,"prefix_token_ids":[256000],"suffix_token_ids":[258883]}},"text":{"processor":"tokenizer"}},"output":"text"}}"#
    );
    let llava = load("llava-image/mlc-model-manifest.json");
    assert_eq!(interface_id(&llava["tasks"]).unwrap(), LLAVA_INTERFACE);
}

#[test]
fn adding_an_image_input_changes_the_interface_id() {
    let gemma = load("gemma4-audio/mlc-model-manifest.json");
    let llava = load("llava-image/mlc-model-manifest.json");
    let mut with_image = gemma["tasks"].clone();
    with_image["chat.completions"]["inputs"]["image"] =
        llava["tasks"]["chat.completions"]["inputs"]["image"].clone();
    let changed = interface_id(&with_image).unwrap();
    assert_ne!(changed, GEMMA_INTERFACE);
    // ...and the package stays valid once it carries the new id.
    let mut doc = gemma.clone();
    doc["tasks"] = with_image;
    assert_eq!(pointers(&package_problems(&doc)), ["/interface_id"]);
    doc["interface_id"] = changed.into();
    assert!(read_package(&doc).is_ok());
}

#[test]
fn package_rules() {
    let base = load("gemma4-audio/mlc-model-manifest.json");
    let audio = "/tasks/chat.completions/inputs/audio";
    let cases: Vec<EditCase> = vec![
        (
            "unknown top-level field",
            Box::new(|d| d["extra"] = json!(1)),
            vec!["/extra".into()],
        ),
        (
            "unknown field in weights",
            Box::new(|d| d["weights"]["md5"] = json!("x")),
            vec!["/weights/md5".into()],
        ),
        (
            "unknown field in a processor",
            Box::new(|d| {
                d["tasks"]["chat.completions"]["inputs"]["audio"]["processor"]["gain"] = json!(1)
            }),
            vec![format!("{audio}/processor/gain")],
        ),
        (
            "unknown field in a prompt",
            Box::new(|d| {
                d["tasks"]["chat.completions"]["inputs"]["audio"]["prompt"]["sep"] = json!(1)
            }),
            vec![format!("{audio}/prompt/sep")],
        ),
        (
            "wrong schema",
            Box::new(|d| d["schema"] = json!("mlc.compiled-program")),
            vec!["/schema".into()],
        ),
        (
            "schema_version 2",
            Box::new(|d| d["schema_version"] = json!(2)),
            vec!["/schema_version".into()],
        ),
        (
            "interface_id malformed",
            Box::new(|d| d["interface_id"] = json!("sha256:XYZ")),
            vec!["/interface_id".into()],
        ),
        (
            "chat_config escapes",
            Box::new(|d| d["chat_config"] = json!("../mlc-chat-config.json")),
            vec!["/chat_config".into()],
        ),
        (
            "tasks empty",
            Box::new(|d| d["tasks"] = json!({})),
            vec!["/tasks".into()],
        ),
        (
            "unsupported processor kind",
            Box::new(|d| {
                d["tasks"]["chat.completions"]["inputs"]["audio"]["processor"]["kind"] =
                    json!("video_decode")
            }),
            vec![format!("{audio}/processor/kind")],
        ),
        (
            "unknown processor string",
            Box::new(|d| {
                d["tasks"]["chat.completions"]["inputs"]["text"]["processor"] = json!("bpe")
            }),
            vec!["/tasks/chat.completions/inputs/text/processor".into()],
        ),
        (
            "audio min above max",
            Box::new(|d| {
                d["tasks"]["chat.completions"]["inputs"]["audio"]["processor"]["min_samples"] =
                    json!(500000)
            }),
            vec![format!("{audio}/processor/max_samples")],
        ),
        (
            "audio format compressed",
            Box::new(|d| {
                d["tasks"]["chat.completions"]["inputs"]["audio"]["processor"]["format"] =
                    json!("mp3")
            }),
            vec![format!("{audio}/processor/format")],
        ),
        (
            "audio sample rate zero",
            Box::new(|d| {
                d["tasks"]["chat.completions"]["inputs"]["audio"]["processor"]["sample_rate_hz"] =
                    json!(0)
            }),
            vec![format!("{audio}/processor/sample_rate_hz")],
        ),
        (
            "media input without adapter",
            Box::new(|d| {
                d["tasks"]["chat.completions"]["inputs"]["audio"]
                    .as_object_mut()
                    .unwrap()
                    .remove("adapter");
            }),
            vec![format!("{audio}/adapter")],
        ),
        (
            "media input without prompt",
            Box::new(|d| {
                d["tasks"]["chat.completions"]["inputs"]["audio"]
                    .as_object_mut()
                    .unwrap()
                    .remove("prompt");
            }),
            vec![format!("{audio}/prompt")],
        ),
        (
            "tokenizer input with adapter",
            Box::new(|d| {
                d["tasks"]["chat.completions"]["inputs"]["text"]["adapter"] = json!("text")
            }),
            vec!["/tasks/chat.completions/inputs/text/adapter".into()],
        ),
        (
            "negative token id",
            Box::new(|d| {
                d["tasks"]["chat.completions"]["inputs"]["audio"]["prompt"]["prefix_token_ids"] =
                    json!([-1])
            }),
            vec![format!("{audio}/prompt/prefix_token_ids/0")],
        ),
        (
            "token id over 32 bits",
            Box::new(|d| {
                d["tasks"]["chat.completions"]["inputs"]["audio"]["prompt"]["placeholder_token_id"] =
                    json!(1u64 << 33)
            }),
            vec![format!("{audio}/prompt/placeholder_token_id")],
        ),
        (
            "no text input",
            Box::new(|d| {
                d["tasks"]["chat.completions"]["inputs"]
                    .as_object_mut()
                    .unwrap()
                    .remove("text");
            }),
            vec!["/tasks/chat.completions/inputs".into()],
        ),
        (
            "output not text",
            Box::new(|d| d["tasks"]["chat.completions"]["output"] = json!("image")),
            vec!["/tasks/chat.completions/output".into()],
        ),
        (
            "executor missing",
            Box::new(|d| {
                d["tasks"]["chat.completions"]
                    .as_object_mut()
                    .unwrap()
                    .remove("executor");
            }),
            vec!["/tasks/chat.completions/executor".into()],
        ),
    ];
    for (name, edit, want) in cases {
        let mut doc = base.clone();
        edit(&mut doc);
        let doc = rehash(doc);
        let got = package_problems(&doc);
        assert_eq!(pointers(&got), want, "{name}: {got}");
    }
    let image = load("llava-image/mlc-model-manifest.json");
    let mut doc = image.clone();
    doc["tasks"]["chat.completions"]["inputs"]["image"]["processor"]["resize"]["mode"] =
        json!("pad");
    let got = package_problems(&rehash(doc));
    assert_eq!(
        pointers(&got),
        ["/tasks/chat.completions/inputs/image/processor/resize/mode"],
        "{got}"
    );
    let unsupported = package_problems(&rehash({
        let mut d = base.clone();
        d["tasks"]["chat.completions"]["inputs"]["audio"]["processor"]["kind"] =
            json!("video_decode");
        d
    }));
    assert_eq!(
        unsupported.iter().next().unwrap().kind,
        ProblemKind::Unsupported
    );
    assert!(
        unsupported
            .to_string()
            .contains("unsupported processor kind `video_decode`")
    );
}

#[test]
fn program_rules() {
    let base = load("gemma4-audio/program.json");
    let ex = "/programs/generation/exports";
    let cases: Vec<EditCase> = vec![
        (
            "unknown field",
            Box::new(|d| d["programs"]["generation"]["entry"] = json!("main")),
            vec!["/programs/generation/entry".into()],
        ),
        (
            "unknown kind",
            Box::new(|d| d["programs"]["generation"]["kind"] = json!("embedding")),
            vec!["/programs/generation/kind".into()],
        ),
        (
            "no embed_tokens",
            Box::new(|d| {
                d["programs"]["generation"]["exports"]
                    .as_object_mut()
                    .unwrap()
                    .remove("embed_tokens");
            }),
            vec![format!("{ex}/embed_tokens")],
        ),
        (
            "no create_kv_cache",
            Box::new(|d| {
                d["programs"]["generation"]["exports"]
                    .as_object_mut()
                    .unwrap()
                    .remove("create_kv_cache");
            }),
            vec![format!("{ex}/create_kv_cache")],
        ),
        (
            "half a pair",
            Box::new(|d| {
                d["programs"]["generation"]["exports"]
                    .as_object_mut()
                    .unwrap()
                    .remove("decode_tokens");
            }),
            vec![format!("{ex}/decode_tokens")],
        ),
        (
            "no pair",
            Box::new(|d| {
                let e = d["programs"]["generation"]["exports"]
                    .as_object_mut()
                    .unwrap();
                e.remove("decode_tokens");
                e.remove("prefill_tokens");
            }),
            vec![ex.into()],
        ),
        (
            "both pairs",
            Box::new(|d| {
                d["programs"]["generation"]["exports"]["prefill_embeds"] = json!("prefill");
                d["programs"]["generation"]["exports"]["decode_embeds"] = json!("decode");
            }),
            vec![],
        ),
        (
            "unknown role",
            Box::new(|d| d["programs"]["generation"]["exports"]["sample"] = json!("sample")),
            vec![format!("{ex}/sample")],
        ),
        (
            "empty function name",
            Box::new(|d| d["programs"]["generation"]["exports"]["embed_tokens"] = json!("")),
            vec![format!("{ex}/embed_tokens")],
        ),
        (
            "adapter_dtypes for an unknown adapter",
            Box::new(|d| {
                d["programs"]["generation"]["adapter_dtypes"] = json!({"image": "uint32"})
            }),
            vec!["/programs/generation/adapter_dtypes/image".into()],
        ),
        (
            "adapter_dtypes unknown dtype",
            Box::new(|d| {
                d["programs"]["generation"]["adapter_dtypes"] = json!({"audio": "float64"})
            }),
            vec!["/programs/generation/adapter_dtypes/audio".into()],
        ),
        (
            "unknown feature",
            Box::new(|d| d["resources"]["required_features"] = json!(["shader-f64"])),
            vec!["/resources/required_features/0".into()],
        ),
        (
            "resources missing",
            Box::new(|d| {
                d.as_object_mut().unwrap().remove("resources");
            }),
            vec!["/resources".into()],
        ),
        (
            "largest above total",
            Box::new(|d| {
                d["resources"]["max_storage_buffer_binding_size"] = json!(3_000_000_000u64)
            }),
            vec!["/resources/max_storage_buffer_binding_size".into()],
        ),
        (
            "programs empty",
            Box::new(|d| d["programs"] = json!({})),
            vec!["/programs".into()],
        ),
        (
            "wrong schema",
            Box::new(|d| d["schema"] = json!("mlc.model-package")),
            vec!["/schema".into()],
        ),
    ];
    for (name, edit, want) in cases {
        let mut doc = base.clone();
        edit(&mut doc);
        let got = program_problems(&doc);
        assert_eq!(pointers(&got), want, "{name}: {got}");
    }
}

#[test]
fn matching_names_both_sides() {
    let package = read_package(&load("gemma4-audio/mlc-model-manifest.json"))
        .unwrap()
        .document;
    let program_doc = load("gemma4-audio/program.json");
    let program = read_program_document(&program_doc).unwrap().document;
    assert!(match_package_program(&package, &program).is_empty());

    let mut other = program_doc.clone();
    other["interface_id"] = json!(LLAVA_INTERFACE);
    other["parameter_schema_id"] = json!(TINY_PARAMS);
    other["programs"]["chat"] = other["programs"]["generation"].clone();
    other["programs"]
        .as_object_mut()
        .unwrap()
        .remove("generation");
    let other = read_program_document(&other).unwrap().document;
    let got = match_package_program(&package, &other);
    assert_eq!(
        pointers(&got),
        ["/interface_id", "/parameter_schema_id", "/programs"]
    );
    let text = got.to_string();
    assert!(
        text.contains(GEMMA_INTERFACE) && text.contains(LLAVA_INTERFACE),
        "{text}"
    );
    assert!(
        text.contains("/tasks/chat.completions/executor names program `generation`"),
        "{text}"
    );

    let mut no_adapter = program_doc.clone();
    no_adapter["programs"]["generation"]["adapters"] = json!({"image": "image_embed"});
    let no_adapter = read_program_document(&no_adapter).unwrap().document;
    let got = match_package_program(&package, &no_adapter);
    assert_eq!(pointers(&got), ["/programs/generation/adapters"]);
    assert!(got.to_string().contains("adapter names `audio`"), "{got}");
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

#[test]
fn package_folder_checks() {
    let tiny = example("tiny-package");
    let package = read_package(&load("tiny-package/mlc-model-manifest.json"))
        .unwrap()
        .document;
    let files = check_package_files(&tiny, &package, true).unwrap();
    assert_eq!(files.parameter_schema_id, TINY_PARAMS);
    assert_eq!(
        (
            files.max_storage_buffer_binding_size,
            files.estimated_device_memory_bytes
        ),
        (512, 1184)
    );
    // `vocab_size` came from the model config.
    assert_eq!(
        files
            .params
            .iter()
            .find(|p| p.schema.name == "model.embed_tokens.q_weight")
            .unwrap()
            .schema
            .shape,
        [64, 2]
    );
    let program = read_program_document(&load("tiny-package/program.json"))
        .unwrap()
        .document;
    assert!(check_resources(&program, &files).is_empty());

    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("pkg");
    copy_dir(&tiny, &copy);
    // A shard of the wrong size fails before anything is hashed or loaded.
    std::fs::write(copy.join("params_shard_1.bin"), [0u8; 10]).unwrap();
    let got = check_package_files(&copy, &package, true).unwrap_err();
    assert_eq!(pointers(&got), ["/weights/manifest"]);
    assert!(
        got.to_string().contains("params_shard_1.bin` is 10 bytes"),
        "{got}"
    );
    std::fs::remove_file(copy.join("params_shard_1.bin")).unwrap();
    assert!(
        check_package_files(&copy, &package, true)
            .unwrap_err()
            .to_string()
            .contains("does not exist")
    );

    // A named dimension the config does not define.
    copy_dir(&tiny, &copy);
    std::fs::write(copy.join("mlc-chat-config.json"), r#"{"model_config": {}}"#).unwrap();
    let got = check_package_files(&copy, &package, true).unwrap_err();
    assert!(got.to_string().contains("dimension `vocab_size`"), "{got}");

    // A parameter change moves the parameter schema id, so the declared one no longer matches.
    copy_dir(&tiny, &copy);
    let cache = std::fs::read_to_string(copy.join("tensor-cache.json")).unwrap();
    std::fs::write(
        copy.join("tensor-cache.json"),
        cache.replace("model.norm.weight", "model.final_norm.weight"),
    )
    .unwrap();
    let got = check_package_files(&copy, &package, true).unwrap_err();
    assert_eq!(pointers(&got), ["/weights/parameter_schema_id"]);
    let program_check = validate_path(
        &copy,
        &ValidateOptions {
            check_files: true,
            program: Some(copy.join("program.json")),
        },
    )
    .unwrap();
    assert!(!program_check[0].is_valid());
}
