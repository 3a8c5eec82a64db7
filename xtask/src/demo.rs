//! `cargo xtask demo`: the README's main job — fetch the default model (SmolLM2-135M-Instruct,
//! Q4_1 GGUF) and generate a reply to a prompt with the `gpuport` binary, on the GPU when there
//! is one, else on Mesa's lavapipe; then check it fits (`can-run`) and validate the example
//! manifests, as a user would.

use crate::run_command;

/// The demo's prompt (one user message through the model's chat template).
const PROMPT: &str = "What is the capital of France? Answer in one sentence.";

pub fn run() -> anyhow::Result<()> {
    crate::models::fetch(&["smollm2".to_string()], &crate::repo_root().join("models"))?;
    run_command(
        "cargo",
        &["build", "--quiet", "--release", "--package", "gpuport"],
        &[],
    )?;
    let gpuport = crate::repo_root().join("target/release/gpuport");
    let gpuport = gpuport.to_str().unwrap_or("target/release/gpuport");
    let model = "models/SmolLM2-135M-Instruct.Q4_1.gguf";
    let steps: &[&[&str]] = &[
        &[
            "generate",
            model,
            "--prompt",
            PROMPT,
            "--temperature",
            "0",
            "--max-tokens",
            "48",
        ],
        &["can-run", model],
        &[
            "validate",
            "--no-files",
            "examples/modelport/text-generation.json",
        ],
        &["inspect", "examples/modelport/text-generation.json"],
        &[
            "validate",
            "examples/mlc/tiny-package",
            "--program",
            "examples/mlc/tiny-package/program.json",
        ],
    ];
    for args in steps {
        println!();
        run_command(gpuport, args, &[])?;
    }
    Ok(())
}
