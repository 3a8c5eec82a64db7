//! MODEL for `generate`, `chat`, `can-run`: resolved and loaded by `gpuport_llm::loader`
//! (a `.gguf` file, a ModelPort text-generation bundle, or a store id); this module only adds
//! the global `--store`, the host's RAM, the progress display and the printing.

use std::path::Path;

use gpuport_llm::loader::{self, LoadError, LoadStage, ModelRef, ResolveOptions};
pub use gpuport_llm::loader::{Loaded, NO_TEMPLATE, Source, context_for};
use gpuport_runtime::GpuOptions;
use gpuport_runtime::gguf::GgmlType;

use crate::output::Stage;

/// Resolves MODEL with the command line's `--store` and this machine's RAM.
pub fn resolve(model: &Path) -> Result<Source, LoadError> {
    let options = ResolveOptions {
        store: crate::store::store_dir().map(Path::to_path_buf),
        ram_mb: loader::host_ram_mb(),
    };
    loader::resolve(&ModelRef::parse(model), &options)
}

/// `--kv-type`: a KV cache element type by name (`f32` or `f16`).
pub fn parse_kv_type(name: &str) -> Result<GgmlType, String> {
    gpuport_llm::kv_cache::parse_kv_type(name)
}

/// Loads `source` with a KV cache of `context` positions of `kv` values (the defaults where
/// `None`), showing each stage on a terminal and, unless `quiet`, one line when done.
pub fn load(
    source: &Source,
    (context, kv): (Option<usize>, Option<GgmlType>),
    quiet: bool,
    need_template: bool,
) -> Result<Loaded, LoadError> {
    let progress = Stage::start("reading the model file", quiet);
    let loaded = loader::load(
        source,
        &GpuOptions::default(),
        (context, kv),
        need_template,
        &|stage| match stage {
            LoadStage::Reading => progress.set("reading the model file"),
            LoadStage::OpeningGpu => progress.set("opening the GPU"),
            LoadStage::Uploading(bytes) => progress.set(&format!(
                "uploading {:.0} MB of weights",
                bytes as f64 / 1e6
            )),
        },
    )?;
    progress.done();
    if !quiet {
        let cfg = &loaded.model.cfg;
        eprintln!(
            "loaded {} ({}, {} layers, {:.1} MB) on {} ({:?}) in {:.2} s, context {} ({} KV \
             cache)",
            source.gguf.display(),
            cfg.arch.name(),
            cfg.layers,
            loaded.file_bytes as f64 / 1e6,
            loaded.gpu.info().name,
            loaded.gpu.info().backend,
            loaded.seconds,
            loaded.context,
            loaded.model.kv_type().name()
        );
    }
    Ok(loaded)
}

/// Prints a resolve or load error (with `hint` for a missing template) and returns the exit
/// code: 2 for what the user named wrong, 1 when the model or device failed.
pub fn report(e: &LoadError, hint: &str) -> u8 {
    match e {
        LoadError::NoTemplate => eprintln!("error: {e}; {hint}"),
        e => eprintln!("error [{}]: {e}", e.code()),
    }
    if e.is_usage() {
        crate::EXIT_USAGE
    } else {
        crate::EXIT_INVALID
    }
}
