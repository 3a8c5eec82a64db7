#![doc = include_str!("../README.md")]
// Test tooling: a failed unwrap is a failed test, which is what it should be.
#![allow(clippy::unwrap_used)]

#[cfg(feature = "gpu")]
pub mod gpu;
#[cfg(feature = "store")]
pub mod https_server;
#[cfg(feature = "onnx")]
pub mod onnx_node;
pub mod references;
pub mod rng;
#[cfg(feature = "store")]
pub mod store_fixtures;
#[cfg(feature = "llm")]
pub mod tiny_llm;

#[cfg(feature = "gpu")]
pub use gpu::{Needs, gpu, gpu_with, has_coop_f16, has_subgroups, readback_words};
pub use references::{
    available, model, modelport_available, python_modules_available, python_tool, repo_root,
};
pub use rng::{Rng, bytes, random_f32};
