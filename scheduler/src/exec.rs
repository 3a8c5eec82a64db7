//! Carrying out one step boundary's [`Plan`] on an [`Engine`]: the part of a boundary that
//! runs outside the scheduler's lock. The threaded driver and the test simulations both use
//! it, so both exercise the same handling of refusals, failures and panics.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::core::{Admission, Plan, Report};
use crate::engine::{Engine, JobId, Progress, Refusal};

/// What [`execute`] did, for [`Core::boundary_done`](crate::core::Core::boundary_done) (the
/// report) and for delivering results (the rest).
pub struct Executed<E: Engine, S> {
    /// The report for the core.
    pub report: Report<(E::Job, S)>,
    /// Outputs of evicted jobs (partial) and of finished ones (final), by job.
    pub outputs: Vec<(JobId, E::Output)>,
    /// The step's chunks, in the engine's order.
    pub chunks: Vec<(JobId, E::Chunk)>,
    /// The side data of every admitted job that the engine took or refused as invalid (the
    /// payload's second half), for the caller to keep until the job resolves.
    pub kept: Vec<(JobId, S)>,
}

/// Carries out `plan` on `engine`: every eviction, then the admissions in order until the
/// first `Busy` (the rest are not offered, so no lower-precedence job overtakes a refused
/// one), then one step of `plan.decode_steps` if the batch holds anything. A `Busy` from an
/// engine that holds nothing becomes an invalid refusal ("never fits"). An `Err` from the
/// step, or a panic in any engine call, is reported as the engine's failure; nothing is
/// called on the engine after that.
pub fn execute<E: Engine, S>(engine: &mut E, plan: Plan<(E::Job, S)>) -> Executed<E, S> {
    let mut failure: Option<String> = None;
    let mut outputs = Vec::new();
    let mut chunks = Vec::new();
    let mut kept = Vec::new();
    let mut evicted = Vec::with_capacity(plan.evict.len());
    for id in plan.evict {
        if failure.is_none() {
            match catch_unwind(AssertUnwindSafe(|| engine.evict(id))) {
                Ok(out) => outputs.push((id, out)),
                Err(p) => failure = Some(panic_reason("evict", &p)),
            }
        }
        evicted.push(id);
    }
    let mut in_batch = plan.running;
    let mut blocked = false;
    let mut admissions = Vec::with_capacity(plan.admit.len());
    for (id, (job, side)) in plan.admit {
        if blocked || failure.is_some() {
            admissions.push((id, Admission::NotTried((job, side))));
            continue;
        }
        let adm = match catch_unwind(AssertUnwindSafe(|| engine.admit(id, job))) {
            Ok(Ok(())) => {
                in_batch += 1;
                kept.push((id, side));
                Admission::Taken
            }
            Ok(Err((_, Refusal::Busy))) if in_batch == 0 => {
                kept.push((id, side));
                Admission::Invalid {
                    field: None,
                    reason: "does not fit: the engine refused it (Busy) while running nothing"
                        .into(),
                }
            }
            Ok(Err((job, Refusal::Busy))) => {
                blocked = true;
                Admission::Busy((job, side))
            }
            Ok(Err((_, Refusal::Invalid { field, reason }))) => {
                kept.push((id, side));
                Admission::Invalid { field, reason }
            }
            Err(p) => {
                // The job is lost inside the broken engine: report it taken, so that it
                // resolves with the engine's failure.
                failure = Some(panic_reason("admit", &p));
                kept.push((id, side));
                Admission::Taken
            }
        };
        admissions.push((id, adm));
    }
    let mut finished = Vec::new();
    if failure.is_none() && in_batch > 0 && !plan.exit {
        match catch_unwind(AssertUnwindSafe(|| engine.step(plan.decode_steps))) {
            Ok(Ok(progress)) => {
                for p in progress {
                    match p {
                        Progress::Chunk(id, c) => chunks.push((id, c)),
                        Progress::Finished(id, out) => {
                            finished.push(id);
                            outputs.push((id, out));
                        }
                    }
                }
            }
            Ok(Err(f)) => failure = Some(f.reason),
            Err(p) => failure = Some(panic_reason("step", &p)),
        }
    }
    Executed {
        report: Report {
            evicted,
            admissions,
            finished,
            failure,
        },
        outputs,
        chunks,
        kept,
    }
}

fn panic_reason(call: &str, payload: &Box<dyn Any + Send>) -> String {
    let msg = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-string payload".to_owned());
    format!("the engine panicked in {call}: {msg}")
}
