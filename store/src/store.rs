//! [`Store`]: opening a store, reading records, resolving a model to verified files, listing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::blobs;
use crate::error::{IoContext, Result, StoreError};
use crate::http::{Http, HttpOptions};
use crate::layout::{Layout, write_atomic};
use crate::progress::NoProgress;
use crate::record::{ModelRecord, Source, check_id};

/// The environment variable naming the store folder.
pub const STORE_ENV: &str = "GPUPORT_STORE";

/// Picks the store folder: `explicit` (`--store DIR`), else `$GPUPORT_STORE`, else the
/// platform data folder + `gpuport` (`$XDG_DATA_HOME/gpuport`, by default
/// `~/.local/share/gpuport`, on Linux).
pub fn default_root(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(dir) = explicit {
        return Ok(dir.to_path_buf());
    }
    if let Some(dir) = std::env::var_os(STORE_ENV).filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    dirs::data_dir()
        .map(|d| d.join("gpuport"))
        .ok_or(StoreError::NoRoot)
}

/// Settings of an opened store.
#[derive(Debug, Clone, Default)]
pub struct StoreOptions {
    /// Network settings for pulls.
    pub http: HttpOptions,
}

/// A content-addressed model store at one root folder. Many `Store`s (in one or many
/// processes) may use the same root at once; see the crate docs for the locking.
#[derive(Debug, Clone)]
pub struct Store {
    pub(crate) layout: Layout,
    pub(crate) http: Http,
}

/// Whether a model's bytes are here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Presence {
    /// Every file is in the store.
    Cached,
    /// Some files are.
    Partial,
    /// None are (evicted, or never fetched).
    Absent,
}

impl Presence {
    /// `cached`, `partial` or `absent` (as in `ls` and its JSON).
    pub fn as_str(self) -> &'static str {
        match self {
            Presence::Cached => "cached",
            Presence::Partial => "partial",
            Presence::Absent => "absent",
        }
    }
}

/// One line of `ls`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ModelStatus {
    /// Model id.
    pub id: String,
    /// Where it came from (`local:/…`, `https://…`, `catalog:name`).
    pub source: String,
    /// Whether its bytes are here.
    pub state: Presence,
    /// Bytes of its files present in the store.
    pub bytes_present: u64,
    /// Bytes of all its files.
    pub bytes_total: u64,
    /// Number of files (the manifest included).
    pub files: usize,
}

/// A model's files, each checked against its size and SHA-256.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedModel {
    /// The record.
    pub record: ModelRecord,
    /// The manifest file (`modelport.json` or `mlc-model-manifest.json`).
    pub manifest: PathBuf,
    /// Bundle-relative path → blob path. Files a manifest names by `url` appear under
    /// `url/<sha256>`.
    pub files: BTreeMap<String, PathBuf>,
}

impl Store {
    /// Opens (creating its folders if needed) the store at `root` with default options.
    pub fn open(root: impl AsRef<Path>) -> Result<Self> {
        Store::open_with(root, StoreOptions::default())
    }

    /// Opens the store at `root` with `options`.
    pub fn open_with(root: impl AsRef<Path>, options: StoreOptions) -> Result<Self> {
        Ok(Store {
            layout: Layout::create(root.as_ref())?,
            http: Http::new(options.http),
        })
    }

    /// The store's root folder.
    pub fn root(&self) -> &Path {
        self.layout.root()
    }

    /// The on-disk path of the blob `sha256` (which may not exist).
    pub fn blob_path(&self, sha256: &str) -> PathBuf {
        self.layout.blob_path(sha256)
    }

    /// The record of `id`.
    pub fn record(&self, id: &str) -> Result<ModelRecord> {
        check_id(id)?;
        let path = self.layout.record_path(id);
        match std::fs::read_to_string(&path) {
            Ok(text) => ModelRecord::parse(&text, &path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Err(StoreError::UnknownModel(id.to_owned()))
            }
            Err(e) => Err(StoreError::io(path, e)),
        }
    }

    /// Every record, sorted by id. A record file that cannot be read or parsed is returned
    /// as its error (so `verify` can report it and `ls` still lists the rest).
    pub fn records(&self) -> Result<Vec<Result<ModelRecord>>> {
        self.records_in(&self.layout.models_dir())
    }

    /// Every pending record (`pending/<id>.json`: the new record of a re-import or re-pull
    /// over a complete model, kept apart so the complete one stays resolvable until the new
    /// one is complete). `gc`, `evict` and `rm` keep their blobs.
    pub fn pending_records(&self) -> Result<Vec<Result<ModelRecord>>> {
        self.records_in(&self.layout.pending_dir())
    }

    fn records_in(&self, dir: &Path) -> Result<Vec<Result<ModelRecord>>> {
        let dir = dir.to_path_buf();
        let mut paths = Vec::new();
        for entry in std::fs::read_dir(&dir).at(&dir)? {
            let path = entry.at(&dir)?.path();
            if path.extension().is_some_and(|e| e == "json") {
                paths.push(path);
            }
        }
        paths.sort();
        Ok(paths
            .into_iter()
            .map(|path| {
                std::fs::read_to_string(&path)
                    .at(&path)
                    .and_then(|text| ModelRecord::parse(&text, &path))
            })
            .collect())
    }

    /// Writes `record` atomically.
    pub(crate) fn write_record(&self, record: &ModelRecord) -> Result<()> {
        write_atomic(
            &self.layout,
            &self.layout.record_path(&record.id),
            record.to_json().as_bytes(),
        )
    }

    /// Writes `record` atomically as the pending record of its id.
    pub(crate) fn write_pending(&self, record: &ModelRecord) -> Result<()> {
        write_atomic(
            &self.layout,
            &self.layout.pending_path(&record.id),
            record.to_json().as_bytes(),
        )
    }

    /// The status of one record.
    pub fn status(&self, record: &ModelRecord) -> ModelStatus {
        let mut bytes_present = 0;
        let mut bytes_total = 0;
        let mut present = 0;
        for file in record.files.values() {
            bytes_total = u64::saturating_add(bytes_total, file.size);
            if blobs::present(&self.layout, &file.sha256, file.size) {
                bytes_present = u64::saturating_add(bytes_present, file.size);
                present += 1;
            }
        }
        let state = if present == record.files.len() {
            Presence::Cached
        } else if present == 0 {
            Presence::Absent
        } else {
            Presence::Partial
        };
        ModelStatus {
            id: record.id.clone(),
            source: record.source.describe(),
            state,
            bytes_present,
            bytes_total,
            files: record.files.len(),
        }
    }

    /// Every model's status (records that cannot be read are skipped; `verify` reports them).
    pub fn list(&self) -> Result<Vec<ModelStatus>> {
        Ok(self
            .records()?
            .into_iter()
            .filter_map(|r| r.ok())
            .map(|r| self.status(&r))
            .collect())
    }

    /// The command that brings a model's missing files back.
    pub(crate) fn refetch_hint(record: &ModelRecord) -> String {
        match &record.source {
            Source::Local { path } => format!("import {path} --id {}", record.id),
            Source::Remote { url } => format!("pull {url} --id {}", record.id),
            Source::Catalog { name } => format!("pull {name} --id {}", record.id),
        }
    }

    /// The model's files, each rehashed against its recorded SHA-256 — what a loader should
    /// read. Refuses a model with any file missing ([`StoreError::Incomplete`]) or corrupt
    /// ([`StoreError::CorruptBlob`]).
    pub fn resolve(&self, id: &str) -> Result<ResolvedModel> {
        let resolved = self.resolve_present(id)?;
        for file in resolved.record.files.values() {
            if !blobs::rehash(&self.layout, &file.sha256, &NoProgress)? {
                return Err(StoreError::CorruptBlob {
                    digest: file.sha256.clone(),
                });
            }
        }
        Ok(resolved)
    }

    /// Like [`Store::resolve`] but checks only that each blob exists with its size: for
    /// callers that hash the bytes themselves as they read them.
    pub fn resolve_present(&self, id: &str) -> Result<ResolvedModel> {
        let record = self.record(id)?;
        let missing = record
            .files
            .values()
            .filter(|f| !blobs::present(&self.layout, &f.sha256, f.size))
            .count();
        if missing > 0 {
            return Err(StoreError::Incomplete {
                id: id.to_owned(),
                missing,
                hint: Store::refetch_hint(&record),
            });
        }
        let files: BTreeMap<String, PathBuf> = record
            .files
            .iter()
            .map(|(path, f)| (path.clone(), self.layout.blob_path(&f.sha256)))
            .collect();
        let manifest = self.layout.blob_path(&record.manifest_sha256);
        Ok(ResolvedModel {
            record,
            manifest,
            files,
        })
    }
}
