//! Property tests: random sequences of submissions, batches, cancels, step boundaries and
//! background loads against the core, with fake engines in virtual time. The simulation
//! (`common::Sim`) checks on every call: strict band order and FIFO at every admission, no
//! free slot left while a request the engine could take waits, a task never on two engines,
//! the pool never growing while a slot the waiting task may use is free (nor after a failed
//! load), a superseded or cancelled request stopping within one step call, preemption only of
//! preemptible jobs by interactive requests of another task (and never of one while a better
//! victim stays on that engine), and every request resolving exactly once with one terminal
//! event. Here, in addition: a job that did not opt in to preemption is never evicted but by
//! its own cancel or supersession.
#![allow(clippy::unwrap_used)] // helpers outside #[test] fns unwrap too

mod common;

use common::{FakeJob, Sim};
use gpuport_scheduler::core::EngineKey;
use gpuport_scheduler::{Config, End, Priority, Request, SchedError, Target};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Submit {
        band: Priority,
        session: Option<u8>,
        task: Option<u8>,
        preemptible: bool,
        tokens: u32,
        pages: usize,
    },
    Batch {
        n: usize,
        band: Priority,
        preemptible: bool,
        tokens: u32,
        label: Option<u8>,
    },
    CancelId(usize),
    CancelSession(u8),
    CancelTask(u8),
    Boundary(usize),
    FinishLoads,
    SetK(u32),
}

fn band() -> impl Strategy<Value = Priority> {
    prop_oneof![
        Just(Priority::Interactive),
        Just(Priority::Normal),
        Just(Priority::Background)
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (band(), proptest::option::of(0u8..3), proptest::option::of(0u8..3), any::<bool>(), 1u32..10, 1usize..4)
            .prop_map(|(band, session, task, preemptible, tokens, pages)| Op::Submit {
                band, session, task, preemptible, tokens, pages
            }),
        1 => (1usize..6, band(), any::<bool>(), 1u32..8, proptest::option::of(0u8..2))
            .prop_map(|(n, band, preemptible, tokens, label)| Op::Batch { n, band, preemptible, tokens, label }),
        1 => (0usize..64).prop_map(Op::CancelId),
        1 => (0u8..3).prop_map(Op::CancelSession),
        1 => (0u8..3).prop_map(Op::CancelTask),
        6 => (0usize..4).prop_map(Op::Boundary),
        1 => Just(Op::FinishLoads),
        1 => (1u32..4).prop_map(Op::SetK),
    ]
}

#[derive(Debug, Clone)]
struct Setup {
    engines: usize,
    slots: usize,
    pages: usize,
    share: f64,
    loads_ok: usize,
    k: u32,
}

fn setup() -> impl Strategy<Value = Setup> {
    (
        1usize..4,
        1usize..5,
        3usize..9,
        prop_oneof![Just(0.25), Just(0.5), Just(1.0)],
        0usize..3,
        1u32..4,
    )
        .prop_map(|(engines, slots, pages, share, loads_ok, k)| Setup {
            engines,
            slots,
            pages,
            share,
            loads_ok,
            k,
        })
}

fn run(setup: &Setup, ops: &[Op]) -> Sim {
    let cfg = Config {
        engines: setup.engines,
        decode_steps: setup.k,
        task_share: setup.share,
        ..Config::default()
    };
    let mut sim = Sim::new(cfg, setup.slots, setup.pages);
    sim.loads_ok = setup.loads_ok;
    sim.load("m").expect("load");
    let mut ids = Vec::new();
    for op in ops {
        match op.clone() {
            Op::Submit {
                band,
                session,
                task,
                preemptible,
                tokens,
                pages,
            } => {
                let mut r = Request::new(FakeJob::new(tokens).pages(pages))
                    .priority(band)
                    .preemptible(preemptible);
                r.session = session.map(|s| format!("s{s}"));
                r.task = task.map(|t| format!("t{t}"));
                match sim.submit(r) {
                    Ok(id) => ids.push(id),
                    Err(e) => assert!(matches!(e, SchedError::QueueFull { .. }), "{e}"),
                }
            }
            Op::Batch {
                n,
                band,
                preemptible,
                tokens,
                label,
            } => {
                let reqs = (0..n)
                    .map(|_| {
                        let mut r = Request::new(FakeJob::new(tokens))
                            .priority(band)
                            .preemptible(preemptible);
                        r.task = label.map(|t| format!("t{t}"));
                        r
                    })
                    .collect();
                ids.extend(sim.batch(reqs).expect("batch"));
            }
            Op::CancelId(i) => {
                if !ids.is_empty() {
                    sim.cancel(Target::Id(ids[i % ids.len()]));
                }
            }
            Op::CancelSession(s) => {
                sim.cancel(Target::Session(format!("s{s}")));
            }
            Op::CancelTask(t) => {
                sim.cancel(Target::Task(format!("t{t}")));
            }
            Op::Boundary(e) => {
                let keys: Vec<EngineKey> = sim.engines.keys().copied().collect();
                if !keys.is_empty() {
                    sim.boundary(keys[e % keys.len()]);
                }
            }
            Op::FinishLoads => sim.finish_loads(),
            Op::SetK(k) => sim.core.set_decode_steps(k).expect("k"),
        }
    }
    sim.run(100_000);
    sim.finish();
    sim
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn the_rules_hold_over_random_workloads(setup in setup(), ops in proptest::collection::vec(op(), 0..60)) {
        let sim = run(&setup, &ops);
        prop_assert!(sim.violations.is_empty(), "violations:\n{}", sim.violations.join("\n"));
        for (id, m) in &sim.meta {
            let end = sim.end(*id);
            if !m.preemptible {
                prop_assert!(
                    matches!(end, End::Finished | End::Cancelled | End::Superseded { .. } | End::Failed(SchedError::BadRequest { .. })),
                    "{id} (not preemptible) ended {end:?}"
                );
            }
            let failed = matches!(end, End::Failed(SchedError::GenerationFailed { .. }));
            prop_assert!(!failed, "{} failed: no engine fails here", id);
        }
        let st = sim.core.status();
        let blocked = st.models.first().is_some_and(|m| m.growth_blocked);
        prop_assert_eq!(blocked, !sim.load_failed.is_empty());
        prop_assert!(st.models.iter().all(|m| m.engines.len() <= setup.engines + usize::from(blocked)));
    }
}
