//! Loading an LLM for `generate`, `chat` and `can-run`: MODEL is a `.gguf` file, a ModelPort
//! text-generation bundle (its first variant this build runs, with the bundle's context length
//! and sampling defaults), or the id of such a model in the store (its files rehashed first).

use std::path::{Path, PathBuf};
use std::time::Instant;

use gpuport_llm::{ChatTemplate, LlmError, Model, ModelConfig, Tokenizer, stop_tokens};
use gpuport_manifest_core::bundle::resolve_inside;
use gpuport_manifest_core::document::{self, Opened};
use gpuport_manifest_core::fileref::FileLocation;
use gpuport_manifest_core::modelport::{
    GenerationDefaults, Manifest, is_valid_id, parse_manifest, select_variant,
};
use gpuport_runtime::gguf::{Gguf, Metadata};
use gpuport_runtime::{Gpu, GpuOptions};
use gpuport_store::{Store, default_root};

/// Context when neither the user nor a bundle sets one (capped by the model's own).
pub const DEFAULT_CONTEXT: usize = 4096;

/// A GGUF file and what the bundle around it (if any) says.
pub struct Source {
    /// The GGUF file.
    pub gguf: PathBuf,
    /// Context length from the bundle.
    pub context: Option<usize>,
    /// Sampling defaults (the bundle's, else ModelPort's).
    pub defaults: GenerationDefaults,
}

/// Resolves MODEL to a GGUF file: a path, else a store id.
pub fn resolve(model: &Path) -> Result<Source, String> {
    if model.is_file() && model.extension().is_some_and(|e| e == "gguf") {
        return Ok(Source {
            gguf: model.to_path_buf(),
            context: None,
            defaults: GenerationDefaults::default(),
        });
    }
    if !model.exists() {
        return from_store(model);
    }
    let (report, opened) = document::open(model).map_err(|e| e.to_string())?;
    let Some(Opened::Modelport { manifest, root }) = opened else {
        let problems: Vec<String> = report.problems.iter().map(|p| p.to_string()).collect();
        return Err(format!(
            "{}: not a .gguf file or a valid ModelPort bundle{}",
            model.display(),
            if problems.is_empty() {
                String::new()
            } else {
                format!(":\n  {}", problems.join("\n  "))
            }
        ));
    };
    let what = model.display().to_string();
    from_manifest(&what, &manifest, |rel| {
        resolve_inside(&root, rel).map_err(|e| format!("{what}: {e}"))
    })
}

/// MODEL as a store id: the store's copy (`$GPUPORT_STORE`, else the data folder), every file
/// rehashed before use.
fn from_store(model: &Path) -> Result<Source, String> {
    let id = model.to_string_lossy();
    let not_found = || {
        format!(
            "{}: no such file or bundle, and no model with that id in the store (add one with \
             `gpuport import PATH` or `gpuport pull`)",
            model.display()
        )
    };
    if !is_valid_id(&id) {
        return Err(not_found());
    }
    let root = default_root(crate::store::store_dir()).map_err(|e| e.to_string())?;
    if !root.join("models").join(format!("{id}.json")).is_file() {
        return Err(not_found());
    }
    let store = Store::open(&root).map_err(|e| e.to_string())?;
    let resolved = store.resolve(&id).map_err(|e| format!("{id}: {e}"))?;
    let text = std::fs::read_to_string(&resolved.manifest)
        .map_err(|e| format!("{id}: {}: {e}", resolved.manifest.display()))?;
    let manifest = parse_manifest(&text)
        .map_err(|problems| format!("{id}: the stored manifest is invalid: {problems:?}"))?
        .document;
    from_manifest(&id, &manifest, |rel| {
        resolved
            .files
            .get(rel)
            .cloned()
            .ok_or_else(|| format!("{id}: the store has no file {rel}"))
    })
}

/// The GGUF of the first text-generation variant this build runs, located by `locate`
/// (bundle-relative path → file).
fn from_manifest(
    what: &str,
    manifest: &Manifest,
    locate: impl Fn(&str) -> Result<PathBuf, String>,
) -> Result<Source, String> {
    let Some(llm) = &manifest.llm else {
        return Err(format!(
            "{what}: task {} is not text generation",
            manifest.task
        ));
    };
    let registered = crate::host::registered(&[]);
    let selection = select_variant(&manifest.variants, &registered, crate::host::ram_mb());
    let Some(chosen) = selection.chosen else {
        return Err(format!(
            "{what}: no variant runs here ({})",
            selection
                .skipped
                .iter()
                .map(|s| format!("{}: {:?}", s.id, s.reason))
                .collect::<Vec<_>>()
                .join("; ")
        ));
    };
    let variant = &manifest.variants[chosen];
    let FileLocation::Path(rel) = &variant.file.location else {
        return Err(format!(
            "{what}: variant {} is remote; pull it into the store first",
            variant.id
        ));
    };
    Ok(Source {
        gguf: locate(rel)?,
        context: usize::try_from(llm.context_length).ok(),
        defaults: llm.defaults.clone(),
    })
}

/// The message for a model without a chat template.
pub const NO_TEMPLATE: &str = "this model has no chat template (tokenizer.chat_template)";

/// Why a model did not load.
pub enum LoadError {
    /// A chat template was required and the file has none (found from the header, before the
    /// GPU is opened or any weight uploaded).
    NoTemplate,
    /// The model or the GPU failed.
    Model(LlmError),
}

impl From<LlmError> for LoadError {
    fn from(e: LlmError) -> Self {
        LoadError::Model(e)
    }
}

impl From<gpuport_runtime::GpuError> for LoadError {
    fn from(e: gpuport_runtime::GpuError) -> Self {
        LoadError::Model(e.into())
    }
}

impl From<gpuport_runtime::gguf::GgufError> for LoadError {
    fn from(e: gpuport_runtime::gguf::GgufError) -> Self {
        LoadError::Model(e.into())
    }
}

impl LoadError {
    /// Prints the error (with `hint` for a missing template) and returns the exit code.
    pub fn report(&self, hint: &str) -> u8 {
        match self {
            LoadError::NoTemplate => {
                eprintln!("error: {NO_TEMPLATE}; {hint}");
                crate::EXIT_USAGE
            }
            LoadError::Model(e) => {
                eprintln!("error [{}]: {e}", e.code());
                crate::EXIT_INVALID
            }
        }
    }
}

/// A model ready to generate.
pub struct Loaded {
    /// The GPU.
    pub gpu: Gpu,
    /// Weights and configuration.
    pub model: Model,
    /// Tokenizer.
    pub tokenizer: Tokenizer,
    /// Chat template, when the file has one.
    pub template: Option<ChatTemplate>,
    /// End-of-generation ids.
    pub stop: Vec<u32>,
    /// Context (KV cache positions).
    pub context: usize,
}

/// The context to allocate: the user's, else the bundle's, else the default, capped by the
/// model's trained length.
pub fn context_for(cfg: &ModelConfig, user: Option<usize>, bundle: Option<usize>) -> usize {
    user.unwrap_or_else(|| bundle.unwrap_or(DEFAULT_CONTEXT).min(cfg.context.max(1)))
}

/// Opens the GPU and loads the model, reporting progress on stderr. With `need_template`, a
/// file without a chat template is refused before the GPU is touched.
pub fn load(
    source: &Source,
    context: Option<usize>,
    quiet: bool,
    need_template: bool,
) -> Result<Loaded, LoadError> {
    let started = Instant::now();
    let stage = crate::output::Stage::start("reading the model file", quiet);
    let g = Gguf::open(&source.gguf)?;
    if need_template && g.value("tokenizer.chat_template").is_none() {
        return Err(LoadError::NoTemplate);
    }
    stage.set("opening the GPU");
    let gpu = Gpu::new(&GpuOptions::default())?;
    let cfg = ModelConfig::from_gguf(&g)?;
    let context = context_for(&cfg, context, source.context);
    let tokenizer = Tokenizer::from_gguf(&g).map_err(|e| LlmError::Tokenizer(e.0))?;
    let template = ChatTemplate::from_gguf(&g, &tokenizer)?;
    stage.set(&format!(
        "uploading {:.0} MB of weights to {}",
        g.file_bytes() as f64 / 1e6,
        gpu.info().name
    ));
    let model = Model::load(&gpu, &g, context)?;
    let stop = stop_tokens(&tokenizer);
    stage.done();
    if !quiet {
        eprintln!(
            "loaded {} ({}, {} layers, {:.1} MB) on {} ({:?}) in {:.2} s, context {context}",
            source.gguf.display(),
            cfg.arch.name(),
            cfg.layers,
            g.file_bytes() as f64 / 1e6,
            gpu.info().name,
            gpu.info().backend,
            started.elapsed().as_secs_f64()
        );
    }
    Ok(Loaded {
        gpu,
        model,
        tokenizer,
        template,
        stop,
        context,
    })
}
