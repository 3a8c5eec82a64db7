//! The scheduler's one error type, with stable codes.

use crate::request::Priority;

/// Why a request (or a `load`, or a `configure`) failed. Each variant's fields are the
/// structured detail, so no caller parses the message; [`code`](SchedError::code) is the
/// stable code the HTTP server puts beside the message.
///
/// Serialized (serde) as `{"code": "QUEUE_FULL", ...fields}`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize)]
#[serde(tag = "code", rename_all = "SCREAMING_SNAKE_CASE")]
pub enum SchedError {
    /// `NO_MODEL`: nothing is loaded (`model` is `None`), or the named model is not loaded
    /// (or has lost every engine and may not grow again).
    #[error("{}", match model { Some(m) => format!("model {m:?} is not loaded"), None => "no model is loaded".to_owned() })]
    NoModel {
        /// The model asked for; `None` when the request named none.
        model: Option<String>,
    },
    /// `UNKNOWN_MODEL`: the loader knows no model by this name.
    #[error("unknown model {model:?}")]
    UnknownModel {
        /// The name asked for.
        model: String,
    },
    /// `BAD_REQUEST`: the request can never run (refused by the engine, or malformed).
    #[error("bad request{}: {reason}", field.as_ref().map(|f| format!(" ({f})")).unwrap_or_default())]
    BadRequest {
        /// The field at fault, where there is one.
        field: Option<String>,
        /// What is wrong.
        reason: String,
    },
    /// `GENERATION_FAILED`: the engine running the request failed.
    #[error("generation failed on {model} engine {engine}: {reason}")]
    GenerationFailed {
        /// The model of the engine.
        model: String,
        /// The engine's index within its model.
        engine: usize,
        /// The engine's failure.
        reason: String,
    },
    /// `QUEUE_FULL`: the band's queue is at its configured cap (the server answers 429).
    #[error("the {band} queue is full ({depth} waiting, cap {cap})")]
    QueueFull {
        /// The band.
        band: Priority,
        /// How many requests wait in it (over every model).
        depth: usize,
        /// Its cap.
        cap: usize,
    },
    /// `LOAD_FAILED`: the model is known but its engine could not be loaded.
    #[error("loading {model:?} failed: {reason}")]
    LoadFailed {
        /// The model.
        model: String,
        /// The loader's reason.
        reason: String,
    },
    /// `SHUT_DOWN`: the scheduler was dropped before the request finished.
    #[error("the scheduler shut down")]
    ShutDown,
    /// `INTERNAL`: the scheduler could not start a thread.
    #[error("internal error: {reason}")]
    Internal {
        /// What failed.
        reason: String,
    },
}

impl SchedError {
    /// The stable code: `NO_MODEL`, `UNKNOWN_MODEL`, `BAD_REQUEST`, `GENERATION_FAILED`,
    /// `QUEUE_FULL`, `LOAD_FAILED`, `SHUT_DOWN` or `INTERNAL`.
    pub fn code(&self) -> &'static str {
        match self {
            SchedError::NoModel { .. } => "NO_MODEL",
            SchedError::UnknownModel { .. } => "UNKNOWN_MODEL",
            SchedError::BadRequest { .. } => "BAD_REQUEST",
            SchedError::GenerationFailed { .. } => "GENERATION_FAILED",
            SchedError::QueueFull { .. } => "QUEUE_FULL",
            SchedError::LoadFailed { .. } => "LOAD_FAILED",
            SchedError::ShutDown => "SHUT_DOWN",
            SchedError::Internal { .. } => "INTERNAL",
        }
    }

    /// A `BAD_REQUEST` about `field`.
    pub fn bad_request(field: Option<&str>, reason: impl Into<String>) -> Self {
        SchedError::BadRequest {
            field: field.map(str::to_owned),
            reason: reason.into(),
        }
    }
}
