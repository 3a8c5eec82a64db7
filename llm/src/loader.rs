//! From what a user names to a model ready to generate: [`ModelRef`] is a `.gguf` file, a
//! ModelPort text-generation bundle (the first variant this executor runs, with the bundle's
//! context length and sampling defaults), or the id of such a model in the store (every file
//! rehashed before use). [`load`] opens the GPU and uploads it. Every failure is a typed
//! [`LoadError`] with a stable [`code`](LoadError::code); the CLI and the server only print.

use std::path::{Path, PathBuf};
use std::time::Instant;

use gpuport_kernels::quant::GgmlType;
use gpuport_manifest_core::bundle::resolve_inside;
use gpuport_manifest_core::document::{self, Opened};
use gpuport_manifest_core::fileref::FileLocation;
use gpuport_manifest_core::modelport::{
    GenerationDefaults, Manifest, Runtime, RuntimeSupport, is_valid_id, parse_manifest,
    select_variant,
};
use gpuport_runtime::gguf::{Gguf, GgufError, Metadata};
use gpuport_runtime::{Gpu, GpuError, GpuOptions};
use gpuport_store::{Store, StoreError, default_root};

use crate::{ChatTemplate, LlmError, Model, ModelConfig, Tokenizer, stop_tokens};

/// Context when neither the user nor a bundle sets one (capped by the model's own).
pub const DEFAULT_CONTEXT: usize = 4096;

/// The message for a model without a chat template.
pub const NO_TEMPLATE: &str = "this model has no chat template (tokenizer.chat_template)";

/// What a user named as MODEL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelRef {
    /// A `.gguf` file.
    Gguf(PathBuf),
    /// A ModelPort bundle folder or its `modelport.json`.
    Bundle(PathBuf),
    /// The id of a model in the store.
    StoreId(String),
}

impl ModelRef {
    /// Classifies `name`: an existing `.gguf` file, another existing path (a bundle), else a
    /// store id.
    pub fn parse(name: &Path) -> ModelRef {
        if name.is_file() && name.extension().is_some_and(|e| e == "gguf") {
            ModelRef::Gguf(name.to_path_buf())
        } else if name.exists() {
            ModelRef::Bundle(name.to_path_buf())
        } else {
            ModelRef::StoreId(name.to_string_lossy().into_owned())
        }
    }
}

/// A GGUF file and what the bundle around it (if any) says.
#[derive(Debug, Clone, PartialEq)]
pub struct Source {
    /// The GGUF file.
    pub gguf: PathBuf,
    /// Context length from the bundle.
    pub context: Option<usize>,
    /// Sampling defaults (the bundle's, else ModelPort's).
    pub defaults: GenerationDefaults,
}

/// Why a model could not be resolved or loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// No such file or bundle, and no model with that id in the store.
    #[error(
        "{0}: no such file or bundle, and no model with that id in the store (add one with `gpuport import PATH` or `gpuport pull`)"
    )]
    NotFound(String),
    /// A path that is neither a `.gguf` file nor a valid ModelPort bundle.
    #[error("{path}: not a .gguf file or a valid ModelPort bundle{}", list(.problems))]
    InvalidBundle {
        /// The path.
        path: PathBuf,
        /// The bundle's problems (JSON pointer and message each).
        problems: Vec<String>,
    },
    /// The model is not a text-generation model.
    #[error("{what}: task {task} is not text generation")]
    NotTextGeneration {
        /// The bundle or store id.
        what: String,
        /// Its task.
        task: String,
    },
    /// No variant runs here.
    #[error("{what}: no variant runs here ({skipped})")]
    NoVariant {
        /// The bundle or store id.
        what: String,
        /// Each skipped variant and why.
        skipped: String,
    },
    /// The chosen variant's file is remote.
    #[error("{what}: variant {variant} is remote; pull it into the store first")]
    Remote {
        /// The bundle or store id.
        what: String,
        /// The variant.
        variant: String,
    },
    /// A file the manifest names is not where it should be.
    #[error("{what}: {reason}")]
    File {
        /// The bundle or store id.
        what: String,
        /// What is wrong.
        reason: String,
    },
    /// The store refused (incomplete model, corrupt blob, I/O).
    #[error("{id}: {source}")]
    Store {
        /// The store id.
        id: String,
        /// The store's error.
        source: StoreError,
    },
    /// A chat template was required and the file has none (found from the header, before the
    /// GPU is opened or any weight uploaded).
    #[error("{NO_TEMPLATE}")]
    NoTemplate,
    /// The model file or the GPU failed.
    #[error(transparent)]
    Model(#[from] LlmError),
}

fn list(problems: &[String]) -> String {
    if problems.is_empty() {
        String::new()
    } else {
        format!(":\n  {}", problems.join("\n  "))
    }
}

impl From<GpuError> for LoadError {
    fn from(e: GpuError) -> Self {
        LoadError::Model(e.into())
    }
}

impl From<GgufError> for LoadError {
    fn from(e: GgufError) -> Self {
        LoadError::Model(e.into())
    }
}

impl LoadError {
    /// A stable code for callers and JSON output (the seed engine's where one fits).
    pub fn code(&self) -> &'static str {
        match self {
            LoadError::NotFound(_) => "NO_MODEL",
            LoadError::InvalidBundle { .. } | LoadError::File { .. } => "INVALID_MODEL_FOLDER",
            LoadError::NotTextGeneration { .. } | LoadError::NoVariant { .. } => "CANNOT_RUN",
            LoadError::Remote { .. } => "CACHE_INCOMPLETE",
            LoadError::Store { source, .. } => match source {
                StoreError::Incomplete { .. } | StoreError::CorruptBlob { .. } => {
                    "CACHE_INCOMPLETE"
                }
                _ => "STORE_FAILED",
            },
            LoadError::NoTemplate => "NO_TEMPLATE",
            LoadError::Model(e) => e.code(),
        }
    }

    /// Whether the user named something wrong (rather than a model or device failing).
    pub fn is_usage(&self) -> bool {
        matches!(self, LoadError::NotFound(_) | LoadError::NoTemplate)
    }
}

/// What [`resolve`] needs from its caller.
#[derive(Debug, Clone, Default)]
pub struct ResolveOptions {
    /// The store folder (default: `$GPUPORT_STORE`, else the data folder).
    pub store: Option<PathBuf>,
    /// RAM of this machine in MiB, for variant selection (`None`: not checked).
    pub ram_mb: Option<u64>,
}

/// Resolves `model` to a GGUF file and its bundle's settings.
pub fn resolve(model: &ModelRef, options: &ResolveOptions) -> Result<Source, LoadError> {
    match model {
        ModelRef::Gguf(path) => Ok(Source {
            gguf: path.clone(),
            context: None,
            defaults: GenerationDefaults::default(),
        }),
        ModelRef::Bundle(path) => from_bundle(path, options),
        ModelRef::StoreId(id) => from_store(id, options),
    }
}

fn from_bundle(path: &Path, options: &ResolveOptions) -> Result<Source, LoadError> {
    let invalid = |problems| LoadError::InvalidBundle {
        path: path.to_path_buf(),
        problems,
    };
    let (report, opened) = document::open(path).map_err(|e| invalid(vec![e.to_string()]))?;
    let Some(Opened::Modelport { manifest, root }) = opened else {
        return Err(invalid(
            report.problems.iter().map(|p| p.to_string()).collect(),
        ));
    };
    let what = path.display().to_string();
    from_manifest(&what, &manifest, options, |rel| {
        resolve_inside(&root, rel).map_err(|e| LoadError::File {
            what: what.clone(),
            reason: e.to_string(),
        })
    })
}

fn from_store(id: &str, options: &ResolveOptions) -> Result<Source, LoadError> {
    if !is_valid_id(id) {
        return Err(LoadError::NotFound(id.to_owned()));
    }
    let store_err = |source| LoadError::Store {
        id: id.to_owned(),
        source,
    };
    let root = default_root(options.store.as_deref()).map_err(store_err)?;
    if !root.join("models").join(format!("{id}.json")).is_file() {
        return Err(LoadError::NotFound(id.to_owned()));
    }
    let store = Store::open(&root).map_err(store_err)?;
    let resolved = store.resolve(id).map_err(store_err)?;
    let file_err = |reason: String| LoadError::File {
        what: id.to_owned(),
        reason,
    };
    let text = std::fs::read_to_string(&resolved.manifest)
        .map_err(|e| file_err(format!("{}: {e}", resolved.manifest.display())))?;
    let manifest = parse_manifest(&text)
        .map_err(|problems| file_err(format!("the stored manifest is invalid: {problems:?}")))?
        .document;
    from_manifest(id, &manifest, options, |rel| {
        resolved
            .files
            .get(rel)
            .cloned()
            .ok_or_else(|| file_err(format!("the store has no file {rel}")))
    })
}

/// The GGUF of the first text-generation variant this executor runs, located by `locate`
/// (bundle-relative path → file).
fn from_manifest(
    what: &str,
    manifest: &Manifest,
    options: &ResolveOptions,
    locate: impl Fn(&str) -> Result<PathBuf, LoadError>,
) -> Result<Source, LoadError> {
    let Some(llm) = &manifest.llm else {
        return Err(LoadError::NotTextGeneration {
            what: what.to_owned(),
            task: manifest.task.to_string(),
        });
    };
    // This executor serves the `llamacpp` runtime (GGUF files).
    let runtimes = [RuntimeSupport::any_backend(Runtime::Llamacpp)];
    let selection = select_variant(&manifest.variants, &runtimes, options.ram_mb);
    let Some(chosen) = selection.chosen else {
        return Err(LoadError::NoVariant {
            what: what.to_owned(),
            skipped: selection
                .skipped
                .iter()
                .map(|s| format!("{}: {:?}", s.id, s.reason))
                .collect::<Vec<_>>()
                .join("; "),
        });
    };
    let variant = &manifest.variants[chosen];
    let FileLocation::Path(rel) = &variant.file.location else {
        return Err(LoadError::Remote {
            what: what.to_owned(),
            variant: variant.id.clone(),
        });
    };
    Ok(Source {
        gguf: locate(rel)?,
        context: usize::try_from(llm.context_length).ok(),
        defaults: llm.defaults.clone(),
    })
}

/// The context to allocate: the user's, else the bundle's, else the default, capped by the
/// model's trained length.
pub fn context_for(cfg: &ModelConfig, user: Option<usize>, bundle: Option<usize>) -> usize {
    user.unwrap_or_else(|| bundle.unwrap_or(DEFAULT_CONTEXT).min(cfg.context.max(1)))
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
    /// Size of the GGUF file.
    pub file_bytes: u64,
    /// Seconds the load took.
    pub seconds: f64,
}

/// The stages [`load`] reports to its caller's progress display.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadStage {
    /// Reading the GGUF header and tensor table.
    Reading,
    /// Opening the GPU adapter and device.
    OpeningGpu,
    /// Uploading this many bytes of weights.
    Uploading(u64),
}

/// Opens the GPU (`gpu`: which adapter, and how) and loads `source` with a KV cache plan for
/// `context` positions (the user's; else the bundle's, capped by the model) of `kv` values (the
/// user's; else [`crate::kv_cache::default_kv_type`] on the adapter). With
/// `need_template`, a file without a chat template is refused before the GPU is touched.
/// `stage` hears each stage as it starts.
pub fn load(
    source: &Source,
    gpu: &GpuOptions,
    (context, kv): (Option<usize>, Option<GgmlType>),
    need_template: bool,
    stage: &dyn Fn(LoadStage),
) -> Result<Loaded, LoadError> {
    // The environment's cache type is checked before anything is read.
    let kv = match kv {
        Some(kv) => Some(kv),
        None => crate::kv_cache::env_kv_type()?,
    };
    let started = Instant::now();
    stage(LoadStage::Reading);
    let g = Gguf::open(&source.gguf)?;
    if need_template && g.value("tokenizer.chat_template").is_none() {
        return Err(LoadError::NoTemplate);
    }
    stage(LoadStage::OpeningGpu);
    let gpu = Gpu::new(gpu)?;
    let cfg = ModelConfig::from_gguf(&g)?;
    let context = context_for(&cfg, context, source.context);
    let tokenizer = Tokenizer::from_gguf(&g).map_err(|e| LlmError::Tokenizer(e.0))?;
    let template = ChatTemplate::from_gguf(&g, &tokenizer)?;
    stage(LoadStage::Uploading(g.file_bytes()));
    let kv = kv.unwrap_or_else(|| crate::kv_cache::adapter_kv_type(&gpu));
    let model = Model::load_with_kv(&gpu, &g, context, kv)?;
    let stop = stop_tokens(&tokenizer);
    Ok(Loaded {
        gpu,
        model,
        tokenizer,
        template,
        stop,
        context,
        file_bytes: g.file_bytes(),
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// Total RAM of this machine in MiB, when the OS tells it (Linux `/proc/meminfo`). Read by hand:
/// one line of one file does not justify a system-information dependency.
pub fn host_ram_mb() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn names_are_classified_and_unknown_ids_are_not_found() {
        let dir = std::env::temp_dir().join(format!("gpuport-loader-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let gguf = dir.join("m.gguf");
        std::fs::write(&gguf, b"GGUF").unwrap();
        assert_eq!(ModelRef::parse(&gguf), ModelRef::Gguf(gguf.clone()));
        assert_eq!(ModelRef::parse(&dir), ModelRef::Bundle(dir.clone()));
        assert_eq!(
            ModelRef::parse(Path::new("no-such-model")),
            ModelRef::StoreId("no-such-model".into())
        );
        let options = ResolveOptions {
            store: Some(dir.join("store")),
            ram_mb: None,
        };
        for id in ["no-such-model", "Not An Id"] {
            let err = resolve(&ModelRef::StoreId(id.into()), &options).unwrap_err();
            assert_eq!(err.code(), "NO_MODEL", "{err}");
            assert!(err.is_usage());
        }
        // A folder that is no bundle: every problem named.
        let err = resolve(&ModelRef::Bundle(dir.clone()), &options).unwrap_err();
        assert_eq!(err.code(), "INVALID_MODEL_FOLDER", "{err}");
        let _ = std::fs::remove_dir_all(dir);
    }
}
