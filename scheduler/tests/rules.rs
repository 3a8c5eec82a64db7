//! One test per scheduling rule, on the core with fake engines in virtual time (the
//! simulation in `common` also checks the rules' invariants on every call).
#![allow(clippy::unwrap_used)] // helpers outside #[test] fns unwrap too

mod common;

use std::time::Instant;

use common::{FakeEngine, FakeJob, Sim};
use gpuport_scheduler::core::{Admission, Core, EngineKey, Place, Report, Submission};
use gpuport_scheduler::{
    Config, End, EngineState, PerBand, Priority, Request, SchedError, Target, exec,
};

/// One decode step per step call (so a job of N tokens runs N boundaries), no task share.
fn cfg() -> Config {
    Config {
        task_share: 1.0,
        decode_steps: 1,
        ..Config::default()
    }
}

/// Requests in the order they started (engine took them).
fn started(sim: &Sim) -> Vec<gpuport_scheduler::JobId> {
    sim.events
        .iter()
        .filter_map(|e| match e {
            gpuport_scheduler::Event::Started { id, .. } => Some(*id),
            _ => None,
        })
        .collect()
}

fn done(mut sim: Sim) {
    sim.finish();
    sim.assert_clean();
}

// ---- priority bands ----------------------------------------------------------------------

#[test]
fn a_free_slot_goes_to_the_highest_band_first() {
    let mut sim = Sim::new(cfg(), 1, 100);
    let e = sim.load("m").unwrap();
    let busy = sim.submit(Request::new(FakeJob::new(3))).unwrap();
    assert!(sim.boundary(e));
    let bg = sim
        .submit(Request::new(FakeJob::new(1)).priority(Priority::Background))
        .unwrap();
    let normal = sim.submit(Request::new(FakeJob::new(1))).unwrap();
    let inter = sim
        .submit(Request::new(FakeJob::new(1)).priority(Priority::Interactive))
        .unwrap();
    sim.run(100);
    assert_eq!(started(&sim), vec![busy, inter, normal, bg]);
    done(sim);
}

#[test]
fn fifo_within_a_band() {
    let mut sim = Sim::new(cfg(), 2, 100);
    let e = sim.load("m").unwrap();
    let first = sim.submit(Request::new(FakeJob::new(4))).unwrap();
    let second = sim.submit(Request::new(FakeJob::new(4))).unwrap();
    assert!(sim.boundary(e));
    let ids: Vec<_> = (0..5)
        .map(|i| sim.submit(Request::new(FakeJob::new(1 + i))).unwrap())
        .collect();
    sim.run(100);
    let mut want = vec![first, second];
    want.extend(ids);
    assert_eq!(started(&sim), want);
    done(sim);
}

// ---- session supersession ------------------------------------------------------------------

#[test]
fn a_new_request_supersedes_a_queued_one_of_its_session_at_once() {
    let mut sim = Sim::new(cfg(), 1, 100);
    let e = sim.load("m").unwrap();
    sim.submit(Request::new(FakeJob::new(5))).unwrap();
    assert!(sim.boundary(e));
    let old = sim
        .submit(Request::new(FakeJob::new(5)).session("ghost"))
        .unwrap();
    let new = sim
        .submit(Request::new(FakeJob::new(5)).session("ghost"))
        .unwrap();
    // Resolved at submission, before any boundary.
    assert_eq!(sim.end(old), End::Superseded { by: new });
    assert_eq!(sim.outcome(old).output, None);
    assert_eq!(sim.outcome(old).started_at, None);
    sim.run(100);
    assert_eq!(sim.end(new), End::Finished);
    assert_eq!(sim.core.status().counters.supersessions, 1);
    done(sim);
}

#[test]
fn a_running_request_superseded_stops_at_the_next_boundary_with_its_partial_output() {
    let mut sim = Sim::new(
        Config {
            decode_steps: 4,
            ..cfg()
        },
        2,
        100,
    );
    let e = sim.load("m").unwrap();
    let old = sim
        .submit(Request::new(FakeJob::new(100)).session("ghost"))
        .unwrap();
    assert!(sim.boundary(e));
    assert!(sim.boundary(e));
    assert_eq!(sim.chunks[&old].len(), 8);
    let calls = sim.engines[&e].step_calls;
    let new = sim
        .submit(Request::new(FakeJob::new(30)).session("ghost"))
        .unwrap();
    assert!(
        !sim.outcomes.contains_key(&old),
        "a running request resolves at a boundary"
    );
    assert!(sim.boundary(e));
    assert_eq!(sim.end(old), End::Superseded { by: new });
    assert_eq!(
        sim.outcome(old).output.as_ref().map(Vec::len),
        Some(8),
        "no progress after the supersession"
    );
    assert!(sim.engines[&e].step_calls <= calls + 1);
    // The new request took the slot in the same boundary.
    assert_eq!(sim.core.place(new), Some(Place::Running(e)));
    sim.run(100);
    assert_eq!(sim.end(new), End::Finished);
    done(sim);
}

// ---- opt-in preemption ------------------------------------------------------------------

#[test]
fn an_interactive_request_takes_the_slot_of_a_preemptible_job() {
    let mut sim = Sim::new(
        Config {
            decode_steps: 2,
            ..cfg()
        },
        2,
        100,
    );
    let e = sim.load("m").unwrap();
    let keep = sim.submit(Request::new(FakeJob::new(20))).unwrap();
    let victim = sim
        .submit(
            Request::new(FakeJob::new(20))
                .priority(Priority::Background)
                .preemptible(true),
        )
        .unwrap();
    assert!(sim.boundary(e));
    let inter = sim
        .submit(Request::new(FakeJob::new(4)).priority(Priority::Interactive))
        .unwrap();
    assert!(sim.boundary(e));
    assert_eq!(sim.end(victim), End::Preempted { by: inter });
    assert_eq!(
        sim.outcome(victim).output.as_ref().map(Vec::len),
        Some(2),
        "partial output"
    );
    assert_eq!(sim.core.place(inter), Some(Place::Running(e)));
    sim.run(100);
    assert_eq!(sim.end(keep), End::Finished);
    assert_eq!(sim.end(inter), End::Finished);
    // Never requeued: admitted once.
    assert_eq!(started(&sim).iter().filter(|id| **id == victim).count(), 1);
    assert_eq!(sim.core.status().counters.preemptions, 1);
    done(sim);
}

#[test]
fn the_victim_is_the_lowest_band_then_the_youngest() {
    let mut sim = Sim::new(cfg(), 3, 100);
    let e = sim.load("m").unwrap();
    let normal = sim
        .submit(Request::new(FakeJob::new(50)).preemptible(true))
        .unwrap();
    let bg_old = sim
        .submit(
            Request::new(FakeJob::new(50))
                .priority(Priority::Background)
                .preemptible(true),
        )
        .unwrap();
    assert!(sim.boundary(e));
    let bg_young = sim
        .submit(
            Request::new(FakeJob::new(50))
                .priority(Priority::Background)
                .preemptible(true),
        )
        .unwrap();
    assert!(sim.boundary(e));
    let i1 = sim
        .submit(Request::new(FakeJob::new(50)).priority(Priority::Interactive))
        .unwrap();
    assert!(sim.boundary(e));
    assert_eq!(sim.end(bg_young), End::Preempted { by: i1 });
    let i2 = sim
        .submit(Request::new(FakeJob::new(50)).priority(Priority::Interactive))
        .unwrap();
    assert!(sim.boundary(e));
    assert_eq!(sim.end(bg_old), End::Preempted { by: i2 });
    let i3 = sim
        .submit(Request::new(FakeJob::new(50)).priority(Priority::Interactive))
        .unwrap();
    assert!(sim.boundary(e));
    assert_eq!(sim.end(normal), End::Preempted { by: i3 });
    sim.run(200);
    done(sim);
}

#[test]
fn a_job_that_did_not_opt_in_is_never_preempted() {
    let mut sim = Sim::new(cfg(), 1, 100);
    let e = sim.load("m").unwrap();
    let job = sim
        .submit(Request::new(FakeJob::new(10)).priority(Priority::Background))
        .unwrap();
    assert!(sim.boundary(e));
    let inter = sim
        .submit(Request::new(FakeJob::new(2)).priority(Priority::Interactive))
        .unwrap();
    sim.run(100);
    assert_eq!(sim.end(job), End::Finished);
    assert_eq!(sim.end(inter), End::Finished);
    assert_eq!(started(&sim), vec![job, inter]);
    assert_eq!(sim.core.status().counters.preemptions, 0);
    done(sim);
}

#[test]
fn only_interactive_requests_preempt() {
    let mut sim = Sim::new(cfg(), 1, 100);
    let e = sim.load("m").unwrap();
    let job = sim
        .submit(
            Request::new(FakeJob::new(10))
                .priority(Priority::Background)
                .preemptible(true),
        )
        .unwrap();
    assert!(sim.boundary(e));
    sim.submit(Request::new(FakeJob::new(2)).priority(Priority::Normal))
        .unwrap();
    sim.run(100);
    assert_eq!(sim.end(job), End::Finished);
    done(sim);
}

#[test]
fn no_preemption_while_a_free_slot_exists() {
    let mut sim = Sim::new(cfg(), 2, 100);
    let e = sim.load("m").unwrap();
    let job = sim
        .submit(Request::new(FakeJob::new(10)).preemptible(true))
        .unwrap();
    assert!(sim.boundary(e));
    sim.submit(Request::new(FakeJob::new(2)).priority(Priority::Interactive))
        .unwrap();
    sim.run(100);
    assert_eq!(sim.end(job), End::Finished);
    done(sim);
}

// ---- one task, one engine ------------------------------------------------------------------

#[test]
fn a_task_holds_at_most_its_share_of_an_engine() {
    let mut sim = Sim::new(
        Config {
            task_share: 0.5,
            ..cfg()
        },
        4,
        100,
    );
    let e = sim.load("m").unwrap();
    let items = sim
        .batch((0..6).map(|_| Request::new(FakeJob::new(10))).collect())
        .unwrap();
    assert!(sim.boundary(e));
    assert_eq!(sim.core.batch_of(e).len(), 2, "half of 4 slots");
    // Whoever comes next gets a slot at the next boundary.
    let next = sim.submit(Request::new(FakeJob::new(1))).unwrap();
    assert!(sim.boundary(e));
    assert!(sim.outcomes.contains_key(&next) || sim.core.place(next) == Some(Place::Running(e)));
    sim.run(200);
    for id in items {
        assert_eq!(sim.end(id), End::Finished);
        assert!(sim.outcome(id).index.is_some());
    }
    done(sim);
}

#[test]
fn a_task_gets_at_least_one_slot() {
    for (slots, share) in [(1, 0.5), (3, 0.1)] {
        let mut sim = Sim::new(
            Config {
                task_share: share,
                ..cfg()
            },
            slots,
            100,
        );
        let e = sim.load("m").unwrap();
        sim.batch((0..3).map(|_| Request::new(FakeJob::new(2))).collect())
            .unwrap();
        assert!(sim.boundary(e));
        assert_eq!(sim.core.batch_of(e).len(), 1);
        sim.run(100);
        done(sim);
    }
}

#[test]
fn a_task_stays_on_one_engine_while_it_holds_one() {
    let mut sim = Sim::new(
        Config {
            task_share: 0.5,
            engines: 2,
            ..cfg()
        },
        2,
        100,
    );
    let e0 = sim.load("m").unwrap();
    // Fill engine 0 with two single tasks, then a batch waits: the pool grows.
    sim.submit(Request::new(FakeJob::new(3))).unwrap();
    sim.submit(Request::new(FakeJob::new(3))).unwrap();
    assert!(sim.boundary(e0));
    let items = sim
        .batch((0..6).map(|_| Request::new(FakeJob::new(4))).collect())
        .unwrap();
    assert_eq!(sim.loads_started.len(), 1);
    sim.finish_loads();
    let e1 = EngineKey {
        model: 0,
        engine: 1,
    };
    sim.run(200);
    // Every item of the batch ran on one engine (e0 freed up early, but the task held e1
    // whenever it had work there; it may move only after holding nothing).
    let engines: Vec<_> = items.iter().map(|id| sim.outcome(*id).engine).collect();
    assert!(engines.iter().all(|e| e.is_some()));
    assert!(engines.contains(&Some(e1.engine)));
    done(sim);
}

// ---- the pool grows ----------------------------------------------------------------------

#[test]
fn the_pool_grows_only_when_a_task_waits_that_no_engine_can_admit() {
    let mut sim = Sim::new(
        Config {
            engines: 3,
            ..cfg()
        },
        2,
        100,
    );
    let e0 = sim.load("m").unwrap();
    sim.submit(Request::new(FakeJob::new(5))).unwrap();
    assert!(sim.loads_started.is_empty(), "a free slot: no growth");
    sim.submit(Request::new(FakeJob::new(5))).unwrap();
    assert!(sim.loads_started.is_empty(), "queued, but a slot is free");
    assert!(sim.boundary(e0));
    let waiting = sim.submit(Request::new(FakeJob::new(5))).unwrap();
    assert_eq!(
        sim.loads_started,
        vec![EngineKey {
            model: 0,
            engine: 1
        }]
    );
    assert!(
        sim.events
            .iter()
            .any(|e| matches!(e, gpuport_scheduler::Event::EngineLoading { engine: 1, .. }))
    );
    // One load at a time.
    sim.submit(Request::new(FakeJob::new(5))).unwrap();
    assert_eq!(sim.loads_started.len(), 1);
    sim.finish_loads();
    assert!(
        sim.events
            .iter()
            .any(|e| matches!(e, gpuport_scheduler::Event::EngineReady { engine: 1, .. }))
    );
    let e1 = EngineKey {
        model: 0,
        engine: 1,
    };
    assert!(sim.boundary(e1));
    assert_eq!(sim.core.place(waiting), Some(Place::Running(e1)));
    sim.run(100);
    done(sim);
}

#[test]
fn no_growth_for_a_task_that_owns_an_engine() {
    let mut sim = Sim::new(
        Config {
            task_share: 0.5,
            engines: 2,
            ..cfg()
        },
        4,
        100,
    );
    let e = sim.load("m").unwrap();
    sim.batch((0..10).map(|_| Request::new(FakeJob::new(3))).collect())
        .unwrap();
    assert!(sim.boundary(e));
    sim.run(100);
    assert!(sim.loads_started.is_empty());
    done(sim);
}

#[test]
fn the_cap_bounds_the_pool() {
    let mut sim = Sim::new(
        Config {
            engines: 2,
            ..cfg()
        },
        1,
        100,
    );
    let e0 = sim.load("m").unwrap();
    sim.submit(Request::new(FakeJob::new(5))).unwrap();
    assert!(sim.boundary(e0));
    sim.submit(Request::new(FakeJob::new(5))).unwrap();
    sim.finish_loads();
    let e1 = EngineKey {
        model: 0,
        engine: 1,
    };
    assert!(sim.boundary(e1));
    sim.submit(Request::new(FakeJob::new(5))).unwrap();
    assert_eq!(sim.loads_started.len(), 1);
    sim.run(100);
    done(sim);
}

#[test]
fn a_failed_load_stops_growth_for_good() {
    let mut sim = Sim::new(
        Config {
            engines: 4,
            ..cfg()
        },
        1,
        100,
    );
    sim.loads_ok = 0;
    let e0 = sim.load("m").unwrap();
    sim.submit(Request::new(FakeJob::new(5))).unwrap();
    assert!(sim.boundary(e0));
    sim.submit(Request::new(FakeJob::new(5))).unwrap();
    assert_eq!(sim.loads_started.len(), 1);
    sim.finish_loads();
    let st = sim.core.status();
    assert!(st.models[0].growth_blocked);
    assert_eq!(st.models[0].count(EngineState::Failed), 1);
    assert_eq!(st.models[0].count(EngineState::Ready), 1);
    for _ in 0..5 {
        sim.submit(Request::new(FakeJob::new(2))).unwrap();
    }
    sim.run(200);
    assert_eq!(sim.loads_started.len(), 1, "never retried");
    done(sim);
}

// ---- step boundaries ------------------------------------------------------------------------

#[test]
fn a_cancel_takes_effect_at_the_next_boundary_and_configure_retunes_k() {
    let mut sim = Sim::new(
        Config {
            decode_steps: 4,
            ..cfg()
        },
        2,
        100,
    );
    let e = sim.load("m").unwrap();
    let a = sim.submit(Request::new(FakeJob::new(100))).unwrap();
    let b = sim.submit(Request::new(FakeJob::new(100))).unwrap();
    assert!(sim.boundary(e));
    assert_eq!(sim.chunks[&a].len(), 4, "K decode steps per step call");
    sim.core.set_decode_steps(3).unwrap();
    assert!(sim.boundary(e));
    assert_eq!(sim.chunks[&a].len(), 7, "the new K from the next boundary");
    assert_eq!(sim.cancel(Target::Id(a)), 1);
    assert_eq!(sim.cancel(Target::Id(a)), 0, "already being stopped");
    let calls = sim.engines[&e].step_calls;
    assert!(sim.boundary(e));
    assert_eq!(sim.end(a), End::Cancelled);
    assert_eq!(sim.outcome(a).output.as_ref().map(Vec::len), Some(7));
    assert_eq!(
        sim.engines[&e].step_calls,
        calls + 1,
        "one step call, and it no longer had a"
    );
    assert!(sim.core.set_decode_steps(0).is_err());
    assert_eq!(sim.cancel(Target::Id(b)), 1);
    sim.run(10);
    done(sim);
}

#[test]
fn a_cancel_during_the_step_that_finishes_the_job_resolves_it_cancelled_with_its_output() {
    let mut core: Core<(FakeJob, ())> = Core::new(cfg()).unwrap();
    let now = Instant::now();
    let gpuport_scheduler::core::BeginLoad::Load(order) = core.begin_load("m").unwrap() else {
        panic!()
    };
    assert!(core.engine_ready(order.key, 1));
    let mut engine = FakeEngine::new(1, 10);
    let sub = Submission {
        payload: (FakeJob::new(1), ()),
        priority: Priority::Normal,
        session: None,
        task: None,
        preemptible: false,
        model: None,
    };
    let id = core.submit(sub, now).unwrap().ids[0];
    let plan = core.plan_boundary(order.key, now).unwrap();
    let ex = exec::execute(&mut engine, plan);
    assert_eq!(ex.report.finished, vec![id]);
    // The cancel lands while the step runs (outside the lock).
    let (n, queued) = core.cancel(&Target::Id(id), now);
    assert_eq!((n, queued.len()), (1, 0));
    let done = core.boundary_done(order.key, ex.report, now);
    assert_eq!(done.resolved.len(), 1);
    assert_eq!(done.resolved[0].end, End::Cancelled);
    assert!(done.muted.contains(&id));
    core.check().unwrap();
}

#[test]
fn a_cancel_during_admission_resolves_at_the_following_boundary() {
    let mut core: Core<(FakeJob, ())> = Core::new(cfg()).unwrap();
    let now = Instant::now();
    let gpuport_scheduler::core::BeginLoad::Load(order) = core.begin_load("m").unwrap() else {
        panic!()
    };
    assert!(core.engine_ready(order.key, 1));
    let sub = |t| Submission {
        payload: (FakeJob::new(t), ()),
        priority: Priority::Normal,
        session: None,
        task: None,
        preemptible: false,
        model: None,
    };
    let id = core.submit(sub(50), now).unwrap().ids[0];
    let mut plan = core.plan_boundary(order.key, now).unwrap();
    let (_, payload) = plan.admit.remove(0);
    // Cancelled while being admitted; the engine then answers Busy: resolves at once.
    assert_eq!(core.cancel(&Target::Id(id), now).0, 1);
    let report = Report {
        evicted: vec![],
        admissions: vec![(id, Admission::Busy(payload))],
        finished: vec![],
        failure: None,
    };
    let done = core.boundary_done(order.key, report, now);
    assert_eq!(done.returned.len(), 1);
    assert_eq!(done.returned[0].1.end, End::Cancelled);
    assert_eq!(core.live(), 0);
    core.check().unwrap();
}

// ---- KV pressure ---------------------------------------------------------------------------

#[test]
fn a_busy_engine_leaves_the_request_queued_and_nothing_overtakes_it() {
    let mut sim = Sim::new(cfg(), 4, 4);
    let e = sim.load("m").unwrap();
    let big = sim.submit(Request::new(FakeJob::new(6).pages(3))).unwrap();
    assert!(sim.boundary(e));
    let second = sim.submit(Request::new(FakeJob::new(2).pages(3))).unwrap();
    let small = sim.submit(Request::new(FakeJob::new(2).pages(1))).unwrap();
    assert!(sim.boundary(e));
    assert_eq!(sim.core.place(second), Some(Place::Queued));
    assert_eq!(
        sim.core.place(small),
        Some(Place::Queued),
        "not admitted ahead of the refused one"
    );
    assert!(sim.core.status().counters.busy_refusals >= 1);
    sim.run(100);
    assert_eq!(started(&sim), vec![big, second, small]);
    done(sim);
}

#[test]
fn an_interactive_request_refused_for_kv_preempts() {
    let mut sim = Sim::new(cfg(), 4, 4);
    let e = sim.load("m").unwrap();
    let victim = sim
        .submit(Request::new(FakeJob::new(50).pages(4)).preemptible(true))
        .unwrap();
    assert!(sim.boundary(e));
    let inter = sim
        .submit(Request::new(FakeJob::new(2).pages(2)).priority(Priority::Interactive))
        .unwrap();
    assert!(sim.boundary(e), "offered: Busy");
    assert_eq!(sim.core.place(inter), Some(Place::Queued));
    assert!(sim.boundary(e), "preempts, then admits");
    assert_eq!(sim.end(victim), End::Preempted { by: inter });
    sim.run(100);
    assert_eq!(sim.end(inter), End::Finished);
    done(sim);
}

#[test]
fn busy_from_an_empty_engine_is_a_bad_request() {
    let mut sim = Sim::new(cfg(), 2, 4);
    sim.load("m").unwrap();
    let huge = sim.submit(Request::new(FakeJob::new(2).pages(5))).unwrap();
    let fine = sim.submit(Request::new(FakeJob::new(2))).unwrap();
    sim.run(100);
    let End::Failed(err) = sim.end(huge) else {
        panic!("{:?}", sim.end(huge))
    };
    assert_eq!(err.code(), "BAD_REQUEST");
    assert_eq!(sim.end(fine), End::Finished);
    done(sim);
}

#[test]
fn an_invalid_refusal_is_a_bad_request_with_its_field() {
    let mut sim = Sim::new(cfg(), 2, 4);
    sim.load("m").unwrap();
    let bad = sim.submit(Request::new(FakeJob::invalid())).unwrap();
    sim.run(100);
    assert_eq!(
        sim.end(bad),
        End::Failed(SchedError::BadRequest {
            field: Some("prompt".into()),
            reason: "too long".into()
        })
    );
    done(sim);
}

// ---- failures, errors -------------------------------------------------------------------------

#[test]
fn an_engine_failure_fails_its_jobs_and_the_pool_replaces_it() {
    let mut sim = Sim::new(
        Config {
            engines: 1,
            ..cfg()
        },
        1,
        10,
    );
    let e = sim.load("m").unwrap();
    let running = sim.submit(Request::new(FakeJob::new(10))).unwrap();
    let queued = sim.submit(Request::new(FakeJob::new(2))).unwrap();
    assert!(sim.boundary(e));
    sim.engines
        .get_mut(&e)
        .unwrap()
        .fail_steps
        .store(true, std::sync::atomic::Ordering::SeqCst);
    assert!(sim.boundary(e));
    let End::Failed(err) = sim.end(running) else {
        panic!()
    };
    assert_eq!(err.code(), "GENERATION_FAILED");
    assert!(matches!(
        err,
        SchedError::GenerationFailed { engine: 0, .. }
    ));
    assert!(!sim.engines.contains_key(&e), "the engine is dropped");
    // The queued request waits for a replacement, loaded by the growth rule.
    assert_eq!(
        sim.loads_started,
        vec![EngineKey {
            model: 0,
            engine: 1
        }]
    );
    sim.run(100);
    assert_eq!(sim.end(queued), End::Finished);
    done(sim);
}

#[test]
fn a_model_with_no_engine_and_no_growth_fails_its_queue_with_no_model() {
    let mut sim = Sim::new(
        Config {
            engines: 2,
            ..cfg()
        },
        1,
        10,
    );
    sim.loads_ok = 0;
    let e = sim.load("m").unwrap();
    let running = sim.submit(Request::new(FakeJob::new(10))).unwrap();
    assert!(sim.boundary(e));
    let queued = sim.submit(Request::new(FakeJob::new(2))).unwrap();
    sim.finish_loads(); // the growth load fails: blocked
    sim.engines
        .get_mut(&e)
        .unwrap()
        .fail_steps
        .store(true, std::sync::atomic::Ordering::SeqCst);
    assert!(sim.boundary(e));
    assert_eq!(sim.end(running).as_str(), "failed");
    assert_eq!(
        sim.end(queued),
        End::Failed(SchedError::NoModel {
            model: Some("m".into())
        })
    );
    assert_eq!(
        sim.submit(Request::new(FakeJob::new(1)))
            .unwrap_err()
            .code(),
        "NO_MODEL"
    );
    done(sim);
}

#[test]
fn a_full_band_refuses_with_queue_full() {
    let caps = PerBand {
        interactive: 1,
        normal: 2,
        background: 0,
    };
    let mut sim = Sim::new(
        Config {
            queue_cap: caps,
            ..cfg()
        },
        1,
        10,
    );
    sim.load("m").unwrap();
    sim.submit(Request::new(FakeJob::new(1))).unwrap();
    sim.submit(Request::new(FakeJob::new(1))).unwrap();
    let err = sim.submit(Request::new(FakeJob::new(1))).unwrap_err();
    assert_eq!(
        err,
        SchedError::QueueFull {
            band: Priority::Normal,
            depth: 2,
            cap: 2
        }
    );
    assert_eq!(err.code(), "QUEUE_FULL");
    sim.submit(Request::new(FakeJob::new(1)).priority(Priority::Interactive))
        .unwrap();
    let err = sim
        .submit(Request::new(FakeJob::new(1)).priority(Priority::Background))
        .unwrap_err();
    assert_eq!(err.code(), "QUEUE_FULL");
    // A batch is all or nothing.
    let err = sim
        .batch(vec![
            Request::new(FakeJob::new(1))
                .priority(Priority::Interactive);
            2
        ])
        .unwrap_err();
    assert_eq!(err.code(), "QUEUE_FULL");
    assert_eq!(sim.core.status().counters.rejected, 3);
    sim.run(100);
    done(sim);
}

#[test]
fn requests_need_a_loaded_model() {
    let mut sim = Sim::new(cfg(), 1, 10);
    assert_eq!(
        sim.submit(Request::new(FakeJob::new(1))).unwrap_err(),
        SchedError::NoModel { model: None }
    );
    sim.load("m").unwrap();
    let err = sim
        .submit(Request::new(FakeJob::new(1)).model("x"))
        .unwrap_err();
    assert_eq!(
        err,
        SchedError::NoModel {
            model: Some("x".into())
        }
    );
    assert_eq!(err.code(), "NO_MODEL");
    let err = sim.batch(vec![
        Request::new(FakeJob::new(1)).task("a"),
        Request::new(FakeJob::new(1)).task("b"),
    ]);
    assert_eq!(err.unwrap_err().code(), "BAD_REQUEST");
    done(sim);
}

// ---- cancel ----------------------------------------------------------------------------------

#[test]
fn cancel_counts_exactly() {
    let mut sim = Sim::new(cfg(), 1, 10);
    let e = sim.load("m").unwrap();
    let running = sim
        .submit(Request::new(FakeJob::new(10)).session("s"))
        .unwrap();
    assert!(sim.boundary(e));
    let queued = sim.submit(Request::new(FakeJob::new(10))).unwrap();
    let t1 = sim
        .submit(Request::new(FakeJob::new(10)).task("t"))
        .unwrap();
    let t2 = sim
        .submit(Request::new(FakeJob::new(10)).task("t"))
        .unwrap();
    assert_eq!(sim.cancel(Target::Id(queued)), 1);
    assert_eq!(sim.end(queued), End::Cancelled);
    assert_eq!(sim.cancel(Target::Id(queued)), 0, "already resolved");
    assert_eq!(sim.cancel(Target::Session("s".into())), 1);
    assert_eq!(
        sim.cancel(Target::Session("s".into())),
        0,
        "already being stopped"
    );
    assert_eq!(sim.cancel(Target::Session("nope".into())), 0);
    assert_eq!(sim.cancel(Target::Task("t".into())), 2);
    assert_eq!(sim.cancel(Target::Task("t".into())), 0);
    assert_eq!(sim.cancel(Target::Id(gpuport_scheduler::JobId(999))), 0);
    sim.run(10);
    for id in [running, t1, t2] {
        assert_eq!(sim.end(id), End::Cancelled);
    }
    assert_eq!(sim.core.status().counters.cancellations, 4);
    done(sim);
}

#[test]
fn shutdown_resolves_queued_at_once_and_running_at_their_boundary() {
    let mut core: Core<(FakeJob, ())> = Core::new(cfg()).unwrap();
    let now = Instant::now();
    let gpuport_scheduler::core::BeginLoad::Load(order) = core.begin_load("m").unwrap() else {
        panic!()
    };
    assert!(core.engine_ready(order.key, 1));
    let mut engine = FakeEngine::new(1, 10);
    let sub = |t| Submission {
        payload: (FakeJob::new(t), ()),
        priority: Priority::Normal,
        session: None,
        task: None,
        preemptible: false,
        model: None,
    };
    let a = core.submit(sub(50), now).unwrap().ids[0];
    let b = core.submit(sub(50), now).unwrap().ids[0];
    let plan = core.plan_boundary(order.key, now).unwrap();
    let ex = exec::execute(&mut engine, plan);
    core.boundary_done(order.key, ex.report, now);
    let queued = core.shutdown(now);
    assert_eq!(queued.len(), 1);
    assert_eq!(queued[0].1.id, b);
    assert_eq!(queued[0].1.end, End::Failed(SchedError::ShutDown));
    let plan = core.plan_boundary(order.key, now).unwrap();
    assert!(plan.exit);
    assert_eq!(plan.evict, vec![a]);
    let ex = exec::execute(&mut engine, plan);
    assert_eq!(
        ex.outputs[0].1.len(),
        1,
        "partial output: one step of one decode step"
    );
    let done = core.boundary_done(order.key, ex.report, now);
    assert!(done.exit);
    assert_eq!(done.resolved[0].end, End::Failed(SchedError::ShutDown));
    assert_eq!(core.submit(sub(1), now).unwrap_err(), SchedError::ShutDown);
    assert_eq!(core.live(), 0);
}
