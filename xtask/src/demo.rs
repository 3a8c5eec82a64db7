//! `cargo xtask demo`: the README's main job until a model runs on the GPU — validate and inspect
//! the example bundles and packages with the `gpuport` binary, as a user would.

use crate::run_command;

pub fn run() -> anyhow::Result<()> {
    run_command("cargo", &["build", "--quiet", "--package", "gpuport"], &[])?;
    let gpuport = crate::repo_root().join("target/debug/gpuport");
    let gpuport = gpuport.to_str().unwrap_or("target/debug/gpuport");
    let steps: &[&[&str]] = &[
        // The three official ModelPort examples: documents only (their weights are not here).
        &[
            "validate",
            "--no-files",
            "examples/modelport/image-classification.json",
        ],
        &[
            "validate",
            "--no-files",
            "examples/modelport/object-detection.json",
        ],
        &[
            "validate",
            "--no-files",
            "examples/modelport/text-generation.json",
        ],
        &["inspect", "examples/modelport/image-classification.json"],
        &[
            "inspect",
            "examples/modelport/text-generation.json",
            "--runtime",
            "llamacpp",
        ],
        // The spec's MLC examples, matched against their compiled programs.
        &[
            "validate",
            "--no-files",
            "examples/mlc/gemma4-audio",
            "--program",
            "examples/mlc/gemma4-audio/program.json",
        ],
        &[
            "validate",
            "--no-files",
            "examples/mlc/llava-image",
            "--program",
            "examples/mlc/llava-image/program.json",
        ],
        // A complete package folder: files, parameter schema and resources checked.
        &[
            "validate",
            "examples/mlc/tiny-package",
            "--program",
            "examples/mlc/tiny-package/program.json",
        ],
        &["inspect", "examples/mlc/tiny-package"],
        &["hash", "interface", "examples/mlc/tiny-package"],
        &["hash", "resources", "examples/mlc/tiny-package"],
    ];
    for args in steps {
        println!();
        run_command(gpuport, args, &[])?;
    }
    Ok(())
}
