//! `gpuport generate`, `chat` and `can-run` on the real models (lavapipe in CI): greedy ids
//! equal llama.cpp's fixture, a model without a chat template gets a clear message, and bad
//! model files give typed errors instead of panics.

#![allow(clippy::unwrap_used)]

use gpuport_testing::references;

use std::process::{Command, Output, Stdio};

fn gpuport(args: &[&str]) -> Output {
    gpuport_with_store(args, None)
}

/// `gpuport args…` with `GPUPORT_STORE` set to `store` when given, and measured decode speeds
/// kept out of the user's cache.
fn gpuport_with_store(args: &[&str], store: Option<&std::path::Path>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gpuport"));
    cmd.env(
        "GPUPORT_SPEEDS",
        std::env::temp_dir().join(format!("gpuport-test-speeds-{}.json", std::process::id())),
    );
    if let Some(store) = store {
        cmd.env("GPUPORT_STORE", store);
    }
    cmd.args(args)
        .current_dir(references::repo_root())
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Through the store: the GGUF imported (wrapped in a generated bundle), then generated from by
/// its id.
#[test]
fn generate_raw_greedy_from_the_store_matches_llama_cpp() {
    let Some(model) = references::model("SmolLM2-135M-Instruct.Q4_1.gguf") else {
        return;
    };
    let store = tempfile::tempdir().unwrap();
    let out = gpuport_with_store(
        &["import", model.to_str().unwrap(), "--id", "smollm2"],
        Some(store.path()),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let fixture: serde_json::Value = serde_json::from_slice(
        &std::fs::read(
            references::repo_root().join("llm/tests/fixtures/llama_cpp/smollm2_greedy.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let case = &fixture["cases"][0];
    let want: Vec<u32> = serde_json::from_value(case["ids"].clone()).unwrap();
    // Four greedy tokens of the fixture's first prompt, `steps` decode steps per submit: the
    // report and stderr.
    let generate = |tokens: usize, steps: &str| {
        let max_tokens = tokens.to_string();
        let out = gpuport_with_store(
            &[
                "generate",
                "smollm2",
                "--raw",
                "--prompt",
                case["text"].as_str().unwrap(),
                "--temperature",
                "0",
                "--max-tokens",
                &max_tokens,
                "--steps-per-submit",
                steps,
                "--json",
            ],
            Some(store.path()),
        );
        assert!(out.status.success(), "{}", text(&out.stderr));
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let ids: Vec<u32> = serde_json::from_value(report["ids"].clone()).unwrap();
        assert_eq!(ids, want[..tokens]);
        (report, text(&out.stderr))
    };
    // The prefill's token alone: no decode rate (issue 18: short replies printed tens of
    // thousands of tok/s).
    let (report, stderr) = generate(1, "8");
    assert_eq!(report["stop_reason"], "length");
    assert_eq!(
        report["prompt_tokens"],
        case["prompt"].as_array().unwrap().len()
    );
    assert!(report["decode_tokens_per_s"].is_null(), "{report}");
    assert!(stderr.contains("decode n/a"), "{stderr}");

    // One decode batch (8 steps per submit), and several pipelined ones (2 per submit): rates
    // a CPU adapter can reach (SmolLM2 reads ~98 MB per token; lavapipe streams ~1.2 GB/s).
    for (tokens, steps) in [(4, "8"), (6, "2")] {
        let (report, _) = generate(tokens, steps);
        let rate = report["decode_tokens_per_s"].as_f64().unwrap();
        assert!(rate > 0.0, "{report}");
        if report["adapter"].as_str().unwrap().contains("llvmpipe") {
            assert!(rate < 100.0, "{report}");
        }
    }
}

#[test]
fn can_run_reports_sizes() {
    let Some(model) = references::model("SmolLM2-135M-Instruct.Q4_1.gguf") else {
        return;
    };
    let out = gpuport(&["can-run", model.to_str().unwrap(), "--ctx", "512", "--json"]);
    if !out.status.success() && text(&out.stderr).contains("NO_GPU") {
        assert!(std::env::var_os("GPUPORT_REQUIRE_GPU").is_none());
        return;
    }
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["can_run"], true);
    assert_eq!(r["architecture"], "llama");
    assert_eq!(r["context"], 512);
    // 30 layers x 2 x 512 positions x 192 floats x 4 bytes.
    assert_eq!(r["kv_cache_bytes"], 30 * 2 * 512 * 192 * 4);
    assert!(r["weight_bytes"].as_u64().unwrap() > 90_000_000);
}

#[test]
fn a_model_without_template_needs_raw() {
    let Some(model) = references::model("gemma-3-270m-q4_k_m.gguf") else {
        return;
    };
    let m = model.to_str().unwrap();
    for args in [
        vec!["generate", m, "--prompt", "hi", "--max-tokens", "1"],
        vec!["chat", m],
    ] {
        let out = gpuport(&args);
        if text(&out.stderr).contains("NO_GPU") {
            assert!(std::env::var_os("GPUPORT_REQUIRE_GPU").is_none());
            return;
        }
        assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains("no chat template"),
            "{}",
            text(&out.stderr)
        );
    }
}

#[test]
fn bad_model_files_are_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.gguf");
    let out = gpuport(&["generate", missing.to_str().unwrap(), "--prompt", "x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("no such file"),
        "{}",
        text(&out.stderr)
    );

    let bad = dir.path().join("bad.gguf");
    std::fs::write(&bad, b"GGUF\x03\x00\x00\x00\xff\xff").unwrap();
    let out = gpuport(&["generate", bad.to_str().unwrap(), "--prompt", "x"]);
    let err = text(&out.stderr);
    if err.contains("NO_GPU") {
        return;
    }
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("INVALID_MODEL") && err.contains("truncated"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

/// `gpuport inspect MODEL.gguf --program` on both real models: the document parses as an
/// `mlc.compiled-program`, matches a package declaring the tasks the file implies (its
/// `interface_id` recomputed by the package reader from that tasks object, spelled out here)
/// and the parameter list read from the GGUF, declares the embeddings roles and a paged KV
/// cache, and its resources are `can-run`'s figures.
#[test]
fn inspect_program_matches_the_gguf() {
    use gpuport_llm::{ModelConfig, weights};
    use gpuport_manifest_core::hash::{ParamSchema, parameter_schema_id};
    use gpuport_manifest_core::mlc::{Role, match_package_program, parse_package, parse_program};
    use gpuport_runtime::gguf::Gguf;
    for (file, task, tensors) in [
        (
            "SmolLM2-135M-Instruct.Q4_1.gguf",
            "chat.completions",
            30 * 9 + 2,
        ),
        ("gemma-3-270m-q4_k_m.gguf", "text.completions", 18 * 13 + 2),
    ] {
        let Some(model) = references::model(file) else {
            continue;
        };
        let m = model.to_str().unwrap();
        let out = gpuport(&["inspect", m, "--program"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let program = parse_program(&text(&out.stdout)).unwrap().document;
        let exports = &program.programs["generation"].exports;
        assert_eq!(exports[&Role::CreateKvCache], "create_paged_kv_cache");
        for role in [Role::EmbedTokens, Role::PrefillEmbeds, Role::DecodeEmbeds] {
            assert!(exports.contains_key(&role), "{file}: {role:?}");
        }

        let g = Gguf::open(&model).unwrap();
        let cfg = ModelConfig::from_gguf(&g).unwrap();
        let params: Vec<ParamSchema> = weights::parameters(&cfg, &g)
            .iter()
            .map(|t| ParamSchema {
                name: t.name.clone(),
                shape: t.dims.iter().rev().copied().collect(),
                dtype: t.type_name(),
            })
            .collect();
        assert_eq!(params.len(), tensors, "{file}");
        let package = serde_json::json!({
            "schema": "mlc.model-package",
            "schema_version": 1,
            "chat_config": "mlc-chat-config.json",
            "interface_id": program.interface_id,
            "weights": {
                "manifest": "tensor-cache.json",
                "parameter_schema_id": parameter_schema_id(&params).unwrap()
            },
            "tasks": {
                task: {
                    "executor": "generation",
                    "inputs": {"text": {"processor": "tokenizer"}},
                    "output": "text"
                }
            }
        });
        let package = parse_package(&package.to_string())
            .unwrap_or_else(|p| panic!("{file}: {p:?}"))
            .document;
        let problems = match_package_program(&package, &program);
        assert!(problems.is_empty(), "{file}: {problems:?}");

        let out = gpuport(&["can-run", m, "--json"]);
        if text(&out.stderr).contains("NO_GPU") {
            assert!(std::env::var_os("GPUPORT_REQUIRE_GPU").is_none());
            continue;
        }
        let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let r = &program.resources;
        assert_eq!(
            plan["weight_bytes"], r.estimated_device_memory_bytes,
            "{file}"
        );
        assert_eq!(
            plan["largest_tensor_bytes"],
            r.max_storage_buffer_binding_size
        );
        assert!(r.required_features.is_empty());
    }
}

/// Issue 18: `gpuport recommend` ranks the catalog's text-generation models for this adapter:
/// a budget blocks what does not fit, speeds are projected from the measured ceiling, and a
/// speed measured here by `generate` replaces the projection.
#[test]
fn recommend_ranks_the_catalog_for_this_adapter() {
    let dir = tempfile::tempdir().unwrap();
    let speeds = dir.path().join("speeds.json");
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_gpuport"))
            .args(args)
            .env("GPUPORT_SPEEDS", &speeds)
            .env("GPUPORT_STORE", dir.path().join("store"))
            .env_remove("GPUPORT_CATALOG")
            .output()
            .unwrap()
    };
    let probe = run(&["probe", "--json"]);
    if !probe.status.success() {
        assert!(std::env::var_os("GPUPORT_REQUIRE_GPU").is_none());
        eprintln!("SKIPPED: no GPU adapter");
        return;
    }
    let probe: serde_json::Value = serde_json::from_slice(&probe.stdout).unwrap();
    let a = &probe["adapter"];
    let key = format!(
        "{:04x}:{:04x}:{}",
        a["vendor"].as_u64().unwrap(),
        a["device"].as_u64().unwrap(),
        a["driver"].as_str().unwrap()
    );
    // Gemma 3 (253 MB) is over a 200 MiB budget; SmolLM2 (98 MB) fits.
    let out = run(&["recommend", "--json", "--max-vram-mb", "200"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let models = doc["models"].as_array().unwrap();
    let ids: Vec<&str> = models.iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["smollm2-135m-instruct-q4_1", "gemma-3-270m-q4_k_m"]);
    assert_eq!(models[0]["can_run"], true);
    assert_eq!(models[1]["can_run"], false);
    let gbps = doc["streaming_read_gbps"].as_f64().unwrap();
    let projected = gbps * 1e9 / 98_362_432.0;
    let got = models[0]["decode_tokens_per_s"].as_f64().unwrap();
    assert!(
        (got - projected).abs() < 1e-6 * projected,
        "{got} vs {projected}"
    );
    assert_eq!(models[0]["speed"], "projected");

    // A measurement on this adapter replaces the projection.
    std::fs::write(
        &speeds,
        format!(r#"{{"adapters": {{"{key}": {{"gguf-bytes:98362432": 123.5}}}}}}"#),
    )
    .unwrap();
    let out = run(&["recommend", "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let smol = doc["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == "smollm2-135m-instruct-q4_1")
        .unwrap();
    assert_eq!(smol["speed"], "measured");
    assert_eq!(smol["decode_tokens_per_s"], 123.5);
}
