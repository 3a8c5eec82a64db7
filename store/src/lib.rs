//! # gpuport-store
//!
//! A content-addressed model store that never serves a wrong byte. Files live once under
//! `blobs/sha256/ab/cdef…`, named by their SHA-256, shared by every model that uses them; a
//! small JSON record per model maps its bundle paths to blobs. Models come from a local folder
//! or `.gguf` ([`Store::import`], never the network), an HTTPS bundle URL ([`Store::pull`],
//! resumable) or a catalog name ([`Store::pull_catalog`]); [`Store::resolve`] hands a loader
//! the verified files. Every write is a temp file, fsync, rename, fsync of the folder, and
//! processes coordinate through file locks (see `README.md` for the layout, the crash argument
//! and the lock order).
//!
//! ```
//! use gpuport_store::{ImportOptions, NoProgress, Store};
//!
//! let dir = tempfile::tempdir()?;
//! let gguf = dir.path().join("tiny.Q8_0.gguf");
//! let mut model = gpuport_gguf::GgufWriter::new();
//! model
//!     .meta("general.architecture", gpuport_gguf::Value::String("llama".into()))
//!     .meta("general.name", gpuport_gguf::Value::String("Tiny".into()))
//!     .tensor("token_embd.weight", &[32, 4], 8, vec![0; 4 * 34]);
//! std::fs::write(&gguf, model.to_bytes())?;
//!
//! let store = Store::open(dir.path().join("store"))?;
//! let record = store.import(&gguf, &ImportOptions::default(), &NoProgress)?;
//! assert_eq!(record.id, "tiny"); // from `general.name`
//!
//! let model = store.resolve("tiny")?; // every file rehashed against its record
//! assert!(model.files.contains_key("gguf-q8_0/model.gguf"));
//! let gguf_size = std::fs::metadata(&gguf)?.len();
//! assert_eq!(store.list()?[0].bytes_total, gguf_size + record.files["modelport.json"].size);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod add;
mod blobs;
pub mod catalog;
mod error;
pub mod gguf;
pub mod http;
mod layout;
pub mod local;
mod lock;
mod maintain;
mod progress;
pub mod record;
mod store;

pub use add::ImportOptions;
pub use blobs::copy_hashing;
pub use catalog::Catalog;
pub use error::{Result, StoreError};
pub use gguf::GgufOptions;
pub use http::HttpOptions;
pub use maintain::{GcReport, VerifyReport};
pub use progress::{NoProgress, Progress};
pub use record::{ModelRecord, RecordState, Source};
pub use store::{
    ModelStatus, Presence, ResolvedModel, STORE_ENV, Store, StoreOptions, default_root,
};
