//! The scheduler's rules as a pure, deterministic state machine.
//!
//! [`Core`] holds the queues (one per band and model), every engine's batch, which task owns
//! which engine, the session index and the counters. It never blocks, spawns or calls an
//! engine: it is driven by explicit calls, each given the time (`now`), and it answers with
//! what to do — a [`Plan`] for an engine's step boundary, [`LoadOrder`]s for the pool to
//! grow, [`Resolved`] requests to hand their outcome to. The threaded
//! [`Scheduler`](crate::Scheduler) is this core behind one mutex; the tests drive it directly
//! with fake engines and virtual time.
//!
//! The payload `P` is whatever the driver keeps with a queued request (the threaded driver:
//! the engine job and its callbacks). The core hands it out in a plan's admissions and takes
//! it back when an engine answers `Busy`.
//!
//! A step boundary of an engine is one [`plan_boundary`](Core::plan_boundary) →
//! (evictions, admissions, one `Engine::step`, outside the core) →
//! [`boundary_done`](Core::boundary_done) round. The two calls of one engine alternate;
//! the other engines' boundaries and every other call may come between them.

mod check;
mod plan;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;
use std::time::Instant;

use crate::config::Config;
use crate::engine::{JobId, LoadFailure};
use crate::error::SchedError;
use crate::outcome::{End, Event, Outcome};
use crate::request::{PerBand, Priority, Target};
use crate::status::{Counters, EngineState, EngineStatus, ModelStatus, Status};

/// An engine: the model's index in the core (stable for the core's life) and the engine's
/// index within the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EngineKey {
    /// The model, in load order (a model that lost every engine and was loaded again gets a
    /// new index).
    pub model: usize,
    /// The engine within the model, in load order.
    pub engine: usize,
}

/// A request as the core takes it: the scheduling fields and the driver's payload.
#[derive(Debug, Clone)]
pub struct Submission<P> {
    /// What the driver keeps with the request while it waits.
    pub payload: P,
    /// The band.
    pub priority: Priority,
    /// The session key.
    pub session: Option<String>,
    /// The task label.
    pub task: Option<String>,
    /// Whether an interactive request may take its slot.
    pub preemptible: bool,
    /// The model; `None` is the first loaded.
    pub model: Option<String>,
}

/// A request that resolved: everything about its outcome but the output, which the caller
/// that ran the engine holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The request.
    pub id: JobId,
    /// Its batch index.
    pub index: Option<usize>,
    /// Its model.
    pub model: Arc<str>,
    /// The engine it ran on, if it started.
    pub engine: Option<usize>,
    /// Why it ended.
    pub end: End,
    /// When it was accepted.
    pub queued_at: Instant,
    /// When it was admitted, if it was.
    pub started_at: Option<Instant>,
    /// When it resolved.
    pub finished_at: Instant,
}

impl Resolved {
    /// The outcome, with the engine's output for it (if any).
    pub fn into_outcome<O>(self, output: Option<O>) -> Outcome<O> {
        Outcome {
            id: self.id,
            index: self.index,
            model: self.model,
            engine: self.engine,
            queued_at: self.queued_at,
            started_at: self.started_at,
            finished_at: self.finished_at,
            end: self.end,
            output,
        }
    }
}

/// A submission the core accepted.
#[derive(Debug)]
pub struct Accepted<P> {
    /// The ids of the new requests, in submission order.
    pub ids: Vec<JobId>,
    /// The model they were queued for.
    pub model: Arc<str>,
    /// The task label, where the requests carry one.
    pub task: Option<String>,
    /// Queued requests that the new ones superseded: already resolved, output `None`.
    pub resolved: Vec<(P, Resolved)>,
}

/// An engine's work for one step boundary, from [`Core::plan_boundary`]. Carry it out in
/// order — every eviction, then the admissions in order (stopping at the first `Busy`), then
/// one step if anything is admitted — and report with [`Core::boundary_done`].
#[derive(Debug, Clone)]
pub struct Plan<P> {
    /// The engine.
    pub engine: EngineKey,
    /// Jobs to evict (stopped: cancelled, superseded, preempted, shut down).
    pub evict: Vec<JobId>,
    /// Jobs to admit, highest precedence first, with their payloads.
    pub admit: Vec<(JobId, P)>,
    /// Jobs that stay in the engine's batch from before (not evicted).
    pub running: usize,
    /// Decode steps for this boundary's step call.
    pub decode_steps: u32,
    /// After this boundary the engine is done (shutdown, or it is no longer ready): evict,
    /// report, then drop the engine. Such a plan admits nothing and asks for no step.
    pub exit: bool,
}

/// How one planned admission went.
#[derive(Debug)]
pub enum Admission<P> {
    /// The engine took the job.
    Taken,
    /// The engine had no room now (KV); the payload comes back and the request waits.
    Busy(P),
    /// The job can never run (refused as invalid, or `Busy` from an empty engine).
    Invalid {
        /// The field at fault.
        field: Option<String>,
        /// Why.
        reason: String,
    },
    /// Not offered (an earlier admission of the same boundary was `Busy`, or the engine
    /// failed); the payload comes back.
    NotTried(P),
}

/// What happened at an engine's step boundary, for [`Core::boundary_done`].
#[derive(Debug)]
pub struct Report<P> {
    /// Every job of the plan's `evict`, now out of the engine.
    pub evicted: Vec<JobId>,
    /// Every job of the plan's `admit`, with how it went.
    pub admissions: Vec<(JobId, Admission<P>)>,
    /// Jobs the step reported finished.
    pub finished: Vec<JobId>,
    /// The engine failed (the step returned an error, or an engine call panicked): it is
    /// dropped.
    pub failure: Option<String>,
}

/// The core's answer to [`Core::boundary_done`].
#[derive(Debug)]
pub struct BoundaryDone<P> {
    /// Requests that resolved and were in the engine (their output is the caller's).
    pub resolved: Vec<Resolved>,
    /// Requests that resolved while their payload was back in hand (not admitted after all).
    pub returned: Vec<(P, Resolved)>,
    /// Requests of this engine whose chunks must not be delivered (they were being stopped).
    pub muted: BTreeSet<JobId>,
    /// Requests of other models, failed because their model lost its last engine.
    pub dropped: Vec<(P, Resolved)>,
    /// The engine is gone: drop it.
    pub exit: bool,
}

/// An engine to load in the background (the pool grows).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadOrder {
    /// The engine's key (it is `Loading` until [`Core::engine_ready`] or
    /// [`Core::engine_load_failed`]).
    pub key: EngineKey,
    /// The model to load.
    pub model: Arc<str>,
}

/// What [`Core::begin_load`] asks of the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BeginLoad {
    /// The model has a ready engine: nothing to do.
    Loaded,
    /// An engine of the model is loading already: wait for it.
    InProgress,
    /// Load this engine now.
    Load(LoadOrder),
}

/// Where a request is, for tests and diagnostics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// In its band's queue.
    Queued,
    /// Handed to the engine at a boundary that has not reported yet.
    Admitting(EngineKey),
    /// In the engine's batch.
    Running(EngineKey),
    /// Being evicted at a boundary that has not reported yet.
    Evicting(EngineKey),
}

impl Place {
    /// The engine it is on, unless queued.
    pub fn engine(self) -> Option<EngineKey> {
        match self {
            Place::Queued => None,
            Place::Admitting(k) | Place::Running(k) | Place::Evicting(k) => Some(k),
        }
    }
}

/// A task: per model, a user label or an anonymous number.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum TaskName {
    Named(String),
    Anon(u64),
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct TaskKey {
    model: usize,
    name: TaskName,
}

#[derive(Debug, Clone, Default)]
struct TaskState {
    /// The engine (index within the model) its placed jobs are on.
    engine: Option<usize>,
    /// Jobs placed on that engine (admitting, running, evicting).
    placed: usize,
    /// Jobs in a queue.
    queued: usize,
}

#[derive(Debug, Clone)]
struct Job<P> {
    model: usize,
    band: Priority,
    task: TaskKey,
    session: Option<String>,
    preemptible: bool,
    index: Option<usize>,
    payload: Option<P>,
    place: Place,
    /// The reason it is being stopped; it resolves with this at its engine's next boundary.
    stop: Option<End>,
    queued_at: Instant,
    planned_at: Option<Instant>,
    started_at: Option<Instant>,
    /// Admission order, for "youngest first".
    start_seq: u64,
    /// The engine that answered `Busy` at its last offer.
    busy_on: Option<usize>,
}

#[derive(Debug, Clone)]
struct Eng {
    state: EngineState,
    slots: usize,
    jobs: BTreeSet<JobId>,
    /// Between `plan_boundary` and `boundary_done`.
    in_boundary: bool,
    /// KV pages (in use, total) as the engine last reported them.
    kv_pages: Option<(usize, usize)>,
}

#[derive(Debug, Clone)]
struct Model {
    name: Arc<str>,
    /// Lost every engine with growth blocked (or its first load failed): no longer listed.
    removed: bool,
    growth_blocked: bool,
    engines: Vec<Eng>,
    /// Ids in submission (= id) order.
    queues: PerBand<VecDeque<JobId>>,
}

impl Model {
    fn live(&self) -> usize {
        self.engines
            .iter()
            .filter(|e| e.state != EngineState::Failed)
            .count()
    }
}

/// The scheduling state machine. See the [module docs](self). It clones (with a cloneable
/// payload) so that a model checker can branch on it.
#[derive(Debug, Clone)]
pub struct Core<P> {
    cfg: Config,
    next_id: u64,
    next_seq: u64,
    next_task: u64,
    shut_down: bool,
    models: Vec<Model>,
    jobs: BTreeMap<JobId, Job<P>>,
    tasks: BTreeMap<TaskKey, TaskState>,
    sessions: BTreeMap<String, JobId>,
    counters: Counters,
    events: Vec<Event>,
    loads: Vec<LoadOrder>,
}

impl<P> Core<P> {
    /// An empty core: no model, nothing queued.
    pub fn new(config: Config) -> Result<Self, SchedError> {
        config.validate()?;
        Ok(Self {
            cfg: config,
            next_id: 1,
            next_seq: 0,
            next_task: 0,
            shut_down: false,
            models: Vec::new(),
            jobs: BTreeMap::new(),
            tasks: BTreeMap::new(),
            sessions: BTreeMap::new(),
            counters: Counters::default(),
            events: Vec::new(),
            loads: Vec::new(),
        })
    }

    /// The configuration in force (with the current decode steps).
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Sets the decode steps per step call; each engine uses it from its next boundary.
    pub fn set_decode_steps(&mut self, decode_steps: u32) -> Result<(), SchedError> {
        if decode_steps == 0 {
            return Err(SchedError::bad_request(
                Some("decode_steps"),
                "decode_steps must be at least 1",
            ));
        }
        self.cfg.decode_steps = decode_steps;
        Ok(())
    }

    /// Whether [`shutdown`](Core::shutdown) was called.
    pub fn is_shut_down(&self) -> bool {
        self.shut_down
    }

    /// Events since the last call, in the order of the changes.
    pub fn take_events(&mut self) -> Vec<Event> {
        std::mem::take(&mut self.events)
    }

    /// Engines to load since the last call (each already `Loading`).
    pub fn take_loads(&mut self) -> Vec<LoadOrder> {
        std::mem::take(&mut self.loads)
    }

    /// The model's name.
    pub fn model_name(&self, model: usize) -> Option<Arc<str>> {
        self.models.get(model).map(|m| m.name.clone())
    }

    /// Where a live request is; `None` once it resolved.
    pub fn place(&self, id: JobId) -> Option<Place> {
        self.jobs.get(&id).map(|j| j.place)
    }

    /// The requests in an engine's batch (admitting, running, evicting), in id order.
    pub fn batch_of(&self, key: EngineKey) -> Vec<JobId> {
        self.engine(key)
            .map(|e| e.jobs.iter().copied().collect())
            .unwrap_or_default()
    }

    /// How many requests are live (accepted, not yet resolved).
    pub fn live(&self) -> usize {
        self.jobs.len()
    }

    /// Ready engines, in key order.
    pub fn ready_engines(&self) -> Vec<EngineKey> {
        let mut out = Vec::new();
        for (mi, m) in self.models.iter().enumerate() {
            for (ei, e) in m.engines.iter().enumerate() {
                if e.state == EngineState::Ready {
                    out.push(EngineKey {
                        model: mi,
                        engine: ei,
                    });
                }
            }
        }
        out
    }

    /// The id the next accepted request gets; a batch gets consecutive ids from it.
    pub fn next_id(&self) -> JobId {
        JobId(self.next_id)
    }

    /// The model a request naming `model` (or none: the first loaded) goes to, or `NO_MODEL`.
    pub fn model_for(&self, model: Option<&str>) -> Result<Arc<str>, SchedError> {
        self.find_model(model)
            .map(|mi| self.models[mi].name.clone())
    }

    /// An engine's state; `None` for an unknown key.
    pub fn engine_state(&self, key: EngineKey) -> Option<EngineState> {
        self.engine(key).map(|e| e.state)
    }

    /// Whether the model's first engine is loading (it has none ready and one loading).
    pub fn first_load_pending(&self, model: &str) -> bool {
        self.models.iter().any(|m| {
            !m.removed
                && &*m.name == model
                && !m.engines.iter().any(|e| e.state == EngineState::Ready)
                && m.engines.iter().any(|e| e.state == EngineState::Loading)
        })
    }

    fn engine(&self, key: EngineKey) -> Option<&Eng> {
        self.models
            .get(key.model)
            .and_then(|m| m.engines.get(key.engine))
    }

    fn engine_mut(&mut self, key: EngineKey) -> Option<&mut Eng> {
        self.models
            .get_mut(key.model)
            .and_then(|m| m.engines.get_mut(key.engine))
    }

    fn find_model(&self, name: Option<&str>) -> Result<usize, SchedError> {
        let found = match name {
            None => self.models.iter().position(|m| !m.removed),
            Some(n) => self.models.iter().position(|m| !m.removed && &*m.name == n),
        };
        found.ok_or_else(|| SchedError::NoModel {
            model: name.map(str::to_owned),
        })
    }

    fn band_depth(&self, band: Priority) -> usize {
        self.models.iter().map(|m| m.queues.get(band).len()).sum()
    }

    // ---- loading ---------------------------------------------------------------------

    /// `load(model)`: registers the model if it is new and says whether its first engine
    /// must be loaded now (synchronously, by the caller), is loading already, or is there.
    pub fn begin_load(&mut self, model: &str) -> Result<BeginLoad, SchedError> {
        if self.shut_down {
            return Err(SchedError::ShutDown);
        }
        let mi = match self
            .models
            .iter()
            .position(|m| !m.removed && &*m.name == model)
        {
            Some(mi) => mi,
            None => {
                self.models.push(Model {
                    name: model.into(),
                    removed: false,
                    growth_blocked: false,
                    engines: Vec::new(),
                    queues: PerBand::default(),
                });
                self.models.len() - 1
            }
        };
        let m = &self.models[mi];
        if m.engines.iter().any(|e| e.state == EngineState::Ready) {
            return Ok(BeginLoad::Loaded);
        }
        if m.engines.iter().any(|e| e.state == EngineState::Loading) {
            return Ok(BeginLoad::InProgress);
        }
        Ok(BeginLoad::Load(self.start_engine(mi)))
    }

    fn start_engine(&mut self, mi: usize) -> LoadOrder {
        let m = &mut self.models[mi];
        m.engines.push(Eng {
            state: EngineState::Loading,
            slots: 0,
            jobs: BTreeSet::new(),
            in_boundary: false,
            kv_pages: None,
        });
        let key = EngineKey {
            model: mi,
            engine: m.engines.len() - 1,
        };
        let model = m.name.clone();
        self.events.push(Event::EngineLoading {
            model: model.clone(),
            engine: key.engine,
        });
        LoadOrder { key, model }
    }

    /// Records the KV pages (in use, total) engine `key` reports after a boundary
    /// ([`Engine::kv_pages`](crate::Engine::kv_pages)).
    pub fn set_kv_pages(&mut self, key: EngineKey, pages: Option<(usize, usize)>) {
        if let Some(e) = self
            .models
            .get_mut(key.model)
            .and_then(|m| m.engines.get_mut(key.engine))
        {
            e.kv_pages = pages;
        }
    }

    /// A loaded engine with `slots` slots is ready. `false`: the core does not want it
    /// (shut down, or unknown key) — drop it.
    pub fn engine_ready(&mut self, key: EngineKey, slots: usize) -> bool {
        let shut_down = self.shut_down;
        let Some(m) = self.models.get_mut(key.model) else {
            return false;
        };
        let name = m.name.clone();
        let Some(e) = m.engines.get_mut(key.engine) else {
            return false;
        };
        if e.state != EngineState::Loading {
            return false;
        }
        if shut_down || slots == 0 {
            // 0 slots: a broken engine, like a failed load (the worker reports it as one).
            e.state = EngineState::Failed;
            if slots == 0 {
                m.growth_blocked = true;
            }
            let reason = if shut_down {
                "shut down while loading"
            } else {
                "the engine reports 0 slots"
            };
            self.events.push(Event::EngineFailed {
                model: name,
                engine: key.engine,
                reason: reason.into(),
            });
            return false;
        }
        e.state = EngineState::Ready;
        e.slots = slots;
        self.events.push(Event::EngineReady {
            model: name,
            engine: key.engine,
            slots,
        });
        self.check_growth();
        true
    }

    /// Loading the engine failed: it is `Failed` and the model's pool grows no more. If the
    /// model has no engine left, it is unloaded and its queued requests fail with `NO_MODEL`
    /// (returned for resolving). The error is what `load` reports.
    pub fn engine_load_failed(
        &mut self,
        key: EngineKey,
        failure: &LoadFailure,
        now: Instant,
    ) -> (SchedError, Vec<(P, Resolved)>) {
        let name = self
            .model_name(key.model)
            .map(|n| n.to_string())
            .unwrap_or_default();
        let err = match failure {
            LoadFailure::UnknownModel => SchedError::UnknownModel {
                model: name.clone(),
            },
            LoadFailure::Failed(reason) => SchedError::LoadFailed {
                model: name.clone(),
                reason: reason.clone(),
            },
        };
        let Some(m) = self.models.get_mut(key.model) else {
            return (err, Vec::new());
        };
        m.growth_blocked = true;
        if let Some(e) = m.engines.get_mut(key.engine)
            && e.state == EngineState::Loading
        {
            e.state = EngineState::Failed;
            self.events.push(Event::EngineFailed {
                model: m.name.clone(),
                engine: key.engine,
                reason: err.to_string(),
            });
        }
        let dropped = self.check_dead(key.model, now);
        (err, dropped)
    }

    // ---- submitting ------------------------------------------------------------------

    /// Accepts one request (see [`submit_batch`](Core::submit_batch)).
    pub fn submit(&mut self, sub: Submission<P>, now: Instant) -> Result<Accepted<P>, SchedError> {
        self.submit_many(vec![sub], false, now)
    }

    /// Accepts a batch as one task: every request, or none. The task is the requests' label
    /// if they carry one (they must all carry the same, or none), otherwise a fresh anonymous
    /// task. All go to one model (the first request's). Fails with `NO_MODEL`, `QUEUE_FULL`,
    /// `BAD_REQUEST` or `SHUT_DOWN`. A request with a session supersedes that session's
    /// previous request.
    pub fn submit_batch(
        &mut self,
        subs: Vec<Submission<P>>,
        now: Instant,
    ) -> Result<Accepted<P>, SchedError> {
        self.submit_many(subs, true, now)
    }

    fn submit_many(
        &mut self,
        subs: Vec<Submission<P>>,
        batch: bool,
        now: Instant,
    ) -> Result<Accepted<P>, SchedError> {
        if self.shut_down {
            return Err(SchedError::ShutDown);
        }
        let first_model = subs.first().and_then(|s| s.model.clone());
        let mi = self.find_model(first_model.as_deref())?;
        if subs.iter().any(|s| s.model != first_model) {
            return Err(SchedError::bad_request(
                Some("model"),
                "every request of a batch must name the same model",
            ));
        }
        let label = subs.first().and_then(|s| s.task.clone());
        if batch && subs.iter().any(|s| s.task != label) {
            return Err(SchedError::bad_request(
                Some("task"),
                "the requests of a batch are one task: one label or none",
            ));
        }
        for band in Priority::ALL {
            let n = subs.iter().filter(|s| s.priority == band).count();
            let depth = self.band_depth(band);
            let cap = *self.cfg.queue_cap.get(band);
            if n > 0 && depth + n > cap {
                self.counters.rejected += 1;
                return Err(SchedError::QueueFull { band, depth, cap });
            }
        }
        let batch_task = if batch && label.is_none() {
            Some(self.fresh_task())
        } else {
            None
        };
        let mut ids = Vec::with_capacity(subs.len());
        let mut resolved = Vec::new();
        for (i, s) in subs.into_iter().enumerate() {
            let id = JobId(self.next_id);
            self.next_id += 1;
            let name = match (&s.task, &batch_task) {
                (Some(l), _) => TaskName::Named(l.clone()),
                (None, Some(t)) => t.clone(),
                (None, None) => self.fresh_task(),
            };
            let task = TaskKey { model: mi, name };
            if let Some(key) = &s.session
                && let Some(&old) = self.sessions.get(key)
                && let Some(r) = self.stop(old, End::Superseded { by: id }, now)
            {
                resolved.extend(r);
            }
            if let Some(key) = &s.session {
                self.sessions.insert(key.clone(), id);
            }
            self.tasks.entry(task.clone()).or_default().queued += 1;
            self.models[mi].queues.get_mut(s.priority).push_back(id);
            self.events.push(Event::Queued {
                id,
                band: s.priority,
                model: self.models[mi].name.clone(),
            });
            self.jobs.insert(
                id,
                Job {
                    model: mi,
                    band: s.priority,
                    task,
                    session: s.session,
                    preemptible: s.preemptible,
                    index: batch.then_some(i),
                    payload: Some(s.payload),
                    place: Place::Queued,
                    stop: None,
                    queued_at: now,
                    planned_at: None,
                    started_at: None,
                    start_seq: 0,
                    busy_on: None,
                },
            );
            self.counters.submitted += 1;
            ids.push(id);
        }
        self.check_growth();
        Ok(Accepted {
            ids,
            model: self.models[mi].name.clone(),
            task: label,
            resolved,
        })
    }

    fn fresh_task(&mut self) -> TaskName {
        self.next_task += 1;
        TaskName::Anon(self.next_task)
    }

    // ---- stopping --------------------------------------------------------------------

    /// Stops the target's live requests; returns how many it stopped (those not already
    /// resolved or being stopped) and the queued ones, resolved now. A running one resolves
    /// as `Cancelled` at its engine's next boundary.
    pub fn cancel(&mut self, target: &Target, now: Instant) -> (usize, Vec<(P, Resolved)>) {
        let ids: Vec<JobId> = match target {
            Target::Id(id) => vec![*id],
            Target::Session(key) => self.sessions.get(key).copied().into_iter().collect(),
            Target::Task(label) => self
                .jobs
                .iter()
                .filter(|(_, j)| j.task.name == TaskName::Named(label.clone()))
                .map(|(id, _)| *id)
                .collect(),
        };
        let mut count = 0;
        let mut resolved = Vec::new();
        for id in ids {
            if let Some(r) = self.stop(id, End::Cancelled, now) {
                count += 1;
                resolved.extend(r);
            }
        }
        (count, resolved)
    }

    /// `None`: nothing to stop (resolved, or already being stopped). `Some(Some(_))`: it was
    /// queued and resolved now. `Some(None)`: it is on an engine and resolves at the next
    /// boundary.
    fn stop(&mut self, id: JobId, end: End, now: Instant) -> Option<Option<(P, Resolved)>> {
        let job = self.jobs.get_mut(&id)?;
        if job.stop.is_some() {
            return None;
        }
        match &end {
            End::Superseded { .. } => self.counters.supersessions += 1,
            End::Cancelled => self.counters.cancellations += 1,
            End::Preempted { .. } => self.counters.preemptions += 1,
            End::Finished | End::Failed(_) => {}
        }
        if job.place == Place::Queued {
            let payload = job.payload.take();
            let resolved = self.resolve(id, end, now);
            return Some(payload.map(|p| (p, resolved)));
        }
        job.stop = Some(end);
        Some(None)
    }

    /// Removes a job and records its end (counters, event, task and session bookkeeping).
    fn resolve(&mut self, id: JobId, end: End, now: Instant) -> Resolved {
        let Some(job) = self.jobs.remove(&id) else {
            // Unreachable by construction; a neutral record keeps the caller total.
            return Resolved {
                id,
                index: None,
                model: "".into(),
                engine: None,
                end,
                queued_at: now,
                started_at: None,
                finished_at: now,
            };
        };
        let m = &mut self.models[job.model];
        match job.place {
            Place::Queued => {
                let q = m.queues.get_mut(job.band);
                if let Ok(pos) = q.binary_search(&id) {
                    q.remove(pos);
                }
            }
            Place::Admitting(k) | Place::Running(k) | Place::Evicting(k) => {
                if let Some(e) = m.engines.get_mut(k.engine) {
                    e.jobs.remove(&id);
                }
            }
        }
        if let Some(t) = self.tasks.get_mut(&job.task) {
            if job.place == Place::Queued {
                t.queued = t.queued.saturating_sub(1);
            } else {
                t.placed = t.placed.saturating_sub(1);
                if t.placed == 0 {
                    t.engine = None;
                }
            }
            if t.placed == 0 && t.queued == 0 {
                self.tasks.remove(&job.task);
            }
        }
        if let Some(s) = &job.session
            && self.sessions.get(s) == Some(&id)
        {
            self.sessions.remove(s);
        }
        match &end {
            End::Finished => self.counters.finished += 1,
            End::Failed(_) => self.counters.failures += 1,
            _ => {}
        }
        self.events.push(Event::terminal(id, &end));
        Resolved {
            id,
            index: job.index,
            model: m.name.clone(),
            engine: job
                .place
                .engine()
                .filter(|_| job.started_at.is_some())
                .map(|k| k.engine),
            end,
            queued_at: job.queued_at,
            started_at: job.started_at,
            finished_at: now,
        }
    }

    // ---- shutting down ----------------------------------------------------------------

    /// Stops everything: queued requests resolve now with `SHUT_DOWN` (returned), running
    /// ones are marked and resolve at their engine's next boundary, whose plan is an exit.
    /// Later submissions fail with `SHUT_DOWN`.
    pub fn shutdown(&mut self, now: Instant) -> Vec<(P, Resolved)> {
        self.shut_down = true;
        let mut out = Vec::new();
        let ids: Vec<JobId> = self.jobs.keys().copied().collect();
        for id in ids {
            if let Some(Some(r)) = self.stop(id, End::Failed(SchedError::ShutDown), now) {
                out.push(r);
            }
        }
        out
    }

    // ---- the pool --------------------------------------------------------------------

    /// Grows a pool when a task waits that no engine can admit: every ready engine of the
    /// model is full, the task owns no engine, nothing is loading, the cap allows, growth is
    /// not blocked.
    fn check_growth(&mut self) {
        if self.shut_down {
            return;
        }
        for mi in 0..self.models.len() {
            let m = &self.models[mi];
            if m.removed || m.growth_blocked || m.live() >= self.cfg.engines {
                continue;
            }
            if m.engines.iter().any(|e| e.state == EngineState::Loading) {
                continue;
            }
            let all_full = m
                .engines
                .iter()
                .filter(|e| e.state == EngineState::Ready)
                .all(|e| e.jobs.len() >= e.slots);
            if !all_full {
                continue;
            }
            let waits = Priority::ALL.iter().any(|&b| {
                m.queues.get(b).iter().any(|id| {
                    self.jobs
                        .get(id)
                        .is_some_and(|j| self.tasks.get(&j.task).is_none_or(|t| t.engine.is_none()))
                })
            });
            if waits {
                let order = self.start_engine(mi);
                self.loads.push(order);
            }
        }
    }

    /// A model with no engine left and no way to grow is unloaded: its queued requests fail
    /// with `NO_MODEL`.
    fn check_dead(&mut self, mi: usize, now: Instant) -> Vec<(P, Resolved)> {
        let m = &self.models[mi];
        if m.removed || m.live() > 0 || !(m.growth_blocked || self.shut_down) {
            return Vec::new();
        }
        let name = m.name.to_string();
        let ids: Vec<JobId> = Priority::ALL
            .iter()
            .flat_map(|&b| m.queues.get(b).iter().copied())
            .collect();
        self.models[mi].removed = true;
        let mut out = Vec::new();
        for id in ids {
            let payload = self.jobs.get_mut(&id).and_then(|j| j.payload.take());
            let r = self.resolve(
                id,
                End::Failed(SchedError::NoModel {
                    model: Some(name.clone()),
                }),
                now,
            );
            if let Some(p) = payload {
                out.push((p, r));
            }
        }
        out
    }

    // ---- status ----------------------------------------------------------------------

    /// A snapshot: queue depths, engines by state, counters.
    pub fn status(&self) -> Status {
        let mut queued = PerBand::<usize>::default();
        let mut models = Vec::new();
        for m in self.models.iter().filter(|m| !m.removed) {
            let mut mq = PerBand::<usize>::default();
            for b in Priority::ALL {
                *mq.get_mut(b) = m.queues.get(b).len();
                *queued.get_mut(b) += m.queues.get(b).len();
            }
            models.push(ModelStatus {
                name: m.name.to_string(),
                cap: self.cfg.engines,
                growth_blocked: m.growth_blocked,
                queued: mq,
                engines: m
                    .engines
                    .iter()
                    .enumerate()
                    .map(|(i, e)| EngineStatus {
                        index: i,
                        state: e.state,
                        slots: e.slots,
                        running: e.jobs.len(),
                        kv_pages: e.kv_pages,
                    })
                    .collect(),
            });
        }
        Status {
            queued,
            models,
            counters: self.counters,
            decode_steps: self.cfg.decode_steps,
        }
    }
}
