//! Model records: `models/<id>.json`, one per model — where it came from, which blob holds
//! each of its files, and whether it is meant to be present.

use std::collections::BTreeMap;
use std::path::Path;

use gpuport_manifest_core::fileref::{check_https_url, check_relative_path, is_sha256_hex};
use gpuport_manifest_core::modelport::is_valid_id;
use serde::{Deserialize, Serialize};

use crate::error::{Result, StoreError};

/// The value of a record's `record` field (its format and version).
pub const RECORD_FORMAT: &str = "gpuport-store-record/1";

/// Longest model id accepted (it becomes a file name).
pub const MAX_ID_LEN: usize = 128;

/// Checks a model id: ModelPort's id rule (`^[a-z0-9][a-z0-9._-]*$`), at most
/// [`MAX_ID_LEN`] bytes.
pub fn check_id(id: &str) -> Result<()> {
    if is_valid_id(id) && id.len() <= MAX_ID_LEN {
        Ok(())
    } else {
        Err(StoreError::InvalidId(id.to_owned()))
    }
}

/// Where a model came from (what `verify --repair` or a re-pull goes back to).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Source {
    /// A local folder or `.gguf` file (absolute path at import time).
    Local {
        /// The imported path.
        path: String,
    },
    /// A bundle pulled from an `https://` manifest URL.
    Remote {
        /// The manifest URL.
        url: String,
    },
    /// A catalog entry.
    Catalog {
        /// The entry's name.
        name: String,
    },
}

impl Source {
    /// A short human form: `local:/path`, `https://…`, `catalog:name`.
    pub fn describe(&self) -> String {
        match self {
            Source::Local { path } => format!("local:{path}"),
            Source::Remote { url } => url.clone(),
            Source::Catalog { name } => format!("catalog:{name}"),
        }
    }
}

/// Which manifest format the model's manifest file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// A ModelPort bundle (`modelport.json`; a bare GGUF is wrapped in one).
    Modelport,
    /// An MLC model package (`mlc-model-manifest.json`).
    Mlc,
}

/// What the record says about its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordState {
    /// Files are being (or were, before an interruption) added; some may be missing.
    Partial,
    /// Every file was stored when the record was written.
    Complete,
    /// Bytes were freed on purpose (`evict`); the record stays so the model can come back.
    Evicted,
}

/// One file of a model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordFile {
    /// Lowercase hex SHA-256: the blob's name.
    pub sha256: String,
    /// Size in bytes.
    pub size: u64,
    /// Where a remote file is fetched from (absent for local files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

impl RecordFile {
    /// A file with no URL (imported, or stored from bytes at hand).
    pub fn local(sha256: String, size: u64) -> RecordFile {
        RecordFile {
            sha256,
            size,
            url: None,
        }
    }
}

/// A model record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelRecord {
    /// Always [`RECORD_FORMAT`].
    pub record: String,
    /// The model id (also the file name).
    pub id: String,
    /// Where it came from.
    pub source: Source,
    /// Manifest format.
    pub format: Format,
    /// Path (a key of `files`) of the manifest.
    pub manifest: String,
    /// SHA-256 of the manifest file.
    pub manifest_sha256: String,
    /// Bundle-relative path → blob.
    pub files: BTreeMap<String, RecordFile>,
    /// What the record says about its bytes.
    pub state: RecordState,
}

impl ModelRecord {
    /// Parses and checks a record; `path` names the file in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Self> {
        let bad = |reason: String| StoreError::BadDocument {
            path: path.to_path_buf(),
            reason,
        };
        let record: ModelRecord = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
        record.check().map_err(bad)?;
        Ok(record)
    }

    /// Checks every field; the message names the field.
    pub fn check(&self) -> std::result::Result<(), String> {
        if self.record != RECORD_FORMAT {
            return Err(format!("record: must be `{RECORD_FORMAT}`"));
        }
        check_id(&self.id).map_err(|e| format!("id: {e}"))?;
        match &self.source {
            Source::Local { path } if path.is_empty() => {
                return Err("source.path: must not be empty".into());
            }
            Source::Remote { url } => {
                check_https_url(url).map_err(|e| format!("source.url: {e}"))?;
            }
            Source::Catalog { name } if name.is_empty() => {
                return Err("source.name: must not be empty".into());
            }
            _ => {}
        }
        for (path, file) in &self.files {
            check_relative_path(path).map_err(|e| format!("files.{path}: {e}"))?;
            if !is_sha256_hex(&file.sha256) {
                return Err(format!(
                    "files.{path}.sha256: must be 64 lowercase hex digits"
                ));
            }
            if let Some(url) = &file.url {
                check_https_url(url).map_err(|e| format!("files.{path}.url: {e}"))?;
            }
        }
        let mut total: u64 = 0;
        for (path, file) in &self.files {
            total = total.checked_add(file.size).ok_or_else(|| {
                format!("files.{path}.size: the file sizes add up to more than 2^64 - 1 bytes")
            })?;
        }
        match self.files.get(&self.manifest) {
            None => Err(format!("manifest: `{}` is not in files", self.manifest)),
            Some(f) if f.sha256 != self.manifest_sha256 => {
                Err("manifest_sha256: differs from the manifest file's sha256".into())
            }
            Some(_) => Ok(()),
        }
    }

    /// The record as pretty JSON (what is written to disk).
    pub fn to_json(&self) -> String {
        // Serializing plain strings, integers and maps cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default() + "\n"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn digest() -> impl Strategy<Value = String> {
        "[0-9a-f]{64}"
    }

    fn record() -> impl Strategy<Value = ModelRecord> {
        let file = (
            digest(),
            0..u64::MAX / 8,
            proptest::option::of("[a-z]{1,8}"),
        )
            .prop_map(|(sha256, size, host)| RecordFile {
                sha256,
                size,
                url: host.map(|h| format!("https://{h}.test/f")),
            });
        let source = prop_oneof![
            "/[a-z/]{1,20}".prop_map(|path| Source::Local { path }),
            "[a-z]{1,10}".prop_map(|h| Source::Remote {
                url: format!("https://{h}.test/modelport.json")
            }),
            "[a-z0-9-]{1,10}".prop_map(|name| Source::Catalog { name }),
        ];
        let state = prop_oneof![
            Just(RecordState::Partial),
            Just(RecordState::Complete),
            Just(RecordState::Evicted)
        ];
        (
            "[a-z0-9][a-z0-9._-]{0,20}",
            source,
            proptest::collection::btree_map("[a-z]{1,6}(/[a-z0-9_]{1,6}){0,2}", file, 1..5),
            state,
            any::<bool>(),
        )
            .prop_map(|(id, source, files, state, mlc)| {
                let (manifest, first) = files
                    .iter()
                    .next()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .unwrap();
                ModelRecord {
                    record: RECORD_FORMAT.into(),
                    id,
                    source,
                    format: if mlc { Format::Mlc } else { Format::Modelport },
                    manifest,
                    manifest_sha256: first.sha256,
                    files,
                    state,
                }
            })
    }

    proptest! {
        #[test]
        fn a_written_record_reads_back_equal(r in record()) {
            let back = ModelRecord::parse(&r.to_json(), Path::new("r.json")).unwrap();
            prop_assert_eq!(back, r);
        }

        #[test]
        fn arbitrary_text_never_panics(text in ".{0,400}") {
            let _ = ModelRecord::parse(&text, Path::new("r.json"));
        }

        #[test]
        fn an_escaping_or_malformed_file_entry_is_refused(
            r in record(),
            bad_path in prop_oneof![Just("../x"), Just("/etc/passwd"), Just("a//b"), Just("a\\b"), Just("./a")],
        ) {
            let mut r = r;
            let f = r.files.values().next().cloned().unwrap();
            r.files.insert(bad_path.to_string(), f);
            let err = ModelRecord::parse(&r.to_json(), Path::new("r.json")).unwrap_err();
            prop_assert!(err.to_string().contains(&format!("files.{bad_path}")), "{}", err);
        }

        #[test]
        fn a_bad_digest_is_refused(r in record(), bad in "[0-9A-F]{64}|[0-9a-f]{63}") {
            let mut r = r;
            let key = r.files.keys().next().cloned().unwrap();
            r.files.get_mut(&key).unwrap().sha256 = bad;
            let err = ModelRecord::parse(&r.to_json(), Path::new("r.json")).unwrap_err();
            prop_assert!(err.to_string().contains(".sha256"), "{}", err);
        }
    }

    #[test]
    fn unknown_fields_and_http_urls_are_refused() {
        let ok = ModelRecord {
            record: RECORD_FORMAT.into(),
            id: "m".into(),
            source: Source::Remote {
                url: "https://h.test/modelport.json".into(),
            },
            format: Format::Modelport,
            manifest: "modelport.json".into(),
            manifest_sha256: "a".repeat(64),
            files: [(
                "modelport.json".to_string(),
                RecordFile {
                    sha256: "a".repeat(64),
                    size: 3,
                    url: None,
                },
            )]
            .into(),
            state: RecordState::Complete,
        };
        let p = Path::new("r.json");
        assert_eq!(ModelRecord::parse(&ok.to_json(), p).unwrap(), ok);
        let extra = ok.to_json().replacen('{', "{\"extra\": 1,", 1);
        assert!(
            ModelRecord::parse(&extra, p)
                .unwrap_err()
                .to_string()
                .contains("extra")
        );
        let http = ok.to_json().replace("https://", "http://");
        assert!(
            ModelRecord::parse(&http, p)
                .unwrap_err()
                .to_string()
                .contains("source.url")
        );
        let mut huge = ok.clone();
        huge.files.get_mut("modelport.json").unwrap().size = u64::MAX;
        huge.files.insert(
            "w.bin".into(),
            RecordFile {
                sha256: "b".repeat(64),
                size: 1,
                url: None,
            },
        );
        let err = ModelRecord::parse(&huge.to_json(), p).unwrap_err();
        assert!(err.to_string().contains("files.w.bin.size"), "{err}");
        let mut bad_id = ok.clone();
        bad_id.id = "Bad Id".into();
        assert!(
            ModelRecord::parse(&bad_id.to_json(), p)
                .unwrap_err()
                .to_string()
                .contains("id")
        );
    }
}
