//! The shared test harness (`testing/`): the GPU requirement, deterministic data, the peers'
//! references.

#![allow(dead_code, unused_imports, clippy::unwrap_used)]

#[path = "../../../testing/gpu.rs"]
mod gpu;
#[path = "../../../testing/references.rs"]
mod references;
pub use gpu::*;
pub use references::*;
