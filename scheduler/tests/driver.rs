//! The threaded driver with fake engines on real threads (1 ms per step call).
#![allow(clippy::unwrap_used)] // helpers outside #[test] fns unwrap too

mod common;

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use common::{FakeJob, FakeLoader};
use gpuport_scheduler::{
    Config, End, EngineState, Event, JobId, PerBand, Priority, Request, SchedError, Scheduler,
    Subscription, Target, Ticket,
};

const WAIT: Duration = Duration::from_secs(5);

fn sched(loader: FakeLoader, cfg: Config) -> Scheduler<FakeLoader> {
    let s = Scheduler::new(loader, cfg).unwrap();
    s.load("m").unwrap();
    s
}

/// One decode step per call, no task share, one engine per model (tests of growth raise it).
fn cfg() -> Config {
    Config {
        decode_steps: 1,
        task_share: 1.0,
        engines: 1,
        ..Config::default()
    }
}

fn wait<O>(t: Ticket<O>) -> gpuport_scheduler::Outcome<O> {
    t.wait_timeout(WAIT).unwrap_or_else(|_| panic!("timed out"))
}

fn eventually(what: &str, f: impl Fn() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        thread::sleep(Duration::from_millis(1));
    }
}

/// Collects events; `of(id)` lists one request's.
fn record(s: &Scheduler<FakeLoader>) -> (Subscription, Arc<Mutex<Vec<Event>>>) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let l = Arc::clone(&log);
    (s.subscribe(move |e| l.lock().unwrap().push(e.clone())), log)
}

fn chunk_log() -> (Arc<Mutex<Vec<u32>>>, impl FnMut(u32) + Send + 'static) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let l = Arc::clone(&log);
    (log, move |c| l.lock().unwrap().push(c))
}

#[test]
fn handles_are_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<Scheduler<FakeLoader>>();
    send_sync::<Subscription>();
    send::<Ticket<Vec<u32>>>();
    send::<gpuport_scheduler::BatchHandle<Vec<u32>>>();
}

#[test]
fn complete_streams_chunks_then_resolves() {
    let s = sched(
        FakeLoader::new(4, 100),
        Config {
            decode_steps: 3,
            ..cfg()
        },
    );
    let (chunks, on_chunk) = chunk_log();
    let t = s.complete(Request::new(FakeJob::new(7)), on_chunk).unwrap();
    let id = t.id();
    let o = wait(t);
    assert_eq!(o.id, id);
    assert_eq!(o.end, End::Finished);
    assert_eq!(o.output, Some((0..7).collect::<Vec<u32>>()));
    assert_eq!(
        *chunks.lock().unwrap(),
        (0..7).collect::<Vec<u32>>(),
        "every chunk before the outcome"
    );
    assert_eq!(o.engine, Some(0));
    assert_eq!(&*o.model, "m");
    assert!(o.queued_at <= o.started_at.unwrap() && o.started_at.unwrap() <= o.finished_at);
    assert_eq!(s.status().counters.finished, 1);
}

/// A minimal executor: polls on this thread, parks until woken.
fn block_on<F: Future>(f: F) -> F::Output {
    struct Unpark(Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut f = pin!(f);
    let deadline = Instant::now() + WAIT;
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        assert!(Instant::now() < deadline, "future never woke");
        thread::park_timeout(Duration::from_millis(100));
    }
}

#[test]
fn a_ticket_is_a_future_and_takes_a_callback() {
    let s = sched(FakeLoader::new(4, 100), cfg());
    let t = s.complete(Request::new(FakeJob::new(5)), |_| {}).unwrap();
    let o = block_on(t);
    assert_eq!(o.end, End::Finished);

    let (tx, rx) = mpsc::channel();
    let t = s.complete(Request::new(FakeJob::new(5)), |_| {}).unwrap();
    t.on_done(move |o| tx.send(o).unwrap());
    let o = rx.recv_timeout(WAIT).unwrap();
    assert_eq!(o.output.map(|v| v.len()), Some(5));

    // Already resolved: the callback runs at once.
    let t = s.complete(Request::new(FakeJob::new(1)), |_| {}).unwrap();
    eventually("resolution", || t.is_resolved());
    let (tx, rx) = mpsc::channel();
    t.on_done(move |o| tx.send(o.end).unwrap());
    assert_eq!(rx.try_recv().unwrap(), End::Finished);
}

#[test]
fn a_batch_is_one_task_with_indexed_results() {
    let s = sched(
        FakeLoader::new(4, 100),
        Config {
            task_share: 0.5,
            ..cfg()
        },
    );
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen2 = Arc::clone(&seen);
    let reqs = (0..6).map(|i| Request::new(FakeJob::new(3 + i))).collect();
    let b = s
        .batch(reqs, move |i, o| {
            seen2.lock().unwrap().push((i, o.engine, o.end.clone()))
        })
        .unwrap();
    assert_eq!(b.len(), 6);
    assert_eq!(b.task(), None);
    let ids = b.ids();
    let outs: Vec<_> = b.into_tickets().into_iter().map(wait).collect();
    for (i, o) in outs.iter().enumerate() {
        assert_eq!(o.index, Some(i));
        assert_eq!(o.id, ids[i]);
        assert_eq!(o.end, End::Finished);
        assert_eq!(o.output.as_ref().map(Vec::len), Some(3 + i));
        assert!(o.started_at.is_some_and(|s| s <= o.finished_at));
    }
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 6, "on_item for every item, before its ticket");
    assert!(
        seen.iter()
            .all(|(_, e, end)| *e == Some(0) && *end == End::Finished)
    );
    // Never more than half the slots at once: the first two finished before the fifth started.
    let mut by_start: Vec<_> = outs.iter().collect();
    by_start.sort_by_key(|o| o.started_at);
    for w in by_start.windows(3) {
        assert!(
            w[0].finished_at <= w[2].started_at.unwrap(),
            "three items of one task overlapped"
        );
    }
}

#[test]
fn a_cancel_stops_a_running_request_within_one_step_call() {
    let k = 2;
    let s = sched(
        FakeLoader::new(2, 100),
        Config {
            decode_steps: k,
            ..cfg()
        },
    );
    let (chunks, on_chunk) = chunk_log();
    let t = s
        .complete(Request::new(FakeJob::new(100_000)), on_chunk)
        .unwrap();
    eventually("some chunks", || chunks.lock().unwrap().len() >= 10);
    assert_eq!(s.cancel(Target::Id(t.id())), 1);
    // Read after the cancel returned: whatever step was in flight then is the one step call
    // the bound allows.
    let at_cancel = chunks.lock().unwrap().len();
    assert_eq!(s.cancel(Target::Id(t.id())), 0);
    let o = wait(t);
    assert_eq!(o.end, End::Cancelled);
    let produced = o.output.unwrap().len();
    assert!(produced >= at_cancel);
    assert!(
        produced <= at_cancel + k as usize,
        "ran {} tokens past the cancel",
        produced - at_cancel
    );
    assert!(chunks.lock().unwrap().len() <= produced);
    assert_eq!(s.status().counters.cancellations, 1);
}

#[test]
fn a_new_request_of_a_session_supersedes_the_running_one() {
    let s = sched(FakeLoader::new(2, 100), cfg());
    let (chunks, on_chunk) = chunk_log();
    let old = s
        .complete(
            Request::new(FakeJob::new(100_000)).session("ghost"),
            on_chunk,
        )
        .unwrap();
    eventually("the old one running", || !chunks.lock().unwrap().is_empty());
    let new = s
        .complete(Request::new(FakeJob::new(3)).session("ghost"), |_| {})
        .unwrap();
    let new_id = new.id();
    let o = wait(old);
    assert_eq!(o.end, End::Superseded { by: new_id });
    assert!(
        o.output.is_some_and(|v| !v.is_empty()),
        "its partial output"
    );
    assert_eq!(wait(new).end, End::Finished);
    assert_eq!(s.cancel(Target::Session("ghost".into())), 0);
    assert_eq!(s.status().counters.supersessions, 1);
}

#[test]
fn an_interactive_request_preempts_an_opted_in_job() {
    let s = sched(FakeLoader::new(1, 100), cfg());
    let (chunks, on_chunk) = chunk_log();
    let bg = Request::new(FakeJob::new(100_000))
        .priority(Priority::Background)
        .preemptible(true);
    let victim = s.complete(bg, on_chunk).unwrap();
    eventually("the victim running", || !chunks.lock().unwrap().is_empty());
    let inter = s.complete(
        Request::new(FakeJob::new(2)).priority(Priority::Interactive),
        |_| {},
    );
    let inter = inter.unwrap();
    let by = inter.id();
    let o = wait(victim);
    assert_eq!(o.end, End::Preempted { by });
    assert!(o.output.is_some());
    assert_eq!(wait(inter).end, End::Finished);
    assert_eq!(s.status().counters.preemptions, 1);
}

#[test]
fn events_arrive_in_order_until_unsubscribed() {
    let s = sched(FakeLoader::new(2, 100), cfg());
    let (sub, log) = record(&s);
    let t = s.complete(Request::new(FakeJob::new(3)), |_| {}).unwrap();
    let id = t.id();
    wait(t);
    let of = |log: &Arc<Mutex<Vec<Event>>>, id: JobId| -> Vec<&'static str> {
        log.lock()
            .unwrap()
            .iter()
            .filter_map(|e| match e {
                Event::Queued { id: i, .. } if *i == id => Some("queued"),
                Event::Started { id: i, .. } if *i == id => Some("started"),
                Event::Finished { id: i } if *i == id => Some("finished"),
                _ => None,
            })
            .collect()
    };
    eventually("the finished event", || of(&log, id).len() == 3);
    assert_eq!(of(&log, id), vec!["queued", "started", "finished"]);
    sub.unsubscribe();
    let t = s.complete(Request::new(FakeJob::new(1)), |_| {}).unwrap();
    let id2 = t.id();
    wait(t);
    thread::sleep(Duration::from_millis(20));
    assert!(of(&log, id2).is_empty(), "no event after unsubscribing");
}

#[test]
fn the_pool_grows_in_the_background_when_a_task_waits() {
    let loader = FakeLoader {
        delay: Duration::from_millis(10),
        ..FakeLoader::new(1, 100)
    };
    let s = sched(
        loader,
        Config {
            engines: 2,
            ..cfg()
        },
    );
    let (_sub, log) = record(&s);
    let (chunks, on_chunk) = chunk_log();
    let long = s
        .complete(Request::new(FakeJob::new(100_000)), on_chunk)
        .unwrap();
    eventually("the first running", || !chunks.lock().unwrap().is_empty());
    let next = s.complete(Request::new(FakeJob::new(3)), |_| {}).unwrap();
    let o = wait(next);
    assert_eq!(o.engine, Some(1), "ran on the engine loaded for it");
    let st = s.status();
    assert_eq!(st.models[0].count(EngineState::Ready), 2);
    assert!(!st.models[0].growth_blocked);
    eventually("the engine events", || {
        let log = log.lock().unwrap();
        log.iter()
            .any(|e| matches!(e, Event::EngineLoading { engine: 1, .. }))
            && log
                .iter()
                .any(|e| matches!(e, Event::EngineReady { engine: 1, .. }))
    });
    assert_eq!(s.cancel(Target::Id(long.id())), 1);
    wait(long);
}

#[test]
fn a_failed_background_load_blocks_growth() {
    let loader = FakeLoader::new(1, 100);
    loader.succeed.store(1, Ordering::SeqCst);
    let loads = Arc::clone(&loader.loads);
    let s = sched(
        loader,
        Config {
            engines: 3,
            ..cfg()
        },
    );
    let (_sub, log) = record(&s);
    let first = s.complete(Request::new(FakeJob::new(50)), |_| {}).unwrap();
    eventually("the first running", || s.status().running() == 1);
    let second = s.complete(Request::new(FakeJob::new(2)), |_| {}).unwrap();
    eventually("growth blocked", || s.status().models[0].growth_blocked);
    assert_eq!(wait(first).end, End::Finished);
    assert_eq!(wait(second).engine, Some(0), "waited for the first engine");
    for _ in 0..3 {
        s.complete(Request::new(FakeJob::new(5)), |_| {}).unwrap();
    }
    let last = s.complete(Request::new(FakeJob::new(5)), |_| {}).unwrap();
    wait(last);
    assert_eq!(
        loads.load(Ordering::SeqCst),
        2,
        "the first load and one growth, never retried"
    );
    eventually("the failure event", || {
        log.lock()
            .unwrap()
            .iter()
            .any(|e| matches!(e, Event::EngineFailed { engine: 1, .. }))
    });
    assert_eq!(s.status().models[0].count(EngineState::Failed), 1);
}

#[test]
fn load_and_submission_errors_have_stable_codes() {
    let loader = FakeLoader::new(1, 100);
    let s = Scheduler::new(loader.clone(), cfg()).unwrap();
    let err = s
        .complete(Request::new(FakeJob::new(1)), |_| {})
        .unwrap_err();
    assert_eq!(
        (err.code(), err.clone()),
        ("NO_MODEL", SchedError::NoModel { model: None })
    );
    let err = s.load("nope").unwrap_err();
    assert_eq!(
        err,
        SchedError::UnknownModel {
            model: "nope".into()
        }
    );
    assert_eq!(err.code(), "UNKNOWN_MODEL");
    assert!(
        s.status().models.is_empty(),
        "a failed first load leaves no trace"
    );
    s.load("m").unwrap();
    s.load("m").unwrap();
    assert_eq!(
        loader.loads.load(Ordering::SeqCst),
        2,
        "loading a loaded model is free"
    );
    let err = s
        .complete(Request::new(FakeJob::new(1)).model("other"), |_| {})
        .unwrap_err();
    assert_eq!(
        err,
        SchedError::NoModel {
            model: Some("other".into())
        }
    );
    loader.succeed.store(0, Ordering::SeqCst);
    let err = s.load("other").unwrap_err();
    assert_eq!(err.code(), "LOAD_FAILED");
    assert!(matches!(err, SchedError::LoadFailed { ref model, .. } if model == "other"));
    assert_eq!(s.configure(0).unwrap_err().code(), "BAD_REQUEST");
    s.configure(3).unwrap();
    assert_eq!(s.status().decode_steps, 3);
    let bad = Config {
        task_share: 0.0,
        ..cfg()
    };
    let err = Scheduler::new(FakeLoader::new(1, 1), bad).unwrap_err();
    assert!(matches!(err, SchedError::BadRequest { field: Some(ref f), .. } if f == "task_share"));
}

#[test]
fn a_full_band_answers_queue_full() {
    let caps = PerBand {
        interactive: 8,
        normal: 1,
        background: 8,
    };
    let s = sched(
        FakeLoader::new(1, 100),
        Config {
            queue_cap: caps,
            ..cfg()
        },
    );
    let running = s
        .complete(Request::new(FakeJob::new(100_000)), |_| {})
        .unwrap();
    eventually("running", || s.status().running() == 1);
    let queued = s.complete(Request::new(FakeJob::new(1)), |_| {}).unwrap();
    let err = s
        .complete(Request::new(FakeJob::new(1)), |_| {})
        .unwrap_err();
    assert_eq!(
        err,
        SchedError::QueueFull {
            band: Priority::Normal,
            depth: 1,
            cap: 1
        }
    );
    assert_eq!(s.status().queued.normal, 1);
    assert_eq!(s.status().counters.rejected, 1);
    assert_eq!(s.cancel(Target::Id(queued.id())), 1);
    assert_eq!(wait(queued).output, None);
    s.cancel(Target::Id(running.id()));
    wait(running);
}

#[test]
fn an_engine_failure_fails_its_requests() {
    let loader = FakeLoader::new(2, 100);
    let fail = Arc::clone(&loader.fail_steps);
    let s = sched(
        loader,
        Config {
            engines: 1,
            ..cfg()
        },
    );
    let (_sub, log) = record(&s);
    let (chunks, on_chunk) = chunk_log();
    let t = s
        .complete(Request::new(FakeJob::new(100_000)), on_chunk)
        .unwrap();
    eventually("running", || !chunks.lock().unwrap().is_empty());
    fail.store(true, Ordering::SeqCst);
    let o = wait(t);
    let End::Failed(err) = o.end else {
        panic!("{:?}", o.end)
    };
    assert_eq!(err.code(), "GENERATION_FAILED");
    eventually("the failure event", || {
        log.lock()
            .unwrap()
            .iter()
            .any(|e| matches!(e, Event::EngineFailed { engine: 0, .. }))
    });
    // The pool replaces the engine for the next request.
    fail.store(false, Ordering::SeqCst);
    let next = s.complete(Request::new(FakeJob::new(2)), |_| {}).unwrap();
    let o = wait(next);
    assert_eq!((o.end, o.engine), (End::Finished, Some(1)));
}

#[test]
fn callbacks_may_call_back_into_the_scheduler() {
    let s = sched(FakeLoader::new(2, 100), cfg());
    let me: Arc<OnceLock<JobId>> = Arc::new(OnceLock::new());
    let (s2, me2) = (s.clone(), Arc::clone(&me));
    let t = s
        .complete(Request::new(FakeJob::new(100_000)), move |_| {
            if let Some(id) = me2.get() {
                s2.cancel(Target::Id(*id));
                let _ = s2.status();
            }
        })
        .unwrap();
    me.set(t.id()).unwrap();
    assert_eq!(wait(t).end, End::Cancelled);
}

#[test]
fn dropping_the_scheduler_resolves_everything() {
    let s = sched(FakeLoader::new(1, 100), cfg());
    let (chunks, on_chunk) = chunk_log();
    let running = s
        .complete(Request::new(FakeJob::new(100_000)), on_chunk)
        .unwrap();
    let queued = s.complete(Request::new(FakeJob::new(5)), |_| {}).unwrap();
    eventually("running", || !chunks.lock().unwrap().is_empty());
    let started = Instant::now();
    drop(s);
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "drop waits for one step at most"
    );
    let q = wait(queued);
    assert_eq!((q.end, q.output), (End::Failed(SchedError::ShutDown), None));
    let r = wait(running);
    assert_eq!(r.end, End::Failed(SchedError::ShutDown));
    assert!(
        r.output.is_some_and(|v| !v.is_empty()),
        "a running one keeps its partial output"
    );
}

#[test]
fn the_last_handle_may_drop_inside_a_callback() {
    let s = sched(FakeLoader::new(1, 100), cfg());
    let held = s.clone();
    let t = s
        .complete(Request::new(FakeJob::new(3)), move |_| {
            let _ = held.status();
        })
        .unwrap();
    drop(s);
    // The callback's clone is now the last handle; it drops on the engine's own thread.
    assert_eq!(wait(t).end, End::Finished);
}

#[test]
fn an_engine_panic_is_a_generation_failure() {
    let s = sched(
        FakeLoader {
            panic_steps: true,
            ..FakeLoader::new(1, 100)
        },
        cfg(),
    );
    let t = s.complete(Request::new(FakeJob::new(3)), |_| {}).unwrap();
    let End::Failed(SchedError::GenerationFailed {
        reason, engine: 0, ..
    }) = wait(t).end
    else {
        panic!("not a generation failure")
    };
    assert!(reason.contains("panicked in step"), "{reason}");
}
