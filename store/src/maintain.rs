//! Taking bytes away: `verify` (rehash, quarantine), `evict` (free bytes, keep the record),
//! `remove` (forget the model), `gc` (orphans, temp files, stale partial downloads). Each takes
//! the store lock exclusively, so no import or pull is between "blob renamed in" and "record
//! written" while blobs are deleted.

use std::collections::{BTreeMap, BTreeSet};

use crate::blobs;
use crate::error::{IoContext, Result, StoreError};
use crate::layout::remove_durably;
use crate::lock::{self, Access};
use crate::progress::Progress;
use crate::record::{ModelRecord, RecordState, Source, check_id};
use crate::store::{ModelStatus, Store};

/// What `verify` found.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct VerifyReport {
    /// Blobs rehashed.
    pub blobs_checked: usize,
    /// Blobs whose content did not match their name (moved to `quarantine/`).
    pub corrupt: Vec<String>,
    /// Record files that could not be read or parsed (path: reason).
    pub bad_records: Vec<String>,
    /// Status of each model checked, after quarantine and repair.
    pub models: Vec<ModelStatus>,
    /// Files fetched again by `--repair` (model id: path).
    pub repaired: Vec<String>,
    /// Models with missing files that `--repair` could not bring back, with the command
    /// that would.
    pub needs: Vec<String>,
    /// Files missing from models whose record says `complete` (model id: path): bytes the
    /// store promised and lost (after `--repair`, those it could not bring back).
    pub lost: Vec<String>,
}

impl VerifyReport {
    /// True when every blob matched, every record parsed, and every `complete` model has all
    /// its blobs.
    pub fn consistent(&self) -> bool {
        self.corrupt.is_empty() && self.bad_records.is_empty() && self.lost.is_empty()
    }
}

/// What `gc` removed.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct GcReport {
    /// Blobs no record uses.
    pub orphan_blobs: usize,
    /// Temp files of interrupted imports and record writes.
    pub temp_files: usize,
    /// Partial downloads no model needs any more.
    pub partial_files: usize,
    /// Bytes freed.
    pub bytes_freed: u64,
}

/// Digests used by records that want their bytes (not evicted), except `skip`.
pub(crate) fn wanted_digests(records: &[ModelRecord], skip: Option<&str>) -> BTreeSet<String> {
    records
        .iter()
        .filter(|r| r.state != RecordState::Evicted && Some(r.id.as_str()) != skip)
        .flat_map(|r| r.files.values().map(|f| f.sha256.clone()))
        .collect()
}

impl Store {
    /// Every record and pending record, or — when any of them cannot be read, since it might
    /// reference any blob — a refusal to delete anything (`what` names the command).
    pub(crate) fn all_records_or_refuse(&self, what: &str) -> Result<Vec<ModelRecord>> {
        let mut all = self.records()?;
        all.extend(self.pending_records()?);
        let mut good = Vec::with_capacity(all.len());
        for r in all {
            match r {
                Ok(r) => good.push(r),
                Err(e) => {
                    return Err(StoreError::BadDocument {
                        path: self.layout.models_dir(),
                        reason: format!("{what} refused, a record is unreadable: {e}"),
                    });
                }
            }
        }
        Ok(good)
    }

    /// Deletes the blobs of `record` that no other wanted record uses; returns bytes freed.
    fn free_blobs_of(&self, record: &ModelRecord, others: &[ModelRecord]) -> Result<u64> {
        let keep = wanted_digests(others, Some(&record.id));
        let mut freed: u64 = 0;
        let unique: BTreeMap<&str, u64> = record
            .files
            .values()
            .map(|f| (f.sha256.as_str(), f.size))
            .collect();
        for (digest, size) in unique {
            if !keep.contains(digest) && remove_durably(&self.layout.blob_path(digest))? {
                freed = freed.saturating_add(size);
            }
        }
        Ok(freed)
    }

    /// Frees the bytes of `id` that no other model uses and keeps its record (state
    /// `evicted`), so `pull`/`import` can bring it back. Returns the bytes freed.
    /// An unfinished re-import of `id` (`pending/<id>.json`) is dropped too. Refuses (and
    /// deletes nothing) when any record cannot be read.
    pub fn evict(&self, id: &str) -> Result<u64> {
        let _store = lock::store(&self.layout, Access::Exclusive)?;
        let mut record = self.record(id)?;
        let all = self.all_records_or_refuse("evict")?;
        record.state = RecordState::Evicted;
        self.write_record(&record)?;
        remove_durably(&self.layout.pending_path(id))?;
        let mut freed = self.free_blobs_of(&record, &all)?;
        for pending in all.iter().filter(|r| r.id == id) {
            freed = freed.saturating_add(self.free_blobs_of(pending, &all)?);
        }
        Ok(freed)
    }

    /// Forgets `id`: deletes its record (and any unfinished re-import, `pending/<id>.json`),
    /// then the bytes no other model uses. Returns the bytes freed. Refuses (and deletes
    /// nothing) when any record cannot be read.
    pub fn remove(&self, id: &str) -> Result<u64> {
        check_id(id)?;
        let _store = lock::store(&self.layout, Access::Exclusive)?;
        let all = self.all_records_or_refuse("rm")?;
        if !all.iter().any(|r| r.id == id) {
            return Err(StoreError::UnknownModel(id.to_owned()));
        }
        remove_durably(&self.layout.record_path(id))?;
        remove_durably(&self.layout.pending_path(id))?;
        let mut freed = 0u64;
        for record in all.iter().filter(|r| r.id == id) {
            freed = freed.saturating_add(self.free_blobs_of(record, &all)?);
        }
        Ok(freed)
    }

    /// Removes blobs no wanted record uses, every temp file, and partial downloads of blobs
    /// that are present or that no record wants.
    pub fn gc(&self) -> Result<GcReport> {
        let _store = lock::store(&self.layout, Access::Exclusive)?;
        // A record that cannot be read might reference any blob: delete nothing.
        let records = self.all_records_or_refuse("gc")?;
        let wanted = wanted_digests(&records, None);
        let mut report = GcReport::default();
        for digest in self.layout.list_blobs()? {
            if !wanted.contains(&digest) {
                let path = self.layout.blob_path(&digest);
                let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
                if remove_durably(&path)? {
                    report.orphan_blobs += 1;
                    report.bytes_freed = report.bytes_freed.saturating_add(size);
                }
            }
        }
        for (dir, is_partial) in [
            (self.layout.tmp_dir(), false),
            (self.layout.partial_dir(), true),
        ] {
            for entry in std::fs::read_dir(&dir).at(&dir)? {
                let path = entry.at(&dir)?.path();
                if is_partial {
                    let digest = path
                        .file_name()
                        .and_then(|n| n.to_str())
                        .and_then(|n| n.strip_suffix(".part"))
                        .unwrap_or("");
                    let needed = wanted.contains(digest) && !self.layout.blob_path(digest).exists();
                    if needed {
                        continue;
                    }
                }
                let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
                if remove_durably(&path)? {
                    report.bytes_freed = report.bytes_freed.saturating_add(size);
                    if is_partial {
                        report.partial_files += 1;
                    } else {
                        report.temp_files += 1;
                    }
                }
            }
        }
        Ok(report)
    }

    /// Rehashes the blobs of `id` (or, without an id, every blob in the store). A blob whose
    /// content does not match its name is moved to `quarantine/`. With `repair`, files of
    /// remote and catalog models that are missing are fetched again.
    pub fn verify(
        &self,
        id: Option<&str>,
        repair: bool,
        progress: &dyn Progress,
    ) -> Result<VerifyReport> {
        let _store = lock::store(&self.layout, Access::Exclusive)?;
        let mut report = VerifyReport::default();
        let records: Vec<ModelRecord> = match id {
            Some(id) => vec![self.record(id)?],
            None => {
                let mut good = Vec::new();
                for r in self.records()? {
                    match r {
                        Ok(r) => good.push(r),
                        Err(e) => report.bad_records.push(e.to_string()),
                    }
                }
                good
            }
        };
        let digests: BTreeSet<String> = match id {
            Some(_) => records
                .iter()
                .flat_map(|r| r.files.values())
                .filter(|f| blobs::present(&self.layout, &f.sha256, f.size))
                .map(|f| f.sha256.clone())
                .collect(),
            None => self.layout.list_blobs()?.into_iter().collect(),
        };
        for digest in &digests {
            report.blobs_checked += 1;
            if !blobs::rehash(&self.layout, digest, progress)? {
                let from = self.layout.blob_path(digest);
                let to = self.layout.quarantine_dir().join(digest);
                std::fs::rename(&from, &to).at(&from)?;
                crate::layout::sync_dir(from.parent().unwrap_or(self.layout.root()))?;
                report.corrupt.push(digest.clone());
            }
        }
        for record in &records {
            let missing = record
                .files
                .values()
                .any(|f| !blobs::present(&self.layout, &f.sha256, f.size));
            if missing && record.state != RecordState::Evicted {
                let remote = !matches!(record.source, Source::Local { .. });
                if repair && remote {
                    for (path, f) in &record.files {
                        if !blobs::present(&self.layout, &f.sha256, f.size) && f.url.is_some() {
                            report.repaired.push(format!("{}: {path}", record.id));
                        }
                    }
                    self.fetch_missing(record, progress)?;
                } else {
                    report.needs.push(format!(
                        "{}: gpuport {}",
                        record.id,
                        Store::refetch_hint(record)
                    ));
                }
            }
            if record.state == RecordState::Complete {
                for (path, f) in &record.files {
                    if !blobs::present(&self.layout, &f.sha256, f.size) {
                        report.lost.push(format!("{}: {path}", record.id));
                    }
                }
            }
            report.models.push(self.status(record));
        }
        Ok(report)
    }
}
