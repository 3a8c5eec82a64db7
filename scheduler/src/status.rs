//! A snapshot of the scheduler: queue depths, engines, counters (what `/metrics` reads).

use crate::request::PerBand;

/// The state of one engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineState {
    /// Being loaded.
    Loading,
    /// Takes requests.
    Ready,
    /// Failed to load, or failed while running and was dropped.
    Failed,
}

/// One engine in a [`ModelStatus`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct EngineStatus {
    /// Its index within the model (engines are numbered in the order they were loaded).
    pub index: usize,
    /// Its state.
    pub state: EngineState,
    /// Its slots (0 until it is ready).
    pub slots: usize,
    /// The requests in its batch (including those being admitted or evicted).
    pub running: usize,
    /// KV pages (in use, total) after its last step boundary, when the engine reports them.
    pub kv_pages: Option<(usize, usize)>,
}

/// One model's pool.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ModelStatus {
    /// The model's name.
    pub name: String,
    /// The engine cap.
    pub cap: usize,
    /// A load failed: the pool will not grow again for this model.
    pub growth_blocked: bool,
    /// Requests waiting, per band.
    pub queued: PerBand<usize>,
    /// Every engine ever loaded or tried, in load order.
    pub engines: Vec<EngineStatus>,
}

impl ModelStatus {
    /// How many of its engines are in `state`.
    pub fn count(&self, state: EngineState) -> usize {
        self.engines.iter().filter(|e| e.state == state).count()
    }
}

/// Totals since the scheduler started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Counters {
    /// Requests accepted.
    pub submitted: u64,
    /// Submissions refused with `QUEUE_FULL`.
    pub rejected: u64,
    /// Requests that ran to completion.
    pub finished: u64,
    /// Requests preempted.
    pub preemptions: u64,
    /// Requests superseded.
    pub supersessions: u64,
    /// Requests stopped by `cancel`.
    pub cancellations: u64,
    /// Requests that failed (`BAD_REQUEST`, `GENERATION_FAILED`, `NO_MODEL`, `SHUT_DOWN`).
    pub failures: u64,
    /// Admissions an engine refused for lack of KV room (the request waited).
    pub busy_refusals: u64,
}

/// A snapshot of the whole scheduler.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Status {
    /// Requests waiting, per band, over every model.
    pub queued: PerBand<usize>,
    /// Each loaded model's pool, in load order.
    pub models: Vec<ModelStatus>,
    /// Totals.
    pub counters: Counters,
    /// The decode steps per step call now.
    pub decode_steps: u32,
}

impl Status {
    /// The named model's pool.
    pub fn model(&self, name: &str) -> Option<&ModelStatus> {
        self.models.iter().find(|m| m.name == name)
    }

    /// Requests running over every engine.
    pub fn running(&self) -> usize {
        self.models
            .iter()
            .flat_map(|m| &m.engines)
            .map(|e| e.running)
            .sum()
    }
}
