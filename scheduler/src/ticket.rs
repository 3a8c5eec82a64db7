//! Handles on submitted requests: [`Ticket`] (one request) and [`BatchHandle`] (a batch).
//! Both can be waited on (blocking), and a `Ticket` is also a [`Future`] and takes a
//! completion callback, so async code never blocks a runtime thread on it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::engine::JobId;
use crate::outcome::Outcome;

type Callback<O> = Box<dyn FnOnce(Outcome<O>) + Send>;

enum State<O> {
    Waiting {
        waker: Option<Waker>,
        callback: Option<Callback<O>>,
    },
    Ready(Outcome<O>),
    Taken,
}

/// Where one request's outcome lands, shared by its ticket and the scheduler.
pub(crate) struct Slot<O> {
    state: Mutex<State<O>>,
    cv: Condvar,
}

impl<O> Slot<O> {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State::Waiting {
                waker: None,
                callback: None,
            }),
            cv: Condvar::new(),
        })
    }

    /// Resolves the slot; a second fill is ignored (a request resolves once).
    pub(crate) fn fill(&self, outcome: Outcome<O>) {
        let mut st = self.state.lock();
        let State::Waiting { waker, callback } = &mut *st else {
            return;
        };
        let waker = waker.take();
        if let Some(cb) = callback.take() {
            *st = State::Taken;
            drop(st);
            cb(outcome);
        } else {
            *st = State::Ready(outcome);
            drop(st);
            self.cv.notify_all();
        }
        if let Some(w) = waker {
            w.wake();
        }
    }

    fn take(&self) -> Option<Outcome<O>> {
        let mut st = self.state.lock();
        if !matches!(*st, State::Ready(_)) {
            return None;
        }
        match std::mem::replace(&mut *st, State::Taken) {
            State::Ready(o) => Some(o),
            _ => None,
        }
    }

    fn is_ready(&self) -> bool {
        matches!(*self.state.lock(), State::Ready(_))
    }
}

/// One submitted request. Resolves exactly once, with its [`Outcome`].
///
/// Three ways to get the outcome: [`wait`](Ticket::wait) (blocks the thread),
/// `.await` (a [`Future`]: never blocks, woken by the resolving thread), or
/// [`on_done`](Ticket::on_done) (a callback run on the resolving thread).
pub struct Ticket<O> {
    id: JobId,
    slot: Arc<Slot<O>>,
}

impl<O> std::fmt::Debug for Ticket<O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ticket")
            .field("id", &self.id)
            .field("resolved", &self.slot.is_ready())
            .finish()
    }
}

impl<O> Ticket<O> {
    pub(crate) fn new(id: JobId, slot: Arc<Slot<O>>) -> Self {
        Self { id, slot }
    }

    /// The request's id (for [`Target::Id`](crate::Target::Id)).
    pub fn id(&self) -> JobId {
        self.id
    }

    /// Whether the outcome is there (so [`wait`](Ticket::wait) would not block).
    pub fn is_resolved(&self) -> bool {
        self.slot.is_ready()
    }

    /// Blocks until the request resolves. Do not call it on an async runtime's thread
    /// (`.await` the ticket instead), nor from a scheduler callback.
    pub fn wait(self) -> Outcome<O> {
        let mut st = self.slot.state.lock();
        loop {
            if matches!(*st, State::Ready(_))
                && let State::Ready(o) = std::mem::replace(&mut *st, State::Taken)
            {
                return o;
            }
            self.slot.cv.wait(&mut st);
        }
    }

    /// Waits at most `timeout`; gives the ticket back if the request has not resolved.
    pub fn wait_timeout(self, timeout: Duration) -> Result<Outcome<O>, Self> {
        let deadline = Instant::now() + timeout;
        {
            let mut st = self.slot.state.lock();
            while !matches!(*st, State::Ready(_)) {
                if self.slot.cv.wait_until(&mut st, deadline).timed_out() {
                    break;
                }
            }
        }
        self.slot.take().ok_or(self)
    }

    /// The outcome if it is there, without blocking; otherwise the ticket back.
    pub fn try_take(self) -> Result<Outcome<O>, Self> {
        self.slot.take().ok_or(self)
    }

    /// Runs `f` with the outcome when the request resolves, on the thread that resolves it
    /// (an engine's worker: keep `f` short and non-blocking), or right now on this thread if
    /// it already has.
    pub fn on_done(self, f: impl FnOnce(Outcome<O>) + Send + 'static) {
        let mut st = self.slot.state.lock();
        match &mut *st {
            State::Waiting { callback, .. } => *callback = Some(Box::new(f)),
            State::Ready(_) => {
                if let State::Ready(o) = std::mem::replace(&mut *st, State::Taken) {
                    drop(st);
                    f(o);
                }
            }
            State::Taken => {}
        }
    }
}

impl<O> Future for Ticket<O> {
    type Output = Outcome<O>;

    /// Ready once, with the outcome; a ticket polled again after that stays pending.
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Outcome<O>> {
        let mut st = self.slot.state.lock();
        match &mut *st {
            State::Waiting { waker, .. } => {
                *waker = Some(cx.waker().clone());
                Poll::Pending
            }
            State::Ready(_) => match std::mem::replace(&mut *st, State::Taken) {
                State::Ready(o) => Poll::Ready(o),
                _ => Poll::Pending,
            },
            State::Taken => Poll::Pending,
        }
    }
}

/// The requests of one [`batch`](crate::Scheduler::batch), in the order given.
pub struct BatchHandle<O> {
    task: Option<String>,
    tickets: Vec<Ticket<O>>,
}

impl<O> std::fmt::Debug for BatchHandle<O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchHandle")
            .field("task", &self.task)
            .field("tickets", &self.tickets)
            .finish()
    }
}

impl<O> BatchHandle<O> {
    pub(crate) fn new(task: Option<String>, tickets: Vec<Ticket<O>>) -> Self {
        Self { task, tickets }
    }

    /// The batch's task label, if its requests carried one (then
    /// [`Target::Task`](crate::Target::Task) cancels the whole batch).
    pub fn task(&self) -> Option<&str> {
        self.task.as_deref()
    }

    /// The requests' ids, by item index.
    pub fn ids(&self) -> Vec<JobId> {
        self.tickets.iter().map(Ticket::id).collect()
    }

    /// How many requests.
    pub fn len(&self) -> usize {
        self.tickets.len()
    }

    /// Whether the batch was empty.
    pub fn is_empty(&self) -> bool {
        self.tickets.is_empty()
    }

    /// Blocks until every item resolves; the outcomes by item index.
    pub fn wait(self) -> Vec<Outcome<O>> {
        self.tickets.into_iter().map(Ticket::wait).collect()
    }

    /// The items' tickets, by index (each a [`Future`]).
    pub fn into_tickets(self) -> Vec<Ticket<O>> {
        self.tickets
    }
}
