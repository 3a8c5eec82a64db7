//! The threaded driver: [`Scheduler`], the [`Core`] behind one mutex, a worker thread per
//! engine, a thread per background load and one thread that delivers events.

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Weak, mpsc};
use std::thread::{self, JoinHandle};
use std::time::Instant;

use parking_lot::{Condvar, Mutex};

use crate::config::Config;
use crate::core::{BeginLoad, Core, EngineKey, LoadOrder, Resolved, Submission};
use crate::engine::{Engine, EngineLoader, JobId, LoadFailure};
use crate::error::SchedError;
use crate::exec;
use crate::outcome::{End, Event, Outcome};
use crate::request::{Request, Target};
use crate::status::{EngineState, Status};
use crate::ticket::{BatchHandle, Slot, Ticket};

type JobOf<L> = <<L as EngineLoader>::Engine as Engine>::Job;
type ChunkOf<L> = <<L as EngineLoader>::Engine as Engine>::Chunk;
type OutputOf<L> = <<L as EngineLoader>::Engine as Engine>::Output;
type OnItem<O> = Arc<Mutex<Box<dyn FnMut(usize, &Outcome<O>) + Send>>>;
type Subscriber = Arc<dyn Fn(&Event) + Send + Sync>;
type Subscribers = Mutex<Vec<(u64, Subscriber)>>;

/// Where one request's results go: its chunk callback, its ticket, its batch's callback.
struct Sink<E: Engine> {
    id: JobId,
    model: Arc<str>,
    index: Option<usize>,
    queued_at: Instant,
    on_chunk: Option<Box<dyn FnMut(E::Chunk) + Send>>,
    on_item: Option<OnItem<E::Output>>,
    slot: Arc<Slot<E::Output>>,
    done: bool,
}

impl<E: Engine> Sink<E> {
    fn chunk(&mut self, chunk: E::Chunk) {
        if let Some(f) = &mut self.on_chunk {
            // A panicking callback must not take the engine's worker down with it.
            let _ = catch_unwind(AssertUnwindSafe(|| f(chunk)));
        }
    }

    fn resolve(mut self, outcome: Outcome<E::Output>) {
        self.done = true;
        self.on_chunk = None;
        if let (Some(cb), Some(index)) = (&self.on_item, outcome.index) {
            let mut f = cb.lock();
            let _ = catch_unwind(AssertUnwindSafe(|| (f)(index, &outcome)));
        }
        self.slot.fill(outcome);
    }
}

impl<E: Engine> Drop for Sink<E> {
    /// A sink dropped unresolved (a thread died) still resolves its ticket, so no waiter
    /// hangs.
    fn drop(&mut self) {
        if !self.done {
            let now = Instant::now();
            self.slot.fill(Outcome {
                id: self.id,
                index: self.index,
                model: self.model.clone(),
                engine: None,
                queued_at: self.queued_at,
                started_at: None,
                finished_at: now,
                end: End::Failed(SchedError::ShutDown),
                output: None,
            });
        }
    }
}

type Pending<E> = (<E as Engine>::Job, Sink<E>);

fn resolve_all<E: Engine>(list: Vec<(Pending<E>, Resolved)>) {
    for ((_job, sink), r) in list {
        sink.resolve(r.into_outcome(None));
    }
}

struct Inner<L: EngineLoader> {
    loader: L,
    core: Mutex<Core<Pending<L::Engine>>>,
    cv: Condvar,
    events: Mutex<Option<mpsc::Sender<Event>>>,
    subscribers: Arc<Subscribers>,
    next_subscriber: Mutex<u64>,
    workers: Mutex<Vec<JoinHandle<()>>>,
    dispatcher: Mutex<Option<JoinHandle<()>>>,
}

impl<L: EngineLoader> Inner<L> {
    /// Hands the core's events to the dispatcher (in order: called under the core lock) and
    /// returns its load orders.
    fn flush(&self, core: &mut Core<Pending<L::Engine>>) -> Vec<LoadOrder> {
        let events = core.take_events();
        if !events.is_empty()
            && let Some(tx) = &*self.events.lock()
        {
            for e in events {
                let _ = tx.send(e);
            }
        }
        core.take_loads()
    }

    /// Starts a background thread per load order.
    fn start_loads(self: &Arc<Self>, loads: Vec<LoadOrder>) {
        for order in loads {
            let inner = Arc::clone(self);
            let key = order.key;
            let spawned = thread::Builder::new()
                .name(format!("gpuport-load-{}", order.model))
                .spawn(move || {
                    let result = load_engine(&inner.loader, &order.model);
                    inner.finish_load(key, result);
                });
            if let Err(e) = spawned {
                self.finish_load(
                    key,
                    Err(LoadFailure::Failed(format!(
                        "could not start the load thread: {e}"
                    ))),
                );
            }
        }
    }

    /// A load is over: starts the engine's worker (which marks it ready), or records the
    /// failure. Returns the error a synchronous `load` reports.
    fn finish_load(
        self: &Arc<Self>,
        key: EngineKey,
        result: Result<L::Engine, LoadFailure>,
    ) -> Option<SchedError> {
        let failure = match result {
            Ok(engine) => match self.spawn_worker(key, engine) {
                Ok(()) => return None,
                Err(e) => LoadFailure::Failed(format!("could not start the engine's thread: {e}")),
            },
            Err(f) => f,
        };
        let (err, dropped, loads) = {
            let mut core = self.core.lock();
            let (err, dropped) = core.engine_load_failed(key, &failure, Instant::now());
            (err, dropped, self.flush(&mut core))
        };
        self.cv.notify_all();
        self.start_loads(loads);
        resolve_all(dropped);
        Some(err)
    }

    fn spawn_worker(self: &Arc<Self>, key: EngineKey, engine: L::Engine) -> std::io::Result<()> {
        let inner = Arc::clone(self);
        let name = {
            let core = self.core.lock();
            format!(
                "gpuport-engine-{}-{}",
                core.model_name(key.model).unwrap_or_default(),
                key.engine
            )
        };
        let handle = thread::Builder::new()
            .name(name)
            .spawn(move || worker(inner, key, engine))?;
        let mut workers = self.workers.lock();
        workers.retain(|h| !h.is_finished());
        workers.push(handle);
        Ok(())
    }
}

fn load_engine<L: EngineLoader>(loader: &L, model: &str) -> Result<L::Engine, LoadFailure> {
    catch_unwind(AssertUnwindSafe(|| loader.load(model)))
        .unwrap_or_else(|_| Err(LoadFailure::Failed("the loader panicked".into())))
}

/// One engine's thread: it owns the engine and runs its step boundaries until the engine
/// fails or the scheduler shuts down.
fn worker<L: EngineLoader>(inner: Arc<Inner<L>>, key: EngineKey, mut engine: L::Engine) {
    let slots = catch_unwind(AssertUnwindSafe(|| engine.slots())).unwrap_or(0);
    if slots == 0 {
        inner.finish_load(
            key,
            Err(LoadFailure::Failed("the engine reports 0 slots".into())),
        );
        return;
    }
    let (ready, loads) = {
        let mut core = inner.core.lock();
        let ready = core.engine_ready(key, slots);
        (ready, inner.flush(&mut core))
    };
    inner.cv.notify_all();
    inner.start_loads(loads);
    if !ready {
        return;
    }
    let mut sinks: HashMap<JobId, Sink<L::Engine>> = HashMap::new();
    loop {
        // Lock → plan (or sleep until something changes) → unlock.
        let plan = {
            let mut core = inner.core.lock();
            loop {
                if let Some(plan) = core.plan_boundary(key, Instant::now()) {
                    break plan;
                }
                inner.cv.wait(&mut core);
            }
        };
        // Evict, admit, step: outside the lock.
        let exec::Executed {
            report,
            outputs,
            chunks,
            kept,
        } = exec::execute(&mut engine, plan);
        sinks.extend(kept);
        let pages = catch_unwind(AssertUnwindSafe(|| engine.kv_pages())).unwrap_or(None);
        // Lock → apply → unlock.
        let (done, loads) = {
            let mut core = inner.core.lock();
            core.set_kv_pages(key, pages);
            let done = core.boundary_done(key, report, Instant::now());
            (done, inner.flush(&mut core))
        };
        inner.cv.notify_all();
        inner.start_loads(loads);
        // Deliver, outside the lock: chunks first, then outcomes.
        for (id, c) in chunks {
            if !done.muted.contains(&id)
                && let Some(s) = sinks.get_mut(&id)
            {
                s.chunk(c);
            }
        }
        let mut outputs: HashMap<JobId, OutputOf<L>> = outputs.into_iter().collect();
        for r in done.resolved {
            let out = outputs.remove(&r.id);
            if let Some(s) = sinks.remove(&r.id) {
                s.resolve(r.into_outcome(out));
            }
        }
        resolve_all(done.returned);
        resolve_all(done.dropped);
        if done.exit {
            return;
        }
    }
}

/// Runs requests on a pool of engines per model, by the scheduling rules of this crate (see
/// the [crate docs](crate)). Thread-safe and cheap to clone: every clone is a handle on the
/// same scheduler. When the last handle is dropped the scheduler shuts down: requests still
/// waiting resolve with `SHUT_DOWN`, running ones are evicted at their engine's next boundary
/// and resolve with `SHUT_DOWN` and their partial output, and the engine threads are joined
/// (so the drop waits for at most one step call per engine; a load in progress is not waited
/// for — its engine is dropped when it arrives).
///
/// Callbacks (chunks, batch items, completions, subscribers) run on the scheduler's threads,
/// never under its lock: they may call back into the scheduler (`cancel`, `status`,
/// `complete`) but should not block, since a chunk callback holds up its engine's batch.
/// A panic in a callback is caught and ignored.
pub struct Scheduler<L: EngineLoader> {
    owner: Arc<Owner<L>>,
}

impl<L: EngineLoader> Clone for Scheduler<L> {
    fn clone(&self) -> Self {
        Self {
            owner: Arc::clone(&self.owner),
        }
    }
}

impl<L: EngineLoader> std::fmt::Debug for Scheduler<L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scheduler")
            .field("status", &self.status())
            .finish()
    }
}

/// The user handles' shared part: dropping it shuts the scheduler down. The threads hold
/// `Inner` only, so they never keep the scheduler alive.
struct Owner<L: EngineLoader> {
    inner: Arc<Inner<L>>,
}

impl<L: EngineLoader> Drop for Owner<L> {
    fn drop(&mut self) {
        let inner = &self.inner;
        let dropped = {
            let mut core = inner.core.lock();
            let dropped = core.shutdown(Instant::now());
            inner.flush(&mut core);
            dropped
        };
        inner.cv.notify_all();
        resolve_all(dropped);
        // The last handle may be dropped on one of our own threads (a callback held it):
        // never join the current thread.
        let me = thread::current().id();
        let workers = std::mem::take(&mut *inner.workers.lock());
        for h in workers {
            if h.thread().id() != me {
                let _ = h.join();
            }
        }
        drop(inner.events.lock().take());
        if let Some(h) = inner.dispatcher.lock().take()
            && h.thread().id() != me
        {
            let _ = h.join();
        }
    }
}

/// A subscription to [`Event`]s; dropping it (or [`unsubscribe`](Subscription::unsubscribe))
/// stops them. After that, at most the event being delivered at that moment still reaches
/// the callback.
pub struct Subscription {
    subscribers: Weak<Subscribers>,
    id: u64,
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("id", &self.id)
            .finish()
    }
}

impl Subscription {
    /// Stops the events (the same as dropping it).
    pub fn unsubscribe(self) {}
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if let Some(subs) = self.subscribers.upgrade() {
            subs.lock().retain(|(id, _)| *id != self.id);
        }
    }
}

impl<L: EngineLoader> Scheduler<L> {
    /// A scheduler with no model loaded. Fails with `BAD_REQUEST` for a bad config, or
    /// `INTERNAL` if its event thread cannot start.
    pub fn new(loader: L, config: Config) -> Result<Self, SchedError> {
        let core = Core::new(config)?;
        let (tx, rx) = mpsc::channel::<Event>();
        let subscribers: Arc<Subscribers> = Arc::new(Mutex::new(Vec::new()));
        let subs = Arc::clone(&subscribers);
        let dispatcher = thread::Builder::new()
            .name("gpuport-sched-events".into())
            .spawn(move || {
                for event in rx {
                    let list: Vec<Subscriber> =
                        subs.lock().iter().map(|(_, f)| Arc::clone(f)).collect();
                    for f in list {
                        let _ = catch_unwind(AssertUnwindSafe(|| f(&event)));
                    }
                }
            })
            .map_err(|e| SchedError::Internal {
                reason: format!("could not start the event thread: {e}"),
            })?;
        let inner = Arc::new(Inner {
            loader,
            core: Mutex::new(core),
            cv: Condvar::new(),
            events: Mutex::new(Some(tx)),
            subscribers,
            next_subscriber: Mutex::new(0),
            workers: Mutex::new(Vec::new()),
            dispatcher: Mutex::new(Some(dispatcher)),
        });
        Ok(Self {
            owner: Arc::new(Owner { inner }),
        })
    }

    fn inner(&self) -> &Arc<Inner<L>> {
        &self.owner.inner
    }

    /// Loads the model's first engine, on this thread, and returns once it is ready (or at
    /// once if the model has a ready engine; if its first engine is loading on another
    /// thread, waits for that). Later engines of the model are loaded in the background,
    /// when the pool needs to grow. Fails with `UNKNOWN_MODEL`, `LOAD_FAILED` or
    /// `SHUT_DOWN`. A failed first load leaves no trace: `load` may be called again.
    pub fn load(&self, model: &str) -> Result<(), SchedError> {
        let inner = self.inner();
        loop {
            let order = {
                let mut core = inner.core.lock();
                let begin = core.begin_load(model);
                let loads = inner.flush(&mut core);
                drop(core);
                inner.start_loads(loads);
                match begin? {
                    BeginLoad::Loaded => return Ok(()),
                    BeginLoad::InProgress => {
                        let mut core = inner.core.lock();
                        while core.first_load_pending(model) {
                            inner.cv.wait(&mut core);
                        }
                        continue;
                    }
                    BeginLoad::Load(order) => order,
                }
            };
            let result = load_engine(&inner.loader, model);
            if let Some(err) = inner.finish_load(order.key, result) {
                return Err(err);
            }
            let mut core = inner.core.lock();
            loop {
                match core.engine_state(order.key) {
                    Some(EngineState::Loading) => inner.cv.wait(&mut core),
                    Some(EngineState::Ready) => return Ok(()),
                    _ if core.is_shut_down() => return Err(SchedError::ShutDown),
                    _ => {
                        return Err(SchedError::LoadFailed {
                            model: model.to_owned(),
                            reason: "the engine reports 0 slots".into(),
                        });
                    }
                }
            }
        }
    }

    /// Submits one request. `on_chunk` receives its streamed chunks, in order, on its
    /// engine's thread; the [`Ticket`] resolves once with the [`Outcome`]. Fails at once —
    /// nothing queued, no events — with `NO_MODEL` (nothing loaded, or the model named is
    /// not), `QUEUE_FULL` (its band is at its cap) or `SHUT_DOWN`.
    pub fn complete(
        &self,
        req: Request<JobOf<L>>,
        on_chunk: impl FnMut(ChunkOf<L>) + Send + 'static,
    ) -> Result<Ticket<OutputOf<L>>, SchedError> {
        let on_chunk: Box<dyn FnMut(ChunkOf<L>) + Send> = Box::new(on_chunk);
        let mut tickets = self.submit(vec![req], Some(on_chunk), None, false)?.1;
        tickets.pop().ok_or_else(|| SchedError::Internal {
            reason: "no ticket".into(),
        })
    }

    /// Submits many independent requests as **one task**: they share one engine at a time
    /// and at most its task share of that engine's slots, so a large batch leaves room for
    /// whoever comes next. `on_item(index, outcome)` runs as each item resolves (before its
    /// ticket does); outcomes carry the item index, the engine and the start and finish
    /// instants. Items do not stream chunks. The task is the items' label if they carry
    /// one (all the same, or `BAD_REQUEST`), else anonymous. Accepted whole or not at all,
    /// with the errors of [`complete`](Scheduler::complete).
    pub fn batch(
        &self,
        reqs: Vec<Request<JobOf<L>>>,
        on_item: impl FnMut(usize, &Outcome<OutputOf<L>>) + Send + 'static,
    ) -> Result<BatchHandle<OutputOf<L>>, SchedError> {
        let on_item: OnItem<OutputOf<L>> = Arc::new(Mutex::new(Box::new(on_item)));
        let (task, tickets) = self.submit(reqs, None, Some(on_item), true)?;
        Ok(BatchHandle::new(task, tickets))
    }

    #[allow(clippy::type_complexity)]
    fn submit(
        &self,
        reqs: Vec<Request<JobOf<L>>>,
        mut on_chunk: Option<Box<dyn FnMut(ChunkOf<L>) + Send>>,
        on_item: Option<OnItem<OutputOf<L>>>,
        batch: bool,
    ) -> Result<(Option<String>, Vec<Ticket<OutputOf<L>>>), SchedError> {
        let inner = self.inner();
        let now = Instant::now();
        let (accepted, tickets, loads) = {
            let mut core = inner.core.lock();
            let model = core.model_for(reqs.first().and_then(|r| r.model.as_deref()))?;
            let first = core.next_id().get();
            let mut tickets = Vec::with_capacity(reqs.len());
            let subs: Vec<_> = reqs
                .into_iter()
                .enumerate()
                .map(|(i, r)| {
                    let id = JobId(first + i as u64);
                    let slot = Slot::new();
                    tickets.push(Ticket::new(id, Arc::clone(&slot)));
                    let sink = Sink {
                        id,
                        model: model.clone(),
                        index: batch.then_some(i),
                        queued_at: now,
                        on_chunk: on_chunk.take(),
                        on_item: on_item.clone(),
                        slot,
                        done: false,
                    };
                    Submission {
                        payload: (r.job, sink),
                        priority: r.priority,
                        session: r.session,
                        task: r.task,
                        preemptible: r.preemptible,
                        model: r.model,
                    }
                })
                .collect();
            let accepted = match (batch, subs.len()) {
                (false, 1) => subs.into_iter().next().map(|s| core.submit(s, now)),
                _ => Some(core.submit_batch(subs, now)),
            };
            let accepted = accepted.ok_or_else(|| SchedError::Internal {
                reason: "no request".into(),
            })?;
            let accepted = match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Dropping the refused sinks fills their (discarded) tickets; nothing
                    // else observes them.
                    return Err(e);
                }
            };
            let loads = inner.flush(&mut core);
            (accepted, tickets, loads)
        };
        inner.cv.notify_all();
        inner.start_loads(loads);
        resolve_all(accepted.resolved);
        Ok((accepted.task, tickets))
    }

    /// Stops the target's live requests and returns exactly how many it stopped (a request
    /// already resolved, or already being stopped, does not count). A queued one resolves
    /// now; a running one at its engine's next step boundary — within one step call —
    /// with its partial output. Every request counted resolves as [`End::Cancelled`].
    pub fn cancel(&self, target: Target) -> usize {
        let inner = self.inner();
        let ((count, resolved), loads) = {
            let mut core = inner.core.lock();
            let r = core.cancel(&target, Instant::now());
            (r, inner.flush(&mut core))
        };
        inner.cv.notify_all();
        inner.start_loads(loads);
        resolve_all(resolved);
        count
    }

    /// Calls `f` with every [`Event`] from now on, in the order of the changes, on the
    /// scheduler's event thread (one thread for every subscriber: keep `f` quick). Drop the
    /// [`Subscription`] to stop. A subscriber that holds a `Scheduler` handle keeps the
    /// scheduler alive until its subscription is dropped.
    pub fn subscribe(&self, f: impl Fn(&Event) + Send + Sync + 'static) -> Subscription {
        let inner = self.inner();
        let id = {
            let mut next = inner.next_subscriber.lock();
            *next += 1;
            *next
        };
        inner.subscribers.lock().push((id, Arc::new(f)));
        Subscription {
            subscribers: Arc::downgrade(&inner.subscribers),
            id,
        }
    }

    /// A snapshot: queue depth per band, requests running per engine, engines by state per
    /// model, `growth_blocked`, the counters.
    pub fn status(&self) -> Status {
        self.inner().core.lock().status()
    }

    /// Sets the decode steps per step call (K), live: each engine uses it from its next
    /// boundary. `BAD_REQUEST` for 0.
    pub fn configure(&self, decode_steps: u32) -> Result<(), SchedError> {
        self.inner().core.lock().set_decode_steps(decode_steps)
    }
}
