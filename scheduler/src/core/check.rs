//! The core's structural invariants, checked on demand (tests call it after every step).

use std::collections::BTreeMap;

use super::{Core, Place, TaskKey};
use crate::request::Priority;
use crate::status::EngineState;

impl<P> Core<P> {
    /// Checks the bookkeeping: every live request is in exactly one place (a queue, in id
    /// order, or one engine's batch), holds its payload exactly while queued, and a queued
    /// one is never marked stopped; no engine holds more than its slots (not counting the
    /// jobs it evicts at its current boundary); every task's jobs on engines are on the one
    /// engine it owns, within its share; the session index points at live requests of that
    /// session. `Err` says what is broken.
    pub fn check(&self) -> Result<(), String> {
        let mut per_task: BTreeMap<&TaskKey, (usize, usize, Option<usize>)> = BTreeMap::new();
        for (id, j) in &self.jobs {
            let m = self
                .models
                .get(j.model)
                .ok_or(format!("{id}: no model {}", j.model))?;
            let in_queue = m.queues.get(j.band).binary_search(id).is_ok();
            let t = per_task.entry(&j.task).or_insert((0, 0, None));
            match j.place {
                Place::Queued => {
                    if !in_queue || j.payload.is_none() || j.stop.is_some() {
                        return Err(format!(
                            "{id}: queued but in_queue={in_queue} payload={}",
                            j.payload.is_some()
                        ));
                    }
                    t.0 += 1;
                }
                Place::Admitting(k) | Place::Running(k) | Place::Evicting(k) => {
                    if in_queue || j.payload.is_some() || k.model != j.model {
                        return Err(format!(
                            "{id}: placed on {k:?} but queued or holding its payload"
                        ));
                    }
                    let e = m
                        .engines
                        .get(k.engine)
                        .ok_or(format!("{id}: no engine {k:?}"))?;
                    if !e.jobs.contains(id) {
                        return Err(format!("{id}: not in the batch of {k:?}"));
                    }
                    if matches!(j.place, Place::Evicting(_)) && j.stop.is_none() {
                        return Err(format!("{id}: evicting without a stop reason"));
                    }
                    t.1 += 1;
                    if t.2.is_some_and(|e| e != k.engine) {
                        return Err(format!("task {:?} is on two engines", j.task));
                    }
                    t.2 = Some(k.engine);
                }
            }
        }
        for (mi, m) in self.models.iter().enumerate() {
            for band in Priority::ALL {
                let q = m.queues.get(band);
                if q.iter().zip(q.iter().skip(1)).any(|(a, b)| a >= b) {
                    return Err(format!("model {mi}: the {band} queue is out of order"));
                }
                for id in q {
                    if self
                        .jobs
                        .get(id)
                        .is_none_or(|j| j.place != Place::Queued || j.band != band)
                    {
                        return Err(format!("{id}: in the {band} queue but not queued there"));
                    }
                }
            }
            for (ei, e) in m.engines.iter().enumerate() {
                let staying = e
                    .jobs
                    .iter()
                    .filter(|id| {
                        self.jobs
                            .get(id)
                            .is_some_and(|j| !matches!(j.place, Place::Evicting(_)))
                    })
                    .count();
                if e.state == EngineState::Ready && staying > e.slots {
                    return Err(format!(
                        "engine {mi}/{ei}: {staying} jobs in {} slots",
                        e.slots
                    ));
                }
                if e.state != EngineState::Ready && !e.jobs.is_empty() {
                    return Err(format!("engine {mi}/{ei}: {:?} but holds jobs", e.state));
                }
                for id in &e.jobs {
                    if self
                        .jobs
                        .get(id)
                        .and_then(|j| j.place.engine())
                        .is_none_or(|k| k.engine != ei || k.model != mi)
                    {
                        return Err(format!("engine {mi}/{ei}: holds {id}, which is elsewhere"));
                    }
                }
            }
        }
        if per_task.len() != self.tasks.len() {
            return Err(format!(
                "{} tasks recorded, {} have live jobs",
                self.tasks.len(),
                per_task.len()
            ));
        }
        for (task, (queued, placed, engine)) in per_task {
            let t = self
                .tasks
                .get(task)
                .ok_or(format!("task {task:?} unrecorded"))?;
            if t.queued != queued || t.placed != placed || t.engine != engine {
                return Err(format!(
                    "task {task:?}: recorded ({}, {}, {:?}), actual ({queued}, {placed}, {engine:?})",
                    t.queued, t.placed, t.engine
                ));
            }
            if let Some(ei) = engine {
                let slots = self.models[task.model].engines[ei].slots;
                if placed > self.cfg.task_limit(slots) {
                    return Err(format!(
                        "task {task:?}: {placed} slots of {slots}, over its share"
                    ));
                }
            }
        }
        for (key, id) in &self.sessions {
            if self
                .jobs
                .get(id)
                .is_none_or(|j| j.session.as_deref() != Some(key.as_str()))
            {
                return Err(format!(
                    "session {key:?} points at {id}, not a live request of it"
                ));
            }
        }
        Ok(())
    }
}
