//! ModelPort 0.1: `modelport.json`, its typed form and every rule of the spec.
//!
//! [`parse_manifest`] reads JSON text, [`read_manifest`] an already parsed value. Both return
//! every problem at once, each located by JSON pointer.

mod parse;
mod rules;
mod select;
mod types;

pub use parse::is_valid_id;
pub use select::{RuntimeSupport, Selection, Skip, SkipReason, select_variant};
pub use types::*;

use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::problem::{Pointer, ProblemKind, Problems};
use crate::read::{Reader, UnknownFields};

/// The file name of a ModelPort manifest at a bundle's root.
pub const MANIFEST_FILE_NAME: &str = "modelport.json";

/// A valid document plus what a lenient read skipped.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed<T> {
    /// The typed document.
    pub document: T,
    /// Unknown fields ignored because the document declares a newer minor version.
    pub ignored_fields: Vec<Pointer>,
}

/// Parses and validates `modelport.json` text.
pub fn parse_manifest(text: &str) -> Result<Parsed<Manifest>, Problems> {
    read_manifest(&crate::json::parse_strict(text)?)
}

/// Validates an already parsed JSON value as a ModelPort manifest.
///
/// Refuses a newer major version; for a newer minor version unknown fields are ignored (and
/// listed in [`Parsed::ignored_fields`]); for 0.1 itself an unknown field is an error.
pub fn read_manifest(value: &Value) -> Result<Parsed<Manifest>, Problems> {
    // The version decides how unknown fields are treated, so it is read first.
    let mut probe = Reader::new(UnknownFields::Reject);
    let root = Pointer::root();
    let schema = match value.get("schema") {
        Some(v) => parse::read_schema(&mut probe, v, &root.key("schema")),
        None => None,
    };
    let lenient = schema.is_some_and(|s| s.minor > SchemaVersion::CURRENT.minor);
    let mut r = Reader::new(if lenient {
        UnknownFields::Ignore
    } else {
        UnknownFields::Reject
    });
    let Some(obj) = r.object(value, &root, &parse::TOP_LEVEL_FIELDS) else {
        return Err(r.problems);
    };
    if obj.map.contains_key("schema") {
        r.problems.extend(probe.problems);
    } else {
        let msg = format!(
            "missing required field `schema` (expected `{}`)",
            SchemaVersion::CURRENT
        );
        r.problem(&root.key("schema"), ProblemKind::Missing, msg);
    }
    let mut draft = parse::read_draft(&mut r, &obj);
    draft.schema = schema;
    rules::check(&draft, &mut r.problems);
    let Some(manifest) = finish(draft) else {
        return Err(r.problems);
    };
    rules::check_file_agreement(&manifest, &mut r.problems);
    r.problems.into_result(Parsed {
        document: manifest,
        ignored_fields: r.ignored,
    })
}

fn all<T>(list: Option<Vec<Option<T>>>) -> Option<Vec<T>> {
    list?.into_iter().collect()
}

fn finish(d: parse::Draft) -> Option<Manifest> {
    Some(Manifest {
        schema: d.schema?,
        id: d.id?,
        version: d.version?,
        task: d.task?,
        license: d.license?,
        name: d.name?,
        description: d.description?,
        source: d.source?,
        variants: all(d.variants)?,
        inputs: all(d.inputs)?,
        outputs: all(d.outputs)?,
        llm: d.llm?,
        golden: d.golden?,
    })
}

/// Deserializing a [`Manifest`] runs the full validation; the error lists every problem.
impl<'de> Deserialize<'de> for Manifest {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        read_manifest(&value)
            .map(|p| p.document)
            .map_err(serde::de::Error::custom)
    }
}
