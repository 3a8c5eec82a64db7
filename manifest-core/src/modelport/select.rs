//! Variant selection, exactly as the spec words it: the first variant whose runtime has a
//! registered adapter, that the platform supports, and whose `min_ram_mb` fits the device.

use serde::Serialize;

use super::types::{Runtime, Variant};

/// A runtime adapter the host has registered, and the backends it can run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeSupport {
    /// The runtime this adapter runs.
    pub runtime: Runtime,
    /// Backends the platform supports for it; `None` means any backend (and variants that name
    /// none).
    pub backends: Option<Vec<String>>,
}

impl RuntimeSupport {
    /// An adapter for `runtime` that runs any backend.
    pub fn any_backend(runtime: Runtime) -> Self {
        Self {
            runtime,
            backends: None,
        }
    }
}

/// Why a variant was passed over.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum SkipReason {
    /// No adapter for its runtime is registered.
    NoAdapter {
        /// The variant's runtime.
        runtime: Runtime,
    },
    /// The adapter exists, but this platform does not support the variant's backend.
    BackendUnsupported {
        /// The variant's backend.
        backend: String,
    },
    /// The device has less RAM than `min_ram_mb`.
    NotEnoughRam {
        /// What the variant needs.
        min_ram_mb: u64,
        /// What the device has.
        device_ram_mb: u64,
    },
}

/// A variant that was not chosen, with the reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skip {
    /// Index in `variants`.
    pub index: usize,
    /// Variant id.
    pub id: String,
    /// Why.
    #[serde(flatten)]
    pub reason: SkipReason,
}

/// The outcome: the chosen variant (if any) and why each earlier one was skipped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Selection {
    /// Index of the chosen variant, `None` if no variant fits.
    pub chosen: Option<usize>,
    /// The variants passed over before the choice (all of them when none fits).
    pub skipped: Vec<Skip>,
}

/// Picks a variant. Pure: the host's registered runtimes and RAM are arguments.
///
/// `device_ram_mb = None` means the RAM is unknown, and `min_ram_mb` then rules nothing out.
pub fn select_variant(
    variants: &[Variant],
    registered: &[RuntimeSupport],
    device_ram_mb: Option<u64>,
) -> Selection {
    let mut skipped = Vec::new();
    for (index, v) in variants.iter().enumerate() {
        let reason = why_not(v, registered, device_ram_mb);
        match reason {
            None => {
                return Selection {
                    chosen: Some(index),
                    skipped,
                };
            }
            Some(reason) => skipped.push(Skip {
                index,
                id: v.id.clone(),
                reason,
            }),
        }
    }
    Selection {
        chosen: None,
        skipped,
    }
}

fn why_not(v: &Variant, registered: &[RuntimeSupport], ram: Option<u64>) -> Option<SkipReason> {
    let adapters: Vec<&RuntimeSupport> = registered
        .iter()
        .filter(|s| s.runtime == v.runtime)
        .collect();
    if adapters.is_empty() {
        return Some(SkipReason::NoAdapter { runtime: v.runtime });
    }
    let supported = adapters.iter().any(|s| match (&s.backends, &v.backend) {
        (None, _) => true,
        (Some(list), Some(b)) => list.contains(b),
        // An adapter with a backend list runs variants that name no backend with its default.
        (Some(_), None) => true,
    });
    if !supported {
        let backend = v.backend.clone().unwrap_or_default();
        return Some(SkipReason::BackendUnsupported { backend });
    }
    match (v.min_ram_mb, ram) {
        (Some(min_ram_mb), Some(device_ram_mb)) if device_ram_mb < min_ram_mb => {
            Some(SkipReason::NotEnoughRam {
                min_ram_mb,
                device_ram_mb,
            })
        }
        _ => None,
    }
}
