//! `gpuport import | pull | ls | verify | evict | rm | gc`: a thin layer over `gpuport-store`
//! (argument parsing, progress bars on a terminal, printing).

use std::cell::RefCell;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::OnceLock;

use clap::Subcommand;
use gpuport_store::{
    Catalog, GgufOptions, HttpOptions, ImportOptions, ModelRecord, NoProgress, Progress, Store,
    StoreError, StoreOptions, default_root,
};
use indicatif::{ProgressBar, ProgressStyle};

use crate::output::bytes;
use crate::{EXIT_INVALID, EXIT_OK, EXIT_USAGE};

/// Environment variable: a PEM file whose certificates `pull` trusts instead of the built-in
/// Mozilla roots (a private mirror's CA; the store's tests use it for their loopback server).
const CA_FILE_ENV: &str = "GPUPORT_CA_FILE";
/// Environment variable: extra catalog files, separated like `PATH`.
const CATALOG_ENV: &str = "GPUPORT_CATALOG";

/// The `--store DIR` the command line gave (a global option, before or after the
/// subcommand), set once by `main`.
static STORE_DIR: OnceLock<PathBuf> = OnceLock::new();

/// Records the global `--store DIR`.
pub fn set_store_dir(dir: Option<PathBuf>) {
    if let Some(dir) = dir {
        let _ = STORE_DIR.set(dir);
    }
}

/// The global `--store DIR`, if given (else the store library's default applies:
/// `$GPUPORT_STORE`, then the data folder).
pub fn store_dir() -> Option<&'static std::path::Path> {
    STORE_DIR.get().map(PathBuf::as_path)
}

/// The store commands.
#[derive(Subcommand, Debug)]
pub enum StoreCommand {
    /// Import a local ModelPort bundle, MLC package folder or .gguf file into the store (never
    /// uses the network). The whole folder is validated before anything is copied.
    Import {
        /// Bundle folder (or its modelport.json), MLC package folder, or .gguf file.
        path: PathBuf,
        /// Model id (default: the manifest's id, the folder name, or the GGUF file name).
        #[arg(long)]
        id: Option<String>,
        /// For a .gguf: the SPDX license written into the generated manifest.
        #[arg(long, default_value = "LicenseRef-unknown")]
        license: String,
        /// For a .gguf: the context length written into the generated manifest.
        #[arg(long, default_value_t = 4096)]
        context: u64,
    },
    /// Pull a ModelPort bundle over HTTPS (a base URL or a modelport.json URL) or a catalog
    /// name; resumes interrupted downloads.
    Pull {
        /// https:// URL, or a catalog entry name.
        source: String,
        /// Model id (default: the manifest's id).
        #[arg(long)]
        id: Option<String>,
        /// Extra catalog file (repeatable; also $GPUPORT_CATALOG).
        #[arg(long = "catalog", value_name = "FILE")]
        catalogs: Vec<PathBuf>,
    },
    /// List the models in the store: id, state (cached|partial|absent), bytes, source.
    Ls {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Rehash stored files; corrupt blobs are moved to quarantine. Exit 1 when something was
    /// corrupt (or ID is not complete).
    Verify {
        /// Only this model (default: every blob in the store).
        id: Option<String>,
        /// Fetch missing or quarantined files of pulled models again.
        #[arg(long)]
        repair: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Free a model's bytes but keep its record, so it can be pulled or imported again.
    Evict {
        /// Model id.
        id: String,
    },
    /// Forget a model: its record, and the bytes no other model uses.
    Rm {
        /// Model id.
        id: String,
    },
    /// Remove blobs no model uses, temp files and stale partial downloads.
    Gc,
}

/// indicatif bars on a terminal; nothing otherwise.
struct Bars {
    bar: RefCell<Option<ProgressBar>>,
}

impl Bars {
    fn for_stderr() -> Box<dyn Progress> {
        if std::io::stderr().is_terminal() {
            Box::new(Bars {
                bar: RefCell::new(None),
            })
        } else {
            Box::new(NoProgress)
        }
    }
}

impl Progress for Bars {
    fn start(&self, label: &str, total: u64) {
        let bar = ProgressBar::new(total);
        if let Ok(style) = ProgressStyle::with_template(
            "{msg:30!} [{bar:30}] {bytes}/{total_bytes} {binary_bytes_per_sec} {eta}",
        ) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_message(label.to_owned());
        *self.bar.borrow_mut() = Some(bar);
    }
    fn advance(&self, n: u64) {
        if let Some(bar) = self.bar.borrow().as_ref() {
            bar.inc(n);
        }
    }
    fn finish(&self) {
        if let Some(bar) = self.bar.borrow_mut().take() {
            bar.finish_and_clear();
        }
    }
    fn note(&self, message: &str) {
        match self.bar.borrow().as_ref() {
            Some(bar) => bar.println(message),
            None => eprintln!("{message}"),
        }
    }
}

fn open() -> Result<Store, StoreError> {
    let root = default_root(store_dir())?;
    let mut http = HttpOptions::default();
    if let Some(ca) = std::env::var_os(CA_FILE_ENV).filter(|v| !v.is_empty()) {
        let path = PathBuf::from(ca);
        let pem = std::fs::read(&path).map_err(|e| StoreError::io(&path, e))?;
        http = http.with_pem_roots(&pem, &path)?;
    }
    Store::open_with(root, StoreOptions { http })
}

fn exit_for(e: &StoreError) -> u8 {
    eprintln!("error: {e}");
    if e.is_invalid_content() {
        EXIT_INVALID
    } else {
        EXIT_USAGE
    }
}

fn total_size(record: &ModelRecord) -> u64 {
    record
        .files
        .values()
        .fold(0u64, |sum, f| sum.saturating_add(f.size))
}

fn print_added(verb: &str, record: &ModelRecord) {
    println!(
        "{verb} {} ({} files, {}) from {}",
        record.id,
        record.files.len(),
        bytes(total_size(record)),
        record.source.describe()
    );
}

pub(crate) fn catalog_paths(extra: &[PathBuf]) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::env::var_os(CATALOG_ENV)
        .map(|v| {
            std::env::split_paths(&v)
                .filter(|p| !p.as_os_str().is_empty())
                .collect()
        })
        .unwrap_or_default();
    paths.extend(extra.iter().cloned());
    paths
}

/// Runs one store command; returns the exit code.
pub fn run(command: StoreCommand) -> u8 {
    match execute(command) {
        Ok(code) => code,
        Err(e) => exit_for(&e),
    }
}

fn execute(command: StoreCommand) -> Result<u8, StoreError> {
    match command {
        StoreCommand::Import {
            path,
            id,
            license,
            context,
        } => {
            let store = open()?;
            let options = ImportOptions {
                id,
                gguf: GgufOptions {
                    license,
                    context_length: context,
                },
            };
            let record = store.import(&path, &options, Bars::for_stderr().as_ref())?;
            print_added("imported", &record);
        }
        StoreCommand::Pull {
            source,
            id,
            catalogs,
        } => {
            let store = open()?;
            let progress = Bars::for_stderr();
            let record = if source.contains("://") {
                store.pull(&source, id.as_deref(), progress.as_ref())?
            } else {
                let catalog = Catalog::load(&catalog_paths(&catalogs))?;
                store.pull_catalog(&catalog, &source, id.as_deref(), progress.as_ref())?
            };
            print_added("pulled", &record);
        }
        StoreCommand::Ls { json } => {
            let list = open()?.list()?;
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&list).unwrap_or_default()
                );
            } else if list.is_empty() {
                println!("(no models)");
            } else {
                for s in &list {
                    println!(
                        "{:32} {:8} {:>14} / {:<14} {}",
                        s.id,
                        s.state.as_str(),
                        crate::output::grouped(s.bytes_present),
                        crate::output::grouped(s.bytes_total),
                        s.source
                    );
                }
            }
        }
        StoreCommand::Verify { id, repair, json } => {
            let store = open()?;
            let report = store.verify(id.as_deref(), repair, Bars::for_stderr().as_ref())?;
            let incomplete = id.is_some()
                && report
                    .models
                    .iter()
                    .any(|m| m.state != gpuport_store::Presence::Cached);
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&report).unwrap_or_default()
                );
            } else {
                print_verify(&report);
            }
            return Ok(if report.consistent() && !incomplete {
                EXIT_OK
            } else {
                EXIT_INVALID
            });
        }
        StoreCommand::Evict { id } => {
            let freed = open()?.evict(&id)?;
            println!("evicted {id}: freed {} (record kept)", bytes(freed));
        }
        StoreCommand::Rm { id } => {
            let freed = open()?.remove(&id)?;
            println!("removed {id}: freed {}", bytes(freed));
        }
        StoreCommand::Gc => {
            let r = open()?.gc()?;
            println!(
                "gc: {} orphan blob(s), {} temp file(s), {} stale partial download(s); freed {}",
                r.orphan_blobs,
                r.temp_files,
                r.partial_files,
                bytes(r.bytes_freed)
            );
        }
    }
    Ok(EXIT_OK)
}

fn print_verify(report: &gpuport_store::VerifyReport) {
    for bad in &report.bad_records {
        println!("✗ unreadable record: {bad}");
    }
    for digest in &report.corrupt {
        println!("✗ corrupt blob {digest} (moved to quarantine)");
    }
    for file in &report.repaired {
        println!("  refetched {file}");
    }
    for m in &report.models {
        let mark = if m.state == gpuport_store::Presence::Cached {
            "✓"
        } else {
            "·"
        };
        println!(
            "{mark} {}: {} ({} of {} bytes)",
            m.id,
            m.state.as_str(),
            crate::output::grouped(m.bytes_present),
            crate::output::grouped(m.bytes_total)
        );
    }
    for lost in &report.lost {
        println!("✗ lost: {lost} (its record says complete)");
    }
    for need in &report.needs {
        println!("  missing files: {need}");
    }
    let verdict = if report.consistent() {
        "consistent"
    } else {
        "NOT consistent"
    };
    println!("{} blob(s) checked: store {verdict}", report.blobs_checked);
}
