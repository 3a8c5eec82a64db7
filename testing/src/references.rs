//! Where the repository and the fetched models are, and whether a reference peer is installed.

use std::path::PathBuf;

/// The repository root.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Whether a peer tool or fixture is available. When it is not, the test says it is skipped;
/// with `GPUPORT_REQUIRE_REFERENCES=1` (set by `.ci/run`) that is a failure instead.
pub fn available(what: &str, ok: bool) -> bool {
    if !ok {
        assert!(
            std::env::var_os("GPUPORT_REQUIRE_REFERENCES").is_none(),
            "{what} is required here (GPUPORT_REQUIRE_REFERENCES is set) but missing"
        );
        eprintln!("SKIPPED: {what} is missing; see README (set-up) to run this test");
    }
    ok
}

/// Whether `modelport` (modelport-cli 0.1.0) runs.
pub fn modelport_available() -> bool {
    let ok = std::process::Command::new("modelport")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    available(
        "`modelport` (pip install -r tools/requirements-test.txt)",
        ok,
    )
}

/// Whether `python3` can import every module in `modules`.
pub fn python_modules_available(modules: &[&str]) -> bool {
    let ok = std::process::Command::new("python3")
        .arg("-c")
        .arg(format!("import {}", modules.join(", ")))
        .output()
        .is_ok_and(|o| o.status.success());
    available(
        &format!(
            "python modules {} (pip install -r tools/requirements-test.txt)",
            modules.join(", ")
        ),
        ok,
    )
}

/// Runs `python3 tools/SCRIPT args…` from the repository root and returns its stdout; panics
/// with its stderr when it fails.
pub fn python_tool(script: &str, args: &[&std::ffi::OsStr]) -> Vec<u8> {
    let out = std::process::Command::new("python3")
        .arg(repo_root().join("tools").join(script))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{script} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// A model fetched by `cargo xtask fetch-models`, if present.
pub fn model(file: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("GPUPORT_MODELS_DIR")
        .map_or_else(|| repo_root().join("models"), PathBuf::from);
    let path = dir.join(file);
    available(
        &format!("model {} (cargo xtask fetch-models)", path.display()),
        path.is_file(),
    )
    .then_some(path)
}
