//! An exhaustive interleaving check of the driver's hand-offs (in place of loom).
//!
//! The threaded driver touches shared state only inside critical sections of one mutex, each
//! one call of the core: a client's `submit`/`cancel`/shutdown, a worker's `plan_boundary`
//! (then the engine calls, outside the lock, on the worker's own engine) and its
//! `boundary_done`, a load's `engine_ready`/`engine_load_failed`. A worker whose plan is
//! `None` sleeps on the condvar in the same critical section, and is woken by the
//! `notify_all` that follows every other critical section but a plan. So the schedules that
//! matter are the orders of those sections, and this test runs every one of them for small
//! scenarios (a depth-first search, replaying each schedule from the start), modelling
//! exactly that wait/notify discipline. In every schedule: the core's invariants hold after
//! every section; when no thread can run, nothing is left unresolved (no lost wake-up, no
//! request stranded between a plan and its report), every accepted request resolved exactly
//! once, the cancel counts add up, and after a shutdown every worker has exited.
#![allow(clippy::unwrap_used)] // helpers outside #[test] fns unwrap too

mod common;

use std::collections::{BTreeMap, VecDeque};
use std::time::Instant;

use common::{FakeEngine, FakeJob};
use gpuport_scheduler::core::{BeginLoad, Core, EngineKey, Plan, Resolved, Submission};
use gpuport_scheduler::{Config, End, JobId, LoadFailure, Priority, Request, Target, exec};

type P = (FakeJob, ());

#[derive(Clone)]
enum ClientOp {
    Submit(Request<FakeJob>),
    Cancel(Target),
    Shutdown,
}

#[derive(Clone)]
enum WorkerState {
    Plan,
    Executing(Plan<P>),
    Blocked,
    Exited,
}

#[derive(Clone)]
enum Thread {
    Client(VecDeque<ClientOp>),
    Worker(EngineKey, WorkerState),
    Loader,
}

#[derive(Clone)]
struct World {
    core: Core<P>,
    engines: BTreeMap<EngineKey, FakeEngine>,
    threads: Vec<Thread>,
    pending_loads: VecDeque<EngineKey>,
    loads_ok: bool,
    slots: usize,
    resolutions: BTreeMap<JobId, usize>,
    ends: Vec<End>,
    accepted: Vec<JobId>,
    cancelled: usize,
    now: Instant,
    trace: Vec<String>,
}

impl World {
    fn new(cfg: Config, slots: usize, loads_ok: bool, clients: Vec<Vec<ClientOp>>) -> Self {
        let mut core = Core::new(cfg).expect("config");
        let Ok(BeginLoad::Load(order)) = core.begin_load("m") else {
            panic!("first load")
        };
        assert!(core.engine_ready(order.key, slots));
        let mut engines = BTreeMap::new();
        engines.insert(order.key, FakeEngine::new(slots, 100));
        let mut threads: Vec<Thread> = clients
            .into_iter()
            .map(|ops| Thread::Client(ops.into()))
            .collect();
        threads.push(Thread::Worker(order.key, WorkerState::Plan));
        threads.push(Thread::Loader);
        Self {
            core,
            engines,
            threads,
            pending_loads: VecDeque::new(),
            loads_ok,
            slots,
            resolutions: BTreeMap::new(),
            ends: Vec::new(),
            accepted: Vec::new(),
            cancelled: 0,
            now: Instant::now(),
            trace: Vec::new(),
        }
    }

    fn runnable(&self) -> Vec<usize> {
        (0..self.threads.len())
            .filter(|&i| match &self.threads[i] {
                Thread::Client(ops) => !ops.is_empty(),
                Thread::Worker(_, WorkerState::Plan | WorkerState::Executing(_)) => true,
                Thread::Worker(_, _) => false,
                Thread::Loader => !self.pending_loads.is_empty(),
            })
            .collect()
    }

    fn resolved(&mut self, r: Resolved) {
        *self.resolutions.entry(r.id).or_default() += 1;
        self.ends.push(r.end);
    }

    /// One critical section of thread `t`.
    fn step(&mut self, t: usize) {
        let mut notify = true;
        match &mut self.threads[t] {
            Thread::Client(ops) => {
                let op = ops.pop_front().expect("runnable client");
                match op {
                    ClientOp::Submit(r) => {
                        self.trace.push(format!("T{t} submit"));
                        let sub = Submission {
                            payload: (r.job, ()),
                            priority: r.priority,
                            session: r.session,
                            task: r.task,
                            preemptible: r.preemptible,
                            model: r.model,
                        };
                        if let Ok(acc) = self.core.submit(sub, self.now) {
                            self.accepted.extend(&acc.ids);
                            for (_, r) in acc.resolved {
                                self.resolved(r);
                            }
                        }
                    }
                    ClientOp::Cancel(target) => {
                        self.trace.push(format!("T{t} cancel {target:?}"));
                        let (n, list) = self.core.cancel(&target, self.now);
                        self.cancelled += n;
                        for (_, r) in list {
                            self.resolved(r);
                        }
                    }
                    ClientOp::Shutdown => {
                        self.trace.push(format!("T{t} shutdown"));
                        for (_, r) in self.core.shutdown(self.now) {
                            self.resolved(r);
                        }
                    }
                }
            }
            Thread::Worker(key, state) => {
                let key = *key;
                match std::mem::replace(state, WorkerState::Plan) {
                    WorkerState::Plan => {
                        notify = false;
                        match self.core.plan_boundary(key, self.now) {
                            Some(plan) => {
                                self.trace.push(format!(
                                    "T{t} plan {:?} {:?}",
                                    plan.evict,
                                    plan.admit.len()
                                ));
                                *state = WorkerState::Executing(plan);
                            }
                            None => {
                                self.trace.push(format!("T{t} sleeps"));
                                *state = WorkerState::Blocked;
                            }
                        }
                    }
                    WorkerState::Executing(plan) => {
                        self.trace.push(format!("T{t} done"));
                        let engine = self.engines.get_mut(&key).expect("the worker's engine");
                        let ex = exec::execute(engine, plan);
                        let done = self.core.boundary_done(key, ex.report, self.now);
                        for r in done.resolved {
                            self.resolved(r);
                        }
                        for (_, r) in done.returned.into_iter().chain(done.dropped) {
                            self.resolved(r);
                        }
                        if done.exit {
                            self.engines.remove(&key);
                            if let Thread::Worker(_, s) = &mut self.threads[t] {
                                *s = WorkerState::Exited;
                            }
                        }
                    }
                    other => *state = other,
                }
            }
            Thread::Loader => {
                let key = self.pending_loads.pop_front().expect("a pending load");
                self.trace
                    .push(format!("T{t} load {key:?} ok={}", self.loads_ok));
                if self.loads_ok {
                    if self.core.engine_ready(key, self.slots) {
                        self.engines.insert(key, FakeEngine::new(self.slots, 100));
                        self.threads.push(Thread::Worker(key, WorkerState::Plan));
                    }
                } else {
                    let (_, dropped) = self.core.engine_load_failed(
                        key,
                        &LoadFailure::Failed("oom".into()),
                        self.now,
                    );
                    for (_, r) in dropped {
                        self.resolved(r);
                    }
                }
            }
        }
        self.pending_loads
            .extend(self.core.take_loads().into_iter().map(|o| o.key));
        self.core.take_events();
        if let Err(e) = self.core.check() {
            panic!("invariant broken: {e}\n{}", self.trace.join("\n"));
        }
        if notify {
            for th in &mut self.threads {
                if let Thread::Worker(_, s @ WorkerState::Blocked) = th {
                    *s = WorkerState::Plan;
                }
            }
        }
    }

    fn check_final(&self) {
        let fail = |what: String| panic!("{what}\nschedule:\n{}", self.trace.join("\n"));
        if self.core.live() != 0 {
            fail(format!(
                "{} requests stranded with every thread asleep",
                self.core.live()
            ));
        }
        for id in &self.accepted {
            if self.resolutions.get(id) != Some(&1) {
                fail(format!(
                    "{id} resolved {:?} times",
                    self.resolutions.get(id)
                ));
            }
        }
        if self.resolutions.len() != self.accepted.len() {
            fail("a resolution for a request never accepted".into());
        }
        let cancelled = self.ends.iter().filter(|e| **e == End::Cancelled).count();
        if cancelled != self.cancelled {
            fail(format!(
                "cancel counted {} but {cancelled} resolved Cancelled",
                self.cancelled
            ));
        }
        if self.core.is_shut_down() {
            for th in &self.threads {
                if let Thread::Worker(k, s) = th
                    && !matches!(s, WorkerState::Exited)
                {
                    fail(format!("worker {k:?} still running after shutdown"));
                }
            }
        }
    }
}

/// Runs every schedule of the scenario (depth first, cloning the world at each branch);
/// returns how many.
fn explore(world: World) -> usize {
    fn dfs(w: World, count: &mut usize) {
        let runnable = w.runnable();
        if runnable.is_empty() {
            w.check_final();
            *count += 1;
            assert!(*count < 100_000, "scenario too large to explore");
            return;
        }
        for t in runnable {
            let mut next = w.clone();
            next.step(t);
            dfs(next, count);
        }
    }
    let mut count = 0;
    dfs(world, &mut count);
    count
}

fn req(tokens: u32) -> Request<FakeJob> {
    Request::new(FakeJob::new(tokens))
}

fn cfg() -> Config {
    Config {
        decode_steps: 1,
        task_share: 1.0,
        engines: 1,
        ..Config::default()
    }
}

/// Explores the scenario; it must have at least `min` schedules (so it tests something).
fn all_schedules(name: &str, world: World, min: usize) {
    let n = explore(world);
    eprintln!("{name}: {n} schedules");
    assert!(n >= min, "{name}: only {n} schedules");
}

#[test]
fn supersession_and_cancel_race_a_worker() {
    let clients = vec![
        vec![
            ClientOp::Submit(req(2).session("s")),
            ClientOp::Submit(req(1).session("s")),
        ],
        vec![
            ClientOp::Cancel(Target::Session("s".into())),
            ClientOp::Cancel(Target::Id(JobId(1))),
        ],
    ];
    all_schedules("supersession", World::new(cfg(), 1, true, clients), 100);
}

#[test]
fn preemption_and_shutdown_race_a_worker() {
    let clients = vec![
        vec![
            ClientOp::Submit(req(3).priority(Priority::Background).preemptible(true)),
            ClientOp::Submit(req(1).priority(Priority::Interactive)),
        ],
        vec![ClientOp::Submit(req(1)), ClientOp::Shutdown],
    ];
    all_schedules("preemption", World::new(cfg(), 1, true, clients), 100);
}

#[test]
fn growth_races_submissions_and_cancels() {
    for loads_ok in [true, false] {
        let clients = vec![
            vec![ClientOp::Submit(req(2))],
            vec![
                ClientOp::Submit(req(1).task("t")),
                ClientOp::Cancel(Target::Task("t".into())),
            ],
        ];
        let cfg = Config {
            engines: 2,
            ..cfg()
        };
        all_schedules("growth", World::new(cfg, 1, loads_ok, clients), 50);
    }
}

#[test]
fn shutdown_races_a_background_load() {
    let clients = vec![
        vec![ClientOp::Submit(req(2)), ClientOp::Submit(req(2))],
        vec![ClientOp::Shutdown],
    ];
    let cfg = Config {
        engines: 2,
        ..cfg()
    };
    all_schedules("shutdown", World::new(cfg, 1, true, clients), 10);
}
