//! # gpuport-manifest-core
//!
//! The exact reader of the two manifest formats gpuport runs:
//!
//! - **ModelPort 0.1** (`modelport.json`): [`modelport::parse_manifest`] gives a typed
//!   [`modelport::Manifest`] with every default filled in, or *every* problem at once, each with
//!   the JSON pointer of the field (`/variants/1/file/sha256: must be 64 lowercase hex digits`).
//!   [`modelport::select_variant`] picks a variant as the spec says; [`bundle::check_files`]
//!   proves a bundle's files exist inside it with the declared size and SHA-256.
//! - **MLC model package v1** (`mlc-model-manifest.json`) and the **compiled-program** contract:
//!   [`mlc::parse_package`], [`mlc::parse_program`], [`mlc::match_package_program`], and the
//!   canonical ids in [`hash`] (`docs/spec/hashes.md`).
//!
//! ```
//! use gpuport_manifest_core::modelport::parse_manifest;
//!
//! let text = r#"{"schema": "modelport/0.1", "id": "Bad Id", "version": "1.0",
//!   "task": "text-generation", "license": "Apache-2.0", "variants": []}"#;
//! let problems = parse_manifest(text).unwrap_err();
//! let pointers: Vec<&str> = problems.iter().map(|p| p.pointer.as_str()).collect();
//! assert_eq!(pointers, ["/id", "/version", "/variants", "/llm"]);
//! ```

pub mod bundle;
pub mod digest;
pub mod document;
pub mod fileref;
pub mod hash;
pub mod json;
pub mod mlc;
pub mod modelport;
pub mod problem;
mod read;

pub use problem::{Pointer, Problem, ProblemKind, Problems};
pub use read::Choice;
