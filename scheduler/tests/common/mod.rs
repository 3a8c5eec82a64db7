//! Shared by the tests: a deterministic fake engine and loader, and a simulation harness that
//! drives the core with fake engines in virtual time, checking the rules as it goes.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use gpuport_scheduler::core::{BeginLoad, Core, EngineKey, Place, Resolved, Submission};
use gpuport_scheduler::exec;
use gpuport_scheduler::{
    Config, End, Engine, EngineFailure, EngineLoader, Event, JobId, LoadFailure, Outcome, Priority,
    Progress, Refusal, Request, SchedError, Target,
};

// ---- the fake engine -------------------------------------------------------------------

/// What a fake job asks for: `tokens` to produce, `pages` of KV to hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeJob {
    pub tokens: u32,
    pub pages: usize,
    pub invalid: bool,
}

impl FakeJob {
    pub fn new(tokens: u32) -> Self {
        Self {
            tokens,
            pages: 1,
            invalid: false,
        }
    }

    pub fn pages(mut self, pages: usize) -> Self {
        self.pages = pages;
        self
    }

    pub fn invalid() -> Self {
        Self {
            tokens: 1,
            pages: 1,
            invalid: true,
        }
    }
}

/// A batch engine that produces one token per job per decode step (token values count up
/// from 0), holds `pages` pages of KV, and can be told to fail its next step.
#[derive(Debug, Clone)]
pub struct FakeEngine {
    pub slots: usize,
    pub pages: usize,
    pub jobs: BTreeMap<JobId, (FakeJob, Vec<u32>)>,
    pub step_calls: u32,
    pub step_delay: Duration,
    pub fail_steps: Arc<AtomicBool>,
    pub panic_steps: bool,
}

impl FakeEngine {
    pub fn new(slots: usize, pages: usize) -> Self {
        Self {
            slots,
            pages,
            jobs: BTreeMap::new(),
            step_calls: 0,
            step_delay: Duration::ZERO,
            fail_steps: Arc::new(AtomicBool::new(false)),
            panic_steps: false,
        }
    }

    fn used(&self) -> usize {
        self.jobs.values().map(|(j, _)| j.pages).sum()
    }
}

impl Engine for FakeEngine {
    type Job = FakeJob;
    type Chunk = u32;
    type Output = Vec<u32>;

    fn slots(&self) -> usize {
        self.slots
    }

    fn admit(&mut self, id: JobId, job: FakeJob) -> Result<(), (FakeJob, Refusal)> {
        assert!(
            self.jobs.len() < self.slots,
            "the scheduler admitted past the slots"
        );
        assert!(!self.jobs.contains_key(&id), "admitted twice");
        if job.invalid {
            return Err((
                job,
                Refusal::Invalid {
                    field: Some("prompt".into()),
                    reason: "too long".into(),
                },
            ));
        }
        if self.used() + job.pages > self.pages {
            return Err((job, Refusal::Busy));
        }
        self.jobs.insert(id, (job, Vec::new()));
        Ok(())
    }

    fn step(&mut self, decode_steps: u32) -> Result<Vec<Progress<u32, Vec<u32>>>, EngineFailure> {
        assert!(!self.jobs.is_empty(), "stepped with nothing admitted");
        self.step_calls += 1;
        if !self.step_delay.is_zero() {
            std::thread::sleep(self.step_delay);
        }
        if self.panic_steps {
            panic!("fake engine panic");
        }
        if self.fail_steps.load(Ordering::SeqCst) {
            return Err(EngineFailure::new("fake device lost"));
        }
        let mut out = Vec::new();
        let mut done = Vec::new();
        for (id, (job, produced)) in &mut self.jobs {
            for _ in 0..decode_steps {
                if produced.len() as u32 >= job.tokens {
                    break;
                }
                let t = produced.len() as u32;
                produced.push(t);
                out.push(Progress::Chunk(*id, t));
            }
            if produced.len() as u32 >= job.tokens {
                done.push(*id);
            }
        }
        for id in done {
            if let Some((_, produced)) = self.jobs.remove(&id) {
                out.push(Progress::Finished(id, produced));
            }
        }
        Ok(out)
    }

    fn evict(&mut self, id: JobId) -> Vec<u32> {
        self.jobs
            .remove(&id)
            .map(|(_, p)| p)
            .expect("evicted a job that is not in the engine")
    }
}

/// A loader of fake engines: `slots` and `pages` per engine; `succeed` loads succeed (then
/// they fail with LOAD_FAILED); models not in `known` are UNKNOWN_MODEL; optional delay.
#[derive(Debug, Clone)]
pub struct FakeLoader {
    pub slots: usize,
    pub pages: usize,
    pub known: Vec<String>,
    pub succeed: Arc<AtomicUsize>,
    pub loads: Arc<AtomicUsize>,
    pub delay: Duration,
    pub step_delay: Duration,
    pub fail_steps: Arc<AtomicBool>,
    pub panic_steps: bool,
}

impl FakeLoader {
    pub fn new(slots: usize, pages: usize) -> Self {
        Self {
            slots,
            pages,
            known: vec!["m".into(), "other".into()],
            succeed: Arc::new(AtomicUsize::new(usize::MAX)),
            loads: Arc::new(AtomicUsize::new(0)),
            delay: Duration::ZERO,
            step_delay: Duration::from_millis(1),
            fail_steps: Arc::new(AtomicBool::new(false)),
            panic_steps: false,
        }
    }
}

impl EngineLoader for FakeLoader {
    type Engine = FakeEngine;

    fn load(&self, model: &str) -> Result<FakeEngine, LoadFailure> {
        self.loads.fetch_add(1, Ordering::SeqCst);
        if !self.delay.is_zero() {
            std::thread::sleep(self.delay);
        }
        if !self.known.iter().any(|k| k == model) {
            return Err(LoadFailure::UnknownModel);
        }
        let left = self.succeed.load(Ordering::SeqCst);
        if left == 0 {
            return Err(LoadFailure::Failed("out of memory".into()));
        }
        self.succeed.store(left.saturating_sub(1), Ordering::SeqCst);
        let mut e = FakeEngine::new(self.slots, self.pages);
        e.step_delay = self.step_delay;
        e.fail_steps = Arc::clone(&self.fail_steps);
        e.panic_steps = self.panic_steps;
        Ok(e)
    }
}

// ---- the simulation --------------------------------------------------------------------

type P = (FakeJob, ());

/// What the simulation knows about a request, independently of the core.
#[derive(Debug, Clone)]
pub struct Meta {
    pub band: Priority,
    pub task: String,
    pub preemptible: bool,
    pub model: usize,
}

/// A supersession or cancel of a running request, to check its latency.
#[derive(Debug, Clone)]
struct Stopped {
    engine: EngineKey,
    step_calls: u32,
    tokens: usize,
}

/// The core driven with fake engines in virtual time. Every call checks the core's
/// invariants and the rules; `violations` collects what broke (tests assert it is empty).
pub struct Sim {
    pub core: Core<P>,
    pub engines: BTreeMap<EngineKey, FakeEngine>,
    pub slots: usize,
    pub pages: usize,
    /// Background loads that will succeed before loads start failing.
    pub loads_ok: usize,
    pub pending_loads: Vec<EngineKey>,
    pub t0: Instant,
    pub now: Instant,
    pub meta: BTreeMap<JobId, Meta>,
    pub outcomes: BTreeMap<JobId, Vec<Outcome<Vec<u32>>>>,
    pub chunks: BTreeMap<JobId, Vec<u32>>,
    pub events: Vec<Event>,
    /// Admissions in order: (engine, job, step calls of that engine before it).
    pub admissions: Vec<(EngineKey, JobId)>,
    pub loads_started: Vec<EngineKey>,
    pub load_failed: BTreeSet<usize>,
    pub cancelled_count: usize,
    pub violations: Vec<String>,
    stopped: BTreeMap<JobId, Stopped>,
    session_last: BTreeMap<String, JobId>,
    next_anon: u64,
}

impl Sim {
    pub fn new(config: Config, slots: usize, pages: usize) -> Self {
        let t0 = Instant::now();
        Self {
            core: Core::new(config).expect("valid config"),
            engines: BTreeMap::new(),
            slots,
            pages,
            loads_ok: usize::MAX,
            pending_loads: Vec::new(),
            t0,
            now: t0,
            meta: BTreeMap::new(),
            outcomes: BTreeMap::new(),
            chunks: BTreeMap::new(),
            events: Vec::new(),
            admissions: Vec::new(),
            loads_started: Vec::new(),
            load_failed: BTreeSet::new(),
            cancelled_count: 0,
            violations: Vec::new(),
            stopped: BTreeMap::new(),
            session_last: BTreeMap::new(),
            next_anon: 0,
        }
    }

    /// Virtual milliseconds since the start.
    pub fn ms(&self) -> u128 {
        (self.now - self.t0).as_millis()
    }

    fn violation(&mut self, v: String) {
        self.violations.push(v);
    }

    /// `load(model)`: the first engine, at once.
    pub fn load(&mut self, model: &str) -> Result<EngineKey, SchedError> {
        match self.core.begin_load(model)? {
            BeginLoad::Load(order) => {
                assert!(self.core.engine_ready(order.key, self.slots));
                self.engines
                    .insert(order.key, FakeEngine::new(self.slots, self.pages));
                self.after_op();
                Ok(order.key)
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    fn record_resolved(&mut self, r: Resolved, output: Option<Vec<u32>>) {
        let id = r.id;
        if let Some(s) = self.stopped.get(&id).cloned()
            && matches!(r.end, End::Superseded { .. } | End::Cancelled)
            && r.started_at.is_some()
        {
            let calls = self.engines.get(&s.engine).map_or(0, |e| e.step_calls);
            let tokens = output.as_ref().map_or(0, Vec::len);
            if calls > s.step_calls + 1 {
                self.violation(format!(
                    "{id}: stopped after {} step calls",
                    calls - s.step_calls
                ));
            }
            if tokens > s.tokens && !matches!(r.end, End::Cancelled) {
                self.violation(format!(
                    "{id}: produced {} tokens after being superseded",
                    tokens - s.tokens
                ));
            }
        }
        if let End::Preempted { by } = &r.end {
            let victim = self.meta.get(&id).cloned();
            let by_meta = self.meta.get(by).cloned();
            match (victim, by_meta) {
                (Some(v), Some(b)) => {
                    if !v.preemptible {
                        self.violation(format!("{id}: preempted but not preemptible"));
                    }
                    if b.band != Priority::Interactive {
                        self.violation(format!("{id}: preempted by {by}, a {} request", b.band));
                    }
                    if b.task == v.task {
                        self.violation(format!("{id}: preempted by its own task"));
                    }
                }
                _ => self.violation(format!("{id}: preempted by unknown {by}")),
            }
        }
        let outcome = r.into_outcome(output);
        let list = self.outcomes.entry(id).or_default();
        list.push(outcome);
        let n = list.len();
        if n > 1 {
            self.violation(format!("{id}: resolved {n} times"));
        }
    }

    fn after_op(&mut self) {
        if let Err(e) = self.core.check() {
            self.violation(format!("core check: {e}"));
        }
        self.events.extend(self.core.take_events());
        for order in self.core.take_loads() {
            self.check_growth(order.key);
            self.loads_started.push(order.key);
            self.pending_loads.push(order.key);
        }
    }

    /// The growth rule, checked at every load order: every ready engine of the model is
    /// full, and a queued request's task owns no engine; no load after a failed one.
    fn check_growth(&mut self, key: EngineKey) {
        if self.load_failed.contains(&key.model) {
            self.violation(format!("load of {key:?} after a failed load"));
        }
        let ready: Vec<EngineKey> = self
            .core
            .ready_engines()
            .into_iter()
            .filter(|k| k.model == key.model)
            .collect();
        for k in &ready {
            if self.core.batch_of(*k).len() < self.slots {
                self.violation(format!("grew ({key:?}) while {k:?} had a free slot"));
            }
        }
        let owners = self.task_owners();
        let waits = self.meta.iter().any(|(id, m)| {
            m.model == key.model
                && self.core.place(*id) == Some(Place::Queued)
                && !owners.contains_key(&m.task)
        });
        if !waits {
            self.violation(format!("grew ({key:?}) with no unowned task waiting"));
        }
    }

    /// Which engine each task's placed requests are on (a violation if two).
    fn task_owners(&self) -> BTreeMap<String, EngineKey> {
        let mut owners = BTreeMap::new();
        for (id, m) in &self.meta {
            if let Some(k) = self.core.place(*id).and_then(Place::engine) {
                owners.insert(m.task.clone(), k);
            }
        }
        owners
    }

    fn check_tasks(&mut self) {
        let mut owners: BTreeMap<String, EngineKey> = BTreeMap::new();
        let mut bad = Vec::new();
        for (id, m) in &self.meta {
            if let Some(k) = self.core.place(*id).and_then(Place::engine)
                && let Some(prev) = owners.insert(m.task.clone(), k)
                && prev != k
            {
                bad.push(format!("task {} on {prev:?} and {k:?}", m.task));
            }
        }
        for b in bad {
            self.violation(b);
        }
    }

    fn sub(&mut self, r: Request<FakeJob>) -> Submission<P> {
        Submission {
            payload: (r.job, ()),
            priority: r.priority,
            session: r.session,
            task: r.task,
            preemptible: r.preemptible,
            model: r.model,
        }
    }

    fn note_running(&mut self, ids: &[JobId]) {
        for &id in ids {
            if let Some(Place::Running(k) | Place::Admitting(k)) = self.core.place(id) {
                let calls = self.engines.get(&k).map_or(0, |e| e.step_calls);
                let tokens = self.chunks.get(&id).map_or(0, Vec::len);
                self.stopped.entry(id).or_insert(Stopped {
                    engine: k,
                    step_calls: calls,
                    tokens,
                });
            }
        }
    }

    fn live_of_sessions(&self, sessions: &[Option<String>]) -> Vec<JobId> {
        // The session index is the core's; the simulation finds live requests by the last
        // submitted id of each session.
        let mut out = Vec::new();
        for s in sessions.iter().flatten() {
            if let Some(id) = self.session_last.get(s)
                && self.core.place(*id).is_some()
            {
                out.push(*id);
            }
        }
        out
    }

    pub fn submit(&mut self, r: Request<FakeJob>) -> Result<JobId, SchedError> {
        let before = self.live_of_sessions(std::slice::from_ref(&r.session));
        self.note_running(&before);
        let (band, preemptible, label, session) =
            (r.priority, r.preemptible, r.task.clone(), r.session.clone());
        let s = self.sub(r);
        let res = self.core.submit(s, self.now);
        let acc = match res {
            Ok(a) => a,
            Err(e) => {
                self.after_op();
                return Err(e);
            }
        };
        let id = acc.ids[0];
        let model = self.model_index(&acc.model);
        let task = label.map(|l| format!("{model}/{l}")).unwrap_or_else(|| {
            self.next_anon += 1;
            format!("anon-{}", self.next_anon)
        });
        self.meta.insert(
            id,
            Meta {
                band,
                task,
                preemptible,
                model,
            },
        );
        if let Some(s) = session {
            self.session_last.insert(s, id);
        }
        for (_, r) in acc.resolved {
            self.record_resolved(r, None);
        }
        self.after_op();
        Ok(id)
    }

    pub fn batch(&mut self, reqs: Vec<Request<FakeJob>>) -> Result<Vec<JobId>, SchedError> {
        let sessions: Vec<Option<String>> = reqs.iter().map(|r| r.session.clone()).collect();
        let before = self.live_of_sessions(&sessions);
        self.note_running(&before);
        let metas: Vec<(Priority, bool)> =
            reqs.iter().map(|r| (r.priority, r.preemptible)).collect();
        let label = reqs.first().and_then(|r| r.task.clone());
        let subs: Vec<_> = reqs.into_iter().map(|r| self.sub(r)).collect();
        let acc = match self.core.submit_batch(subs, self.now) {
            Ok(a) => a,
            Err(e) => {
                self.after_op();
                return Err(e);
            }
        };
        let model = self.model_index(&acc.model);
        self.next_anon += 1;
        let task = label
            .map(|l| format!("{model}/{l}"))
            .unwrap_or_else(|| format!("batch-{}", self.next_anon));
        for (id, (band, preemptible)) in acc.ids.iter().zip(metas) {
            self.meta.insert(
                *id,
                Meta {
                    band,
                    task: task.clone(),
                    preemptible,
                    model,
                },
            );
        }
        for (id, s) in acc.ids.iter().zip(sessions) {
            if let Some(s) = s {
                self.session_last.insert(s, *id);
            }
        }
        for (_, r) in acc.resolved {
            self.record_resolved(r, None);
        }
        self.after_op();
        Ok(acc.ids)
    }

    fn model_index(&self, name: &str) -> usize {
        (0..)
            .take(64)
            .find(|&i| self.core.model_name(i).as_deref() == Some(name))
            .unwrap_or(0)
    }

    pub fn cancel(&mut self, target: Target) -> usize {
        let ids: Vec<JobId> = match &target {
            Target::Id(id) => vec![*id],
            Target::Session(s) => self.live_of_sessions(&[Some(s.clone())]),
            Target::Task(label) => {
                let suffix = format!("/{label}");
                self.meta
                    .iter()
                    .filter(|(_, m)| m.task.ends_with(&suffix))
                    .map(|(id, _)| *id)
                    .collect()
            }
        };
        self.note_running(&ids);
        let (n, resolved) = self.core.cancel(&target, self.now);
        for (_, r) in resolved {
            self.record_resolved(r, None);
        }
        self.cancelled_count += n;
        self.after_op();
        n
    }

    /// One step boundary of an engine. `false`: it was idle (nothing planned).
    pub fn boundary(&mut self, key: EngineKey) -> bool {
        let queued_before: Vec<JobId> = self
            .meta
            .keys()
            .copied()
            .filter(|id| self.core.place(*id) == Some(Place::Queued))
            .collect();
        let placed_before: BTreeMap<JobId, EngineKey> = self
            .meta
            .keys()
            .filter_map(|id| {
                self.core
                    .place(*id)
                    .and_then(Place::engine)
                    .map(|k| (*id, k))
            })
            .collect();
        let Some(plan) = self.core.plan_boundary(key, self.now) else {
            self.after_op();
            return false;
        };
        let admitted: Vec<JobId> = plan.admit.iter().map(|(id, _)| *id).collect();
        self.check_order(key, &queued_before, &placed_before, &plan.evict, &admitted);
        for id in &admitted {
            self.admissions.push((key, *id));
        }
        let steps = plan.decode_steps;
        let Some(engine) = self.engines.get_mut(&key) else {
            panic!("no engine {key:?}");
        };
        let exec::Executed {
            report,
            outputs,
            chunks,
            kept: _,
        } = exec::execute(engine, plan);
        if !report.finished.is_empty() || !chunks.is_empty() {
            self.now += Duration::from_millis(u64::from(steps));
        }
        let done = self.core.boundary_done(key, report, self.now);
        for (id, c) in chunks {
            if !done.muted.contains(&id) {
                self.chunks.entry(id).or_default().push(c);
            }
        }
        let victims: Vec<(JobId, JobId)> = done
            .resolved
            .iter()
            .filter_map(|r| match r.end {
                End::Preempted { by } => Some((r.id, by)),
                _ => None,
            })
            .collect();
        self.check_victims(key, &victims, &placed_before);
        let mut outputs: BTreeMap<JobId, Vec<u32>> = outputs.into_iter().collect();
        for r in done.resolved {
            let out = outputs.remove(&r.id);
            self.record_resolved(r, out);
        }
        for (_, r) in done.returned.into_iter().chain(done.dropped) {
            self.record_resolved(r, None);
        }
        if done.exit {
            self.engines.remove(&key);
        }
        self.check_tasks();
        self.after_op();
        true
    }

    /// The admission rule, checked on a plan: every admitted request was the
    /// highest-precedence one the engine could take, and no free slot was left while a
    /// request the engine could take waits.
    fn check_order(
        &mut self,
        key: EngineKey,
        queued_before: &[JobId],
        placed_before: &BTreeMap<JobId, EngineKey>,
        evict: &[JobId],
        admitted: &[JobId],
    ) {
        let limit = self.core.config().task_limit(self.slots);
        let prec = |m: &Meta, id: JobId| (std::cmp::Reverse(m.band.rank()), id);
        let still: Vec<JobId> = queued_before
            .iter()
            .copied()
            .filter(|id| !admitted.contains(id))
            .collect();
        for q in still {
            let Some(qm) = self.meta.get(&q).cloned() else {
                continue;
            };
            if qm.model != key.model {
                continue;
            }
            // q's task: where it is placed (before the plan), and how many slots it holds here.
            let mut owner: Option<EngineKey> = None;
            let mut here = 0;
            for (id, k) in placed_before {
                if self.meta.get(id).is_some_and(|m| m.task == qm.task) {
                    owner = Some(*k);
                    if *k == key {
                        here += 1;
                    }
                }
            }
            for a in admitted {
                let am = &self.meta[a];
                if am.task == qm.task && prec(am, *a) < prec(&qm, q) {
                    owner = Some(key);
                    here += 1;
                }
            }
            let eligible = owner.is_none_or(|o| o == key) && here < limit;
            if !eligible {
                continue;
            }
            for a in admitted {
                let am = &self.meta[a];
                if prec(&qm, q) < prec(am, *a) {
                    self.violations.push(format!(
                        "{key:?} admitted {a} ({}) while {q} ({}) waited and could run there",
                        am.band, qm.band
                    ));
                }
            }
            let held = self.core.batch_of(key).len() - evict.len();
            if held < self.slots {
                self.violations.push(format!(
                    "{key:?} left a slot free while {q} could run there"
                ));
            }
        }
    }

    /// The victim rule, checked on a boundary's preemptions: no job left running on the
    /// engine was a better victim for the same preemptor (a preemptible job of another task
    /// in a lower band, or in the same band and admitted later).
    fn check_victims(
        &mut self,
        key: EngineKey,
        victims: &[(JobId, JobId)],
        placed_before: &BTreeMap<JobId, EngineKey>,
    ) {
        let order: BTreeMap<JobId, usize> = self
            .events
            .iter()
            .filter_map(|e| match e {
                Event::Started { id, .. } => Some(*id),
                _ => None,
            })
            .enumerate()
            .map(|(i, id)| (id, i))
            .collect();
        let rank =
            |m: &Meta, id: JobId| (m.band.rank(), std::cmp::Reverse(order.get(&id).copied()));
        let mut bad = Vec::new();
        for (victim, by) in victims {
            let (Some(vm), Some(bm)) = (self.meta.get(victim), self.meta.get(by)) else {
                continue;
            };
            for w in self.core.batch_of(key) {
                let Some(wm) = self.meta.get(&w) else {
                    continue;
                };
                if self.core.place(w) == Some(Place::Running(key))
                    && placed_before.get(&w) == Some(&key)
                    && wm.preemptible
                    && wm.task != bm.task
                    && rank(wm, w) < rank(vm, *victim)
                {
                    bad.push(format!(
                        "{by} preempted {victim} while {w} was a better victim"
                    ));
                }
            }
        }
        self.violations.extend(bad);
    }

    /// Completes the background loads in flight: the first `loads_ok` succeed.
    pub fn finish_loads(&mut self) {
        for key in std::mem::take(&mut self.pending_loads) {
            if self.loads_ok > 0 {
                self.loads_ok -= 1;
                if self.core.engine_ready(key, self.slots) {
                    self.engines
                        .insert(key, FakeEngine::new(self.slots, self.pages));
                }
            } else {
                let (_, dropped) =
                    self.core
                        .engine_load_failed(key, &LoadFailure::Failed("oom".into()), self.now);
                self.load_failed.insert(key.model);
                for (_, r) in dropped {
                    self.record_resolved(r, None);
                }
            }
            self.after_op();
        }
    }

    /// Round-robin boundaries over every engine until all are idle and no load is pending
    /// (at most `rounds` rounds).
    pub fn run(&mut self, rounds: usize) {
        for _ in 0..rounds {
            let keys: Vec<EngineKey> = self.engines.keys().copied().collect();
            let mut busy = false;
            for k in keys {
                busy |= self.boundary(k);
            }
            if !self.pending_loads.is_empty() {
                self.finish_loads();
                busy = true;
            }
            if !busy {
                return;
            }
        }
    }

    /// The one outcome of a request (panics if it has none or several).
    pub fn outcome(&self, id: JobId) -> &Outcome<Vec<u32>> {
        let list = self
            .outcomes
            .get(&id)
            .unwrap_or_else(|| panic!("{id} has not resolved"));
        assert_eq!(list.len(), 1, "{id} resolved {} times", list.len());
        &list[0]
    }

    pub fn end(&self, id: JobId) -> End {
        self.outcome(id).end.clone()
    }

    /// The end-of-run checks: every request resolved exactly once, with one terminal event
    /// matching its outcome; cancel counts match; no violation recorded.
    pub fn finish(&mut self) {
        for id in self.meta.keys() {
            match self.outcomes.get(id).map(Vec::len) {
                Some(1) => {}
                n => self.violations.push(format!("{id}: resolved {n:?} times")),
            }
        }
        let mut terminal: BTreeMap<JobId, usize> = BTreeMap::new();
        for e in &self.events {
            let id = match e {
                Event::Finished { id }
                | Event::Cancelled { id }
                | Event::Preempted { id, .. }
                | Event::Superseded { id, .. }
                | Event::Failed { id, .. } => *id,
                _ => continue,
            };
            *terminal.entry(id).or_default() += 1;
        }
        for id in self.meta.keys() {
            if terminal.get(id) != Some(&1) {
                self.violations
                    .push(format!("{id}: {:?} terminal events", terminal.get(id)));
            }
        }
        let cancelled = self
            .outcomes
            .values()
            .flatten()
            .filter(|o| o.end == End::Cancelled)
            .count();
        if cancelled != self.cancelled_count {
            self.violations.push(format!(
                "cancel counted {} but {cancelled} resolved Cancelled",
                self.cancelled_count
            ));
        }
        if self.core.live() != 0 {
            self.violations
                .push(format!("{} requests still live", self.core.live()));
        }
    }

    pub fn assert_clean(&self) {
        assert!(
            self.violations.is_empty(),
            "violations:\n{}",
            self.violations.join("\n")
        );
    }
}
