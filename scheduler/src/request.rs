//! What a caller submits: a [`Request`] with its scheduling fields, and the [`Target`] of a
//! cancel.

use std::fmt;

use crate::engine::JobId;

/// A request's priority band. A free slot goes to the oldest request of the highest band;
/// bands are strict (a `Normal` request never starts while an `Interactive` one that the
/// same engine could take waits), FIFO within a band.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Priority {
    /// Someone is waiting on it right now (ghost text, a chat turn). The only band that may
    /// preempt.
    Interactive,
    /// The default.
    #[default]
    Normal,
    /// Work nobody watches (indexing, a page translation in the background).
    Background,
}

impl Priority {
    /// Every band, highest first.
    pub const ALL: [Priority; 3] = [
        Priority::Interactive,
        Priority::Normal,
        Priority::Background,
    ];

    /// 2 for `Interactive`, 1 for `Normal`, 0 for `Background`: higher runs first.
    pub fn rank(self) -> u8 {
        match self {
            Priority::Interactive => 2,
            Priority::Normal => 1,
            Priority::Background => 0,
        }
    }

    /// The band's lowercase name, as on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Priority::Interactive => "interactive",
            Priority::Normal => "normal",
            Priority::Background => "background",
        }
    }
}

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One value per [`Priority`] band.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct PerBand<T> {
    /// The `Interactive` band's value.
    pub interactive: T,
    /// The `Normal` band's value.
    pub normal: T,
    /// The `Background` band's value.
    pub background: T,
}

impl<T> PerBand<T> {
    /// The same value for every band.
    pub fn splat(value: T) -> Self
    where
        T: Clone,
    {
        Self {
            interactive: value.clone(),
            normal: value.clone(),
            background: value,
        }
    }

    /// The value of `band`.
    pub fn get(&self, band: Priority) -> &T {
        match band {
            Priority::Interactive => &self.interactive,
            Priority::Normal => &self.normal,
            Priority::Background => &self.background,
        }
    }

    /// The value of `band`, to change.
    pub fn get_mut(&mut self, band: Priority) -> &mut T {
        match band {
            Priority::Interactive => &mut self.interactive,
            Priority::Normal => &mut self.normal,
            Priority::Background => &mut self.background,
        }
    }
}

/// One generation request: the engine-defined `job` plus the scheduling fields.
///
/// ```
/// use gpuport_scheduler::{Priority, Request};
/// let req = Request::new("complete this")
///     .priority(Priority::Interactive)
///     .session("ghost-text")
///     .preemptible(true);
/// assert_eq!(req.session.as_deref(), Some("ghost-text"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request<J> {
    /// What to generate; handed to [`Engine::admit`](crate::Engine::admit) unchanged.
    pub job: J,
    /// The band (default `Normal`).
    pub priority: Priority,
    /// A session key: a new request with the same key supersedes (cancels) this one, queued
    /// or running.
    pub session: Option<String>,
    /// The task it belongs to. Requests with the same label (on the same model) are one task;
    /// an unlabelled request is a task of its own; a whole [`batch`](crate::Scheduler::batch)
    /// is one task.
    pub task: Option<String>,
    /// Whether an `Interactive` request that finds no free slot may take this one's slot.
    /// A job that did not opt in always runs to completion (unless cancelled or superseded).
    pub preemptible: bool,
    /// The model to run on; `None` is the first model loaded.
    pub model: Option<String>,
}

impl<J> Request<J> {
    /// A `Normal` request with no session, no task label, not preemptible, on the first model.
    pub fn new(job: J) -> Self {
        Self {
            job,
            priority: Priority::Normal,
            session: None,
            task: None,
            preemptible: false,
            model: None,
        }
    }

    /// Sets the band.
    pub fn priority(mut self, priority: Priority) -> Self {
        self.priority = priority;
        self
    }

    /// Sets the session key.
    pub fn session(mut self, session: impl Into<String>) -> Self {
        self.session = Some(session.into());
        self
    }

    /// Sets the task label.
    pub fn task(mut self, task: impl Into<String>) -> Self {
        self.task = Some(task.into());
        self
    }

    /// Opts in (or out) of preemption.
    pub fn preemptible(mut self, preemptible: bool) -> Self {
        self.preemptible = preemptible;
        self
    }

    /// Names the model.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }
}

/// What a [`cancel`](crate::Scheduler::cancel) stops.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Target {
    /// One request, by id.
    Id(JobId),
    /// The live request of a session (there is at most one: a new one supersedes the old).
    Session(String),
    /// Every live request of a task label (on every model); a batch's task is
    /// [`BatchHandle::task`](crate::BatchHandle::task).
    Task(String),
}
