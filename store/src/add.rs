//! Adding models: `import` (local, never the network) and `pull` (HTTPS URL or catalog name).
//!
//! Order of writes, which is what makes a `kill -9` at any point harmless:
//!
//! 1. validate everything that can be validated without copying (the whole local folder; the
//!    fetched manifest);
//! 2. store the manifest blob; when every digest is known up front, write the new record in
//!    state `partial` so gc keeps its blobs — as `models/<id>.json` when the id has no complete
//!    record (so `ls` shows the model), else as `pending/<id>.json`, leaving the complete record
//!    (and so its blobs, which gc keeps) untouched;
//! 3. store each file: temp/partial file, hashed while written, checked, fsynced, renamed;
//! 4. write `models/<id>.json` in state `complete` (one atomic rename), then delete
//!    `pending/<id>.json`.
//!
//! A crash leaves only complete blobs, temp files (removed by gc), partial downloads (resumed by
//! the next pull) and at worst a `partial` record or a pending record that the next run
//! completes; the previous complete record of the id stays resolvable throughout. An import
//! that fails (rather than being killed) removes what step 2 wrote; a failed pull keeps it, so
//! its partial downloads survive `gc` until the next pull resumes them.

use std::collections::BTreeMap;
use std::path::Path;

use gpuport_manifest_core::fileref::FileLocation;
use gpuport_manifest_core::modelport::{MANIFEST_FILE_NAME, Manifest, parse_manifest};

use crate::blobs::{self, Expected};
use crate::catalog::{Catalog, ResolvedEntry};
use crate::error::{IoContext, Result, StoreError};
use crate::gguf::{self, GgufOptions};
use crate::http::{MAX_MANIFEST_BYTES, check_url};
use crate::layout::remove_durably;
use crate::local::{self, LocalKind, LocalPlan};
use crate::lock::{self, Access};
use crate::progress::Progress;
use crate::record::{
    Format, ModelRecord, RECORD_FORMAT, RecordFile, RecordState, Source, check_id,
};
use crate::store::Store;

/// Options of [`Store::import`].
#[derive(Debug, Clone, Default)]
pub struct ImportOptions {
    /// The model id (default: the manifest's id, the folder name, or the GGUF file stem).
    pub id: Option<String>,
    /// How a bare GGUF's manifest is generated.
    pub gguf: GgufOptions,
}

fn new_record(
    id: &str,
    source: Source,
    format: Format,
    manifest: &str,
    manifest_sha256: &str,
    files: BTreeMap<String, RecordFile>,
    state: RecordState,
) -> ModelRecord {
    ModelRecord {
        record: RECORD_FORMAT.to_owned(),
        id: id.to_owned(),
        source,
        format,
        manifest: manifest.to_owned(),
        manifest_sha256: manifest_sha256.to_owned(),
        files,
        state,
    }
}

/// `base` (ending in `/`) + the bundle-relative `path`, each segment percent-encoded.
fn join_url(base: &str, path: &str) -> Result<String> {
    let mut url = url::Url::parse(base).map_err(|e| StoreError::InsecureUrl {
        url: base.to_owned(),
        reason: e.to_string(),
    })?;
    url.path_segments_mut()
        .map_err(|()| StoreError::InsecureUrl {
            url: base.to_owned(),
            reason: "cannot be a base URL".into(),
        })?
        .pop_if_empty()
        .extend(path.split('/'));
    Ok(url.to_string())
}

/// Refuses declared sizes whose sum overflows `u64` (a hostile manifest): `sizes` yields
/// (field, size); the error names the field at which the sum overflowed.
fn check_total_size(what: &str, sizes: impl IntoIterator<Item = (String, u64)>) -> Result<u64> {
    let mut total: u64 = 0;
    for (field, size) in sizes {
        total = total
            .checked_add(size)
            .ok_or_else(|| StoreError::SizeOverflow {
                what: what.to_owned(),
                field,
            })?;
    }
    Ok(total)
}

/// Where step 2 put the new record (see the module docs).
#[derive(Debug, Clone)]
enum Staged {
    /// Nowhere (not every digest was known up front).
    Nothing,
    /// `models/<id>.json`, replacing `previous` (none, or a record that was not complete).
    InPlace { previous: Option<ModelRecord> },
    /// `pending/<id>.json`, next to the untouched complete record.
    Pending,
}

/// A bundle to pull: its manifest (already fetched and parsed) and where its files are.
struct RemoteBundle<'a> {
    source: Source,
    /// Where the manifest came from (none for a catalog entry, whose manifest is inline).
    manifest_url: Option<String>,
    manifest_bytes: &'a [u8],
    manifest: &'a Manifest,
    /// `https://…/` that `path` files are relative to.
    base: &'a str,
}

impl Store {
    /// Imports a local ModelPort bundle, MLC package folder or `.gguf` file. Never uses the
    /// network. The source is validated completely before anything is copied; each file is
    /// hashed while it is copied and refused if its size or declared digest differs.
    pub fn import(
        &self,
        path: &Path,
        options: &ImportOptions,
        progress: &dyn Progress,
    ) -> Result<ModelRecord> {
        let kind = local::classify(path)?;
        let source_path = std::fs::canonicalize(path).at(path)?;
        let source = Source::Local {
            path: source_path.display().to_string(),
        };
        let mut added = blobs::Added::new();
        let imported = match kind {
            LocalKind::Modelport(dir) => local::plan_modelport(&dir)
                .and_then(|plan| self.import_plan(plan, source, options, progress, &mut added)),
            LocalKind::Mlc(dir) => local::plan_mlc(&dir)
                .and_then(|plan| self.import_plan(plan, source, options, progress, &mut added)),
            LocalKind::Gguf(file) => self.import_gguf(&file, source, options, progress, &mut added),
        };
        if imported.is_err() {
            // The import's locks are released by now; the refusal is what the caller needs to
            // see, so a failure to take the blobs back (gc would) does not replace it.
            let _ = self.take_back(&added);
        }
        imported
    }

    /// Removes the blobs a refused import created that no record references, under the
    /// exclusive store lock (as `gc` does), so `blobs/` is exactly as it was before the import.
    /// A blob another import stored meanwhile is referenced by its record once that import
    /// finishes — the exclusive lock waits for it — and stays.
    fn take_back(&self, added: &blobs::Added) -> Result<()> {
        if added.is_empty() {
            return Ok(());
        }
        let _store = lock::store(&self.layout, Access::Exclusive)?;
        let records = self.all_records_or_refuse("rolling back the import")?;
        let wanted = crate::maintain::wanted_digests(&records, None);
        for digest in added.iter().filter(|d| !wanted.contains(*d)) {
            remove_durably(&self.layout.blob_path(digest))?;
        }
        Ok(())
    }

    fn import_plan(
        &self,
        plan: LocalPlan,
        source: Source,
        options: &ImportOptions,
        progress: &dyn Progress,
        added: &mut blobs::Added,
    ) -> Result<ModelRecord> {
        let id = options.id.clone().unwrap_or(plan.default_id.clone());
        check_id(&id)?;
        check_total_size(
            &plan.manifest_path,
            plan.files
                .iter()
                .map(|(path, f)| (format!("files.{path}.size"), f.size)),
        )?;
        let _store = lock::store(&self.layout, Access::Shared)?;
        let _model = lock::model(&self.layout, &id)?;
        let manifest_sha = blobs::store_bytes(&self.layout, &plan.manifest_bytes, added)?;
        let mut files = BTreeMap::new();
        files.insert(
            plan.manifest_path.clone(),
            RecordFile::local(manifest_sha.clone(), plan.manifest_bytes.len() as u64),
        );
        let all_known = plan.files.values().all(|f| f.sha256.is_some());
        let mut staged = Staged::Nothing;
        if all_known {
            for (path, f) in &plan.files {
                let sha256 = f.sha256.clone().unwrap_or_default();
                files.insert(path.clone(), RecordFile::local(sha256, f.size));
            }
            let partial = new_record(
                &id,
                source.clone(),
                plan.format,
                &plan.manifest_path,
                &manifest_sha,
                files.clone(),
                RecordState::Partial,
            );
            staged = self.stage(&partial)?;
        }
        for (path, f) in &plan.files {
            let expected = Expected {
                size: f.size,
                sha256: f.sha256.as_deref(),
            };
            let stored =
                blobs::store_file(&self.layout, &f.source, path, expected, progress, added);
            let sha256 = match stored {
                Ok(sha256) => sha256,
                Err(e) => {
                    self.unstage(&id, staged)?;
                    return Err(e);
                }
            };
            files.insert(path.clone(), RecordFile::local(sha256, f.size));
        }
        let record = new_record(
            &id,
            source,
            plan.format,
            &plan.manifest_path,
            &manifest_sha,
            files,
            RecordState::Complete,
        );
        self.finish(&record)?;
        Ok(record)
    }

    /// Step 2: writes the partial `record` where it cannot hide a complete one.
    fn stage(&self, record: &ModelRecord) -> Result<Staged> {
        let previous = match self.record(&record.id) {
            Err(StoreError::UnknownModel(_)) => None,
            Ok(old) if old.state != RecordState::Complete => Some(old),
            // A complete record, or one that cannot be read (it may be complete): keep it.
            _ => {
                self.write_pending(record)?;
                return Ok(Staged::Pending);
            }
        };
        self.write_record(record)?;
        Ok(Staged::InPlace { previous })
    }

    /// Undoes [`Store::stage`] after a failed import: the record it replaced comes back.
    fn unstage(&self, id: &str, staged: Staged) -> Result<()> {
        match staged {
            Staged::Nothing => Ok(()),
            Staged::InPlace {
                previous: Some(old),
            } => self.write_record(&old),
            Staged::InPlace { previous: None } => {
                remove_durably(&self.layout.record_path(id)).map(drop)
            }
            Staged::Pending => remove_durably(&self.layout.pending_path(id)).map(drop),
        }
    }

    /// Step 4: the complete record replaces the old one atomically; the pending one goes.
    fn finish(&self, record: &ModelRecord) -> Result<()> {
        self.write_record(record)?;
        remove_durably(&self.layout.pending_path(&record.id))?;
        Ok(())
    }

    fn import_gguf(
        &self,
        file: &Path,
        source: Source,
        options: &ImportOptions,
        progress: &dyn Progress,
        added: &mut blobs::Added,
    ) -> Result<ModelRecord> {
        let facts = gguf::read_facts(file)?;
        let name = file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let id = options
            .id
            .clone()
            .unwrap_or_else(|| gguf::default_id(&name, &facts));
        check_id(&id)?;
        let size = std::fs::metadata(file).at(file)?.len();
        let _store = lock::store(&self.layout, Access::Shared)?;
        let _model = lock::model(&self.layout, &id)?;
        let expected = Expected { size, sha256: None };
        let sha256 = blobs::store_file(&self.layout, file, &name, expected, progress, added)?;
        let manifest = gguf::manifest(&id, &name, &facts, (size, &sha256), &options.gguf);
        let manifest_sha = blobs::store_bytes(&self.layout, &manifest, added)?;
        let files = BTreeMap::from([
            (
                MANIFEST_FILE_NAME.to_owned(),
                RecordFile::local(manifest_sha.clone(), manifest.len() as u64),
            ),
            (
                gguf::bundle_path(&name),
                RecordFile {
                    sha256,
                    size,
                    url: None,
                },
            ),
        ]);
        let record = new_record(
            &id,
            source,
            Format::Modelport,
            MANIFEST_FILE_NAME,
            &manifest_sha,
            files,
            RecordState::Complete,
        );
        self.finish(&record)?;
        Ok(record)
    }

    /// Pulls a ModelPort bundle over HTTPS: `url` is the bundle's base URL or its
    /// `modelport.json` URL. Files are fetched relative to the manifest (or from their `url`),
    /// resumed after interruptions, and checked against size and SHA-256 before they become
    /// visible. Files already in the store are not fetched again.
    pub fn pull(
        &self,
        url: &str,
        id: Option<&str>,
        progress: &dyn Progress,
    ) -> Result<ModelRecord> {
        check_url(url)?;
        let manifest_url = if url.ends_with(".json") {
            url.to_owned()
        } else {
            format!("{}/{MANIFEST_FILE_NAME}", url.trim_end_matches('/'))
        };
        let bytes = self.http.get_bytes(&manifest_url, MAX_MANIFEST_BYTES)?;
        let manifest = parse_manifest(&String::from_utf8_lossy(&bytes))
            .map_err(|problems| StoreError::InvalidManifest {
                what: manifest_url.clone(),
                problems,
            })?
            .document;
        let base = match manifest_url.rfind('/') {
            Some(i) => manifest_url[..=i].to_owned(),
            None => manifest_url.clone(),
        };
        let source = Source::Remote {
            url: manifest_url.clone(),
        };
        let bundle = RemoteBundle {
            source,
            manifest_url: Some(manifest_url),
            manifest_bytes: &bytes,
            manifest: &manifest,
            base: &base,
        };
        self.pull_bundle(bundle, id, progress)
    }

    /// Pulls the catalog entry `name` (its base URL's `${VARIABLES}` read from the
    /// environment).
    pub fn pull_catalog(
        &self,
        catalog: &Catalog,
        name: &str,
        id: Option<&str>,
        progress: &dyn Progress,
    ) -> Result<ModelRecord> {
        let entry = catalog.resolve(name, |v| std::env::var(v).ok())?;
        self.pull_entry(&entry, id, progress)
    }

    /// Pulls an already resolved catalog entry.
    pub fn pull_entry(
        &self,
        entry: &ResolvedEntry,
        id: Option<&str>,
        progress: &dyn Progress,
    ) -> Result<ModelRecord> {
        let source = Source::Catalog {
            name: entry.name.clone(),
        };
        let bundle = RemoteBundle {
            source,
            manifest_url: None,
            manifest_bytes: &entry.manifest_bytes,
            manifest: &entry.manifest,
            base: &entry.base_url,
        };
        self.pull_bundle(bundle, id, progress)
    }

    fn pull_bundle(
        &self,
        bundle: RemoteBundle<'_>,
        id: Option<&str>,
        progress: &dyn Progress,
    ) -> Result<ModelRecord> {
        let RemoteBundle {
            source,
            manifest_url,
            manifest_bytes,
            manifest,
            base,
        } = bundle;
        let id = id.map(str::to_owned).unwrap_or(manifest.id.clone());
        check_id(&id)?;
        check_total_size(
            manifest_url.as_deref().unwrap_or(MANIFEST_FILE_NAME),
            manifest
                .files()
                .into_iter()
                .map(|(pointer, f)| (format!("{pointer}/size"), f.size)),
        )?;
        let mut files = BTreeMap::new();
        for (_, f) in manifest.files() {
            let (path, url) = match &f.location {
                FileLocation::Path(p) => (p.clone(), join_url(base, p)?),
                FileLocation::Url(u) => (format!("url/{}", f.sha256), u.clone()),
            };
            check_url(&url)?;
            files.insert(
                path,
                RecordFile {
                    sha256: f.sha256.clone(),
                    size: f.size,
                    url: Some(url),
                },
            );
        }
        let _store = lock::store(&self.layout, Access::Shared)?;
        let _model = lock::model(&self.layout, &id)?;
        // A pull keeps what it fetched for a later resume (`gc` collects it if none comes).
        let manifest_sha =
            blobs::store_bytes(&self.layout, manifest_bytes, &mut blobs::Added::new())?;
        files.insert(
            MANIFEST_FILE_NAME.to_owned(),
            RecordFile {
                sha256: manifest_sha.clone(),
                size: manifest_bytes.len() as u64,
                url: manifest_url,
            },
        );
        let mut record = new_record(
            &id,
            source,
            Format::Modelport,
            MANIFEST_FILE_NAME,
            &manifest_sha,
            files,
            RecordState::Partial,
        );
        self.stage(&record)?;
        self.fetch_missing(&record, progress)?;
        record.state = RecordState::Complete;
        self.finish(&record)?;
        Ok(record)
    }

    /// Downloads every file of `record` that has a URL and is not in the store.
    pub(crate) fn fetch_missing(
        &self,
        record: &ModelRecord,
        progress: &dyn Progress,
    ) -> Result<()> {
        for (path, f) in &record.files {
            if blobs::present(&self.layout, &f.sha256, f.size) {
                continue;
            }
            let Some(url) = &f.url else {
                return Err(StoreError::Incomplete {
                    id: record.id.clone(),
                    missing: 1,
                    hint: Store::refetch_hint(record),
                });
            };
            self.http
                .download_blob(&self.layout, url, &f.sha256, f.size, path, progress)?;
        }
        Ok(())
    }
}
