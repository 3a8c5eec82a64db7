//! What the scheduler drives: an [`Engine`] that runs a batch of sequences, and the
//! [`EngineLoader`] that brings one up for a model.

use std::fmt;

/// The scheduler's name for one request, unique within a [`Scheduler`](crate::Scheduler)
/// (or a [`Core`](crate::core::Core)) for its whole life. Ids grow in submission order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct JobId(pub u64);

impl JobId {
    /// The number behind the id.
    pub fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "job-{}", self.0)
    }
}

/// One loaded copy of a model that runs many sequences at once (a batch of
/// [`slots`](Engine::slots) sequences), stepped by the scheduler.
///
/// The scheduler calls an engine from one thread only (the engine's worker), so an engine
/// needs `Send` but not `Sync`. Every call happens at a *step boundary*: first the evictions,
/// then the admissions, then one [`step`](Engine::step).
pub trait Engine: Send + 'static {
    /// What to generate: the prompt, the sampling, the token budget, the stops.
    type Job: Send + 'static;
    /// A streamed piece of a job's output (a text delta, token ids).
    type Chunk: Send + 'static;
    /// A job's final result (text, usage); also the partial result of a job that was evicted.
    type Output: Send + 'static;

    /// How many sequences this engine runs at once. Read once, when the engine is ready; it
    /// must be at least 1 and must not change.
    fn slots(&self) -> usize;

    /// Takes `job` into the running batch: its prompt runs in the next [`step`](Engine::step).
    ///
    /// The job is given by value and handed back on refusal:
    /// - `Err((job, Refusal::Busy))`: the engine cannot back it now (its KV pool has no room
    ///   for it while the running jobs hold their pages). The request waits in its queue and
    ///   is offered again at a later boundary. An engine that runs nothing must not answer
    ///   `Busy`: the scheduler takes that as "never fits" and resolves the request with
    ///   `BAD_REQUEST`.
    /// - `Err((job, Refusal::Invalid { .. }))`: the job can never run here; the request
    ///   resolves with `BAD_REQUEST` carrying the refusal's field and reason.
    ///
    /// The scheduler never admits more than [`slots`](Engine::slots) jobs at once and never
    /// admits an id twice.
    fn admit(&mut self, id: JobId, job: Self::Job) -> Result<(), (Self::Job, Refusal)>;

    /// One step boundary's work: up to `decode_steps` decode steps over every admitted job,
    /// the prompts of newly admitted ones running beside them. Reports the chunks produced
    /// and the jobs that finished (a finished job has left the engine). Only called while at
    /// least one job is admitted.
    ///
    /// `Err` means the engine is broken: every job on it resolves with `GENERATION_FAILED`
    /// (except those already being stopped, which keep their stop reason) and the engine is
    /// dropped; the pool may load a replacement by its normal growth rule. A panic inside any
    /// engine call is treated the same way.
    #[allow(clippy::type_complexity)] // the brief's shape: progress of chunks and outputs
    fn step(
        &mut self,
        decode_steps: u32,
    ) -> Result<Vec<Progress<Self::Chunk, Self::Output>>, EngineFailure>;

    /// Removes an unfinished job (cancelled, preempted, superseded, shut down), freeing its
    /// pages, and returns its partial output. Only called for an admitted job that has not
    /// been reported finished.
    fn evict(&mut self, id: JobId) -> Self::Output;

    /// KV pages (in use, total), for engines with a paged pool: read after every step
    /// boundary into [`Status`](crate::Status) (the server's metrics). `None` by default.
    fn kv_pages(&self) -> Option<(usize, usize)> {
        None
    }
}

/// What one [`Engine::step`] reports about one job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress<C, O> {
    /// A streamed piece of the job's output.
    Chunk(JobId, C),
    /// The job is done and has left the engine; this is its final output.
    Finished(JobId, O),
}

/// Why [`Engine::admit`] did not take a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// No room now (KV pages); the job can run once running jobs free theirs.
    Busy,
    /// The job can never run on this engine (a prompt longer than the context, a bad
    /// sampling parameter): the request resolves with `BAD_REQUEST`.
    Invalid {
        /// The request field at fault, where there is one.
        field: Option<String>,
        /// What is wrong, for a person.
        reason: String,
    },
}

/// [`Engine::step`] failed: the engine is no longer usable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct EngineFailure {
    /// What went wrong, for a person.
    pub reason: String,
}

impl EngineFailure {
    /// A failure with this reason.
    pub fn new(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
        }
    }
}

/// [`EngineLoader::load`] could not bring up an engine.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoadFailure {
    /// The loader knows no model by this name (`UNKNOWN_MODEL`).
    #[error("unknown model")]
    UnknownModel,
    /// The model is known but could not be loaded, for instance for lack of memory
    /// (`LOAD_FAILED`). For a second copy of a model this is the memory check: the pool stops
    /// growing for that model.
    #[error("{0}")]
    Failed(String),
}

/// Brings up engines. Shared by every thread of a [`Scheduler`](crate::Scheduler): the first
/// engine of a model is loaded on the thread that calls [`load`](crate::Scheduler::load),
/// later copies on a background thread each.
pub trait EngineLoader: Send + Sync + 'static {
    /// The engine it builds.
    type Engine: Engine;
    /// Loads one engine (one copy of the model's weights and its KV pool) for `model`.
    fn load(&self, model: &str) -> Result<Self::Engine, LoadFailure>;
}
