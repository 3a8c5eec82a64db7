//! How a request ends ([`End`], [`Outcome`]) and what subscribers hear ([`Event`]).

use std::sync::Arc;
use std::time::Instant;

use crate::engine::JobId;
use crate::error::SchedError;
use crate::request::Priority;

/// Why a request resolved. Every accepted request resolves exactly once, with one of these.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "reason", rename_all = "lowercase")]
pub enum End {
    /// It ran to completion; the output is the engine's final output.
    Finished,
    /// An `Interactive` request (`by`) took its slot; the output is the partial output.
    /// Never requeued.
    Preempted {
        /// The request that took the slot.
        by: JobId,
    },
    /// A newer request of the same session (`by`) replaced it; the output is the partial
    /// output (none if it was still queued).
    Superseded {
        /// The newer request.
        by: JobId,
    },
    /// A [`cancel`](crate::Scheduler::cancel) stopped it; the output is the partial output
    /// (none if it was still queued; the whole output if it finished in the step during
    /// which the cancel came).
    Cancelled,
    /// It failed; the output is `None`, except at shutdown, where a running request keeps
    /// its partial output.
    Failed(SchedError),
}

impl End {
    /// `"finished"`, `"preempted"`, `"superseded"`, `"cancelled"` or `"failed"`.
    pub fn as_str(&self) -> &'static str {
        match self {
            End::Finished => "finished",
            End::Preempted { .. } => "preempted",
            End::Superseded { .. } => "superseded",
            End::Cancelled => "cancelled",
            End::Failed(_) => "failed",
        }
    }
}

/// The final word on one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome<O> {
    /// The request.
    pub id: JobId,
    /// Its position in its [`batch`](crate::Scheduler::batch); `None` for a `complete`.
    pub index: Option<usize>,
    /// The model it was queued for.
    pub model: Arc<str>,
    /// The engine (index within the model) it ran on; `None` if it never started.
    pub engine: Option<usize>,
    /// When it was accepted.
    pub queued_at: Instant,
    /// When it was admitted into an engine's batch; `None` if it never was.
    pub started_at: Option<Instant>,
    /// When it resolved.
    pub finished_at: Instant,
    /// Why it ended.
    pub end: End,
    /// The engine's output: final for [`End::Finished`], partial for a request stopped while
    /// running, `None` if it never ran or its engine failed.
    pub output: Option<O>,
}

impl<O> Outcome<O> {
    /// Whether it ran to completion.
    pub fn is_finished(&self) -> bool {
        self.end == End::Finished
    }

    /// `Err` with the error of a failed request; otherwise `Ok` with the output: the final
    /// output of a finished request, the partial output (or `None`) of a stopped one.
    pub fn into_result(self) -> Result<Option<O>, SchedError> {
        match self.end {
            End::Failed(e) => Err(e),
            _ => Ok(self.output),
        }
    }
}

/// A change a [`subscribe`](crate::Scheduler::subscribe)r hears about, in the order the
/// scheduler made the changes. Every accepted request produces one `Queued`, at most one
/// `Started`, and exactly one of `Preempted`, `Superseded`, `Cancelled`, `Finished`,
/// `Failed`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// A request was accepted into its band's queue.
    Queued {
        /// The request.
        id: JobId,
        /// Its band.
        band: Priority,
        /// Its model.
        #[serde(serialize_with = "arc_str")]
        model: Arc<str>,
    },
    /// A request was admitted into an engine's batch.
    Started {
        /// The request.
        id: JobId,
        /// The model.
        #[serde(serialize_with = "arc_str")]
        model: Arc<str>,
        /// The engine's index within the model.
        engine: usize,
    },
    /// A request resolved as [`End::Preempted`].
    Preempted {
        /// The victim.
        id: JobId,
        /// The interactive request that took its slot.
        by: JobId,
    },
    /// A request resolved as [`End::Superseded`].
    Superseded {
        /// The replaced request.
        id: JobId,
        /// The newer request of the same session.
        by: JobId,
    },
    /// A request resolved as [`End::Cancelled`].
    Cancelled {
        /// The request.
        id: JobId,
    },
    /// A request resolved as [`End::Finished`].
    Finished {
        /// The request.
        id: JobId,
    },
    /// A request resolved as [`End::Failed`].
    Failed {
        /// The request.
        id: JobId,
        /// The error's [`code`](SchedError::code).
        code: &'static str,
    },
    /// An engine started loading (the first of a model, or a background copy).
    EngineLoading {
        /// The model.
        #[serde(serialize_with = "arc_str")]
        model: Arc<str>,
        /// The engine's index within the model.
        engine: usize,
    },
    /// An engine is ready and takes requests.
    EngineReady {
        /// The model.
        #[serde(serialize_with = "arc_str")]
        model: Arc<str>,
        /// The engine's index within the model.
        engine: usize,
        /// Its slots.
        slots: usize,
    },
    /// An engine failed to load (growth stops for the model) or failed while running (it is
    /// dropped).
    EngineFailed {
        /// The model.
        #[serde(serialize_with = "arc_str")]
        model: Arc<str>,
        /// The engine's index within the model.
        engine: usize,
        /// What happened.
        reason: String,
    },
}

impl Event {
    /// The event for a request resolving with `end`.
    pub(crate) fn terminal(id: JobId, end: &End) -> Self {
        match end {
            End::Finished => Event::Finished { id },
            End::Preempted { by } => Event::Preempted { id, by: *by },
            End::Superseded { by } => Event::Superseded { id, by: *by },
            End::Cancelled => Event::Cancelled { id },
            End::Failed(e) => Event::Failed { id, code: e.code() },
        }
    }
}

fn arc_str<S: serde::Serializer>(v: &Arc<str>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(v)
}
