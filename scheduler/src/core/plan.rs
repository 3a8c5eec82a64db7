//! A step boundary: what an engine evicts and admits ([`Core::plan_boundary`]) and what
//! came of it ([`Core::boundary_done`]).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use super::{Admission, BoundaryDone, Core, EngineKey, Place, Plan, Report, Resolved, TaskKey};
use crate::engine::JobId;
use crate::error::SchedError;
use crate::outcome::{End, Event};
use crate::request::Priority;
use crate::status::EngineState;

/// A victim chosen for a waiting interactive request.
struct Pair {
    by: JobId,
    victim: JobId,
    engine: usize,
}

impl<P> Core<P> {
    /// The engine reached a step boundary (its worker is idle, or its last step returned):
    /// decides what it evicts and admits now. `None`: nothing to do (nothing running, nothing
    /// to admit) — wait for a change. Between this and [`boundary_done`](Core::boundary_done)
    /// the engine gets no other plan.
    ///
    /// In order:
    /// 1. every job of the engine being stopped (cancelled, superseded) is evicted;
    /// 2. preemption: each waiting `Interactive` request (oldest first) that finds no free
    ///    slot it may use on any engine claims a victim — a running `preemptible` job of
    ///    another task on an engine it may use, lowest band first, then youngest (latest
    ///    admitted) first; victims on this engine are evicted now, those on others at their
    ///    own next boundary;
    /// 3. admission: each free slot goes to the highest-precedence request this engine may
    ///    take (highest band, then oldest), where a request's task must own no engine or own
    ///    this one, and hold fewer than its share of this engine's slots.
    pub fn plan_boundary(&mut self, key: EngineKey, now: Instant) -> Option<Plan<P>> {
        let decode_steps = self.cfg.decode_steps;
        let exit = Plan {
            engine: key,
            evict: Vec::new(),
            admit: Vec::new(),
            running: 0,
            decode_steps,
            exit: true,
        };
        let shut_down = self.shut_down;
        let Some(eng) = self.engine_mut(key) else {
            return Some(exit);
        };
        if eng.in_boundary {
            return None;
        }
        if eng.state != EngineState::Ready {
            return Some(exit);
        }
        let on_engine: Vec<JobId> = eng.jobs.iter().copied().collect();
        if shut_down {
            eng.in_boundary = true;
            for id in &on_engine {
                if let Some(j) = self.jobs.get_mut(id) {
                    j.stop.get_or_insert(End::Failed(SchedError::ShutDown));
                    j.place = Place::Evicting(key);
                }
            }
            return Some(Plan {
                evict: on_engine,
                ..exit
            });
        }

        // 1. Stopped jobs leave first.
        let mut evict = Vec::new();
        for id in on_engine {
            if let Some(j) = self.jobs.get_mut(&id)
                && j.stop.is_some()
            {
                j.place = Place::Evicting(key);
                evict.push(id);
            }
        }
        let (slots, held) = self
            .engine(key)
            .map(|e| (e.slots, e.jobs.len()))
            .unwrap_or((0, 0));
        let mut free = slots.saturating_sub(held - evict.len());

        // 2. Preemption.
        for pair in self.preemption_pairs(key, free) {
            if pair.engine != key.engine {
                continue;
            }
            if let Some(None) = self.stop(pair.victim, End::Preempted { by: pair.by }, now)
                && let Some(j) = self.jobs.get_mut(&pair.victim)
            {
                j.place = Place::Evicting(key);
                evict.push(pair.victim);
                free += 1;
            }
        }

        // 3. Admission.
        let mut admit = Vec::new();
        while free > 0 {
            let Some(id) = self.best_for(key) else { break };
            if let Some(payload) = self.place_on(id, key, now) {
                admit.push((id, payload));
            }
            free -= 1;
        }

        let held = self.engine(key).map(|e| e.jobs.len()).unwrap_or(0);
        let running = held - evict.len() - admit.len();
        if evict.is_empty() && admit.is_empty() && running == 0 {
            return None;
        }
        if let Some(e) = self.engine_mut(key) {
            e.in_boundary = true;
        }
        Some(Plan {
            engine: key,
            evict,
            admit,
            running,
            decode_steps,
            exit: false,
        })
    }

    /// Whether the engine may take `id` now (a free slot aside): its task owns no engine or
    /// this one, and holds fewer than its share of this engine's slots.
    fn may_take(&self, task: &TaskKey, key: EngineKey, extra: Option<&(usize, usize)>) -> bool {
        let Some(e) = self.engine(key) else {
            return false;
        };
        if e.state != EngineState::Ready {
            return false;
        }
        let (owner, placed) = self
            .tasks
            .get(task)
            .map(|t| (t.engine, t.placed))
            .unwrap_or((None, 0));
        let owner = owner.or(extra.map(|x| x.0));
        if owner.is_some_and(|o| o != key.engine) {
            return false;
        }
        let mine = (if owner == Some(key.engine) { placed } else { 0 }) + extra.map_or(0, |x| x.1);
        mine < self.cfg.task_limit(e.slots)
    }

    /// The highest-precedence queued request the engine may take.
    fn best_for(&self, key: EngineKey) -> Option<JobId> {
        let m = self.models.get(key.model)?;
        for band in Priority::ALL {
            for id in m.queues.get(band) {
                if let Some(j) = self.jobs.get(id)
                    && self.may_take(&j.task, key, None)
                {
                    return Some(*id);
                }
            }
        }
        None
    }

    /// Moves a queued request onto the engine (admitting) and hands out its payload.
    fn place_on(&mut self, id: JobId, key: EngineKey, now: Instant) -> Option<P> {
        let j = self.jobs.get_mut(&id)?;
        let q = self.models[key.model].queues.get_mut(j.band);
        if let Ok(pos) = q.binary_search(&id) {
            q.remove(pos);
        }
        j.place = Place::Admitting(key);
        j.planned_at = Some(now);
        let t = self.tasks.entry(j.task.clone()).or_default();
        t.queued = t.queued.saturating_sub(1);
        t.placed += 1;
        t.engine = Some(key.engine);
        if let Some(e) = self.engine_mut(key) {
            e.jobs.insert(id);
        }
        self.jobs.get_mut(&id)?.payload.take()
    }

    /// Matches the waiting interactive requests that find no free slot with victims, over
    /// the whole pool of the engine's model (see [`plan_boundary`](Core::plan_boundary)).
    /// `here_free` is the engine's free slots after its evictions.
    fn preemption_pairs(&self, here: EngineKey, here_free: usize) -> Vec<Pair> {
        let Some(m) = self.models.get(here.model) else {
            return Vec::new();
        };
        let mut free: Vec<usize> = m
            .engines
            .iter()
            .enumerate()
            .map(|(i, e)| match e.state {
                EngineState::Ready if i == here.engine => here_free,
                EngineState::Ready => e.slots.saturating_sub(e.jobs.len()),
                _ => 0,
            })
            .collect();
        // Slots this pass already gave a task: (engine, count).
        let mut extra: BTreeMap<&TaskKey, (usize, usize)> = BTreeMap::new();
        let mut claimed = BTreeSet::new();
        let mut pairs = Vec::new();
        for id in m.queues.get(Priority::Interactive) {
            let Some(j) = self.jobs.get(id) else { continue };
            let usable: Vec<usize> = (0..m.engines.len())
                .filter(|&e| {
                    self.may_take(
                        &j.task,
                        EngineKey {
                            model: here.model,
                            engine: e,
                        },
                        extra.get(&j.task),
                    )
                })
                .collect();
            if let Some(&e) = usable
                .iter()
                .find(|&&e| free[e] > 0 && j.busy_on != Some(e))
            {
                free[e] -= 1;
                extra.entry(&j.task).or_insert((e, 0)).1 += 1;
                continue;
            }
            let victim = usable
                .iter()
                .flat_map(|&e| m.engines[e].jobs.iter().map(move |v| (e, *v)))
                .filter(|(_, v)| !claimed.contains(v))
                .filter_map(|(e, v)| self.jobs.get(&v).map(|vj| (e, v, vj)))
                .filter(|(_, _, vj)| {
                    matches!(vj.place, Place::Running(_))
                        && vj.stop.is_none()
                        && vj.preemptible
                        && vj.task != j.task
                })
                .min_by_key(|(_, _, vj)| (vj.band.rank(), Reverse(vj.start_seq)));
            if let Some((e, v, _)) = victim {
                claimed.insert(v);
                extra.entry(&j.task).or_insert((e, 0)).1 += 1;
                pairs.push(Pair {
                    by: *id,
                    victim: v,
                    engine: e,
                });
            }
        }
        pairs
    }

    /// The engine's boundary is over: applies what happened (evictions, admissions, finished
    /// jobs, a failure) and says who resolved. Chunks of the step for the `muted` jobs must
    /// be dropped (they were being stopped); those of every other job delivered, before the
    /// outcomes.
    pub fn boundary_done(
        &mut self,
        key: EngineKey,
        report: Report<P>,
        now: Instant,
    ) -> BoundaryDone<P> {
        let mut done = BoundaryDone {
            resolved: Vec::new(),
            returned: Vec::new(),
            muted: BTreeSet::new(),
            dropped: Vec::new(),
            exit: false,
        };
        if let Some(e) = self.engine_mut(key) {
            e.in_boundary = false;
        }
        for id in report.evicted {
            let Some(j) = self.jobs.get(&id) else {
                continue;
            };
            if j.place != Place::Evicting(key) {
                continue;
            }
            let end = j.stop.clone().unwrap_or(End::Cancelled);
            done.resolved.push(self.resolve(id, end, now));
        }
        for (id, adm) in report.admissions {
            let Some(j) = self.jobs.get_mut(&id) else {
                continue;
            };
            if j.place != Place::Admitting(key) {
                continue;
            }
            match adm {
                Admission::Taken => {
                    j.place = Place::Running(key);
                    j.started_at = j.planned_at;
                    j.start_seq = self.next_seq;
                    j.busy_on = None;
                    self.next_seq += 1;
                    let model = self.models[key.model].name.clone();
                    self.events.push(Event::Started {
                        id,
                        model,
                        engine: key.engine,
                    });
                }
                Admission::Busy(p) => {
                    j.busy_on = Some(key.engine);
                    self.counters.busy_refusals += 1;
                    done.returned.extend(self.unplace(id, p, now));
                }
                Admission::NotTried(p) => done.returned.extend(self.unplace(id, p, now)),
                Admission::Invalid { field, reason } => {
                    let end = j
                        .stop
                        .clone()
                        .unwrap_or(End::Failed(SchedError::BadRequest { field, reason }));
                    done.resolved.push(self.resolve(id, end, now));
                }
            }
        }
        for id in report.finished {
            let Some(j) = self.jobs.get(&id) else {
                continue;
            };
            if j.place != Place::Running(key) {
                continue;
            }
            if j.stop.is_some() {
                done.muted.insert(id);
            }
            let end = j.stop.clone().unwrap_or(End::Finished);
            done.resolved.push(self.resolve(id, end, now));
        }
        if let Some(reason) = report.failure {
            let name = self.models[key.model].name.to_string();
            for id in self.batch_of(key) {
                let err = SchedError::GenerationFailed {
                    model: name.clone(),
                    engine: key.engine,
                    reason: reason.clone(),
                };
                let end = self
                    .jobs
                    .get(&id)
                    .and_then(|j| j.stop.clone())
                    .unwrap_or(End::Failed(err));
                done.muted.insert(id);
                done.resolved.push(self.resolve(id, end, now));
            }
            if let Some(e) = self.engine_mut(key) {
                e.state = EngineState::Failed;
            }
            self.events.push(Event::EngineFailed {
                model: name.as_str().into(),
                engine: key.engine,
                reason,
            });
            done.dropped = self.check_dead(key.model, now);
        }
        for id in self.batch_of(key) {
            if self.jobs.get(&id).is_some_and(|j| j.stop.is_some()) {
                done.muted.insert(id);
            }
        }
        // At shutdown the engine exits once it holds nothing; jobs it took during this
        // boundary are evicted by the next (exit) plan.
        done.exit = self
            .engine(key)
            .is_none_or(|e| e.state != EngineState::Ready || (self.shut_down && e.jobs.is_empty()));
        self.check_growth();
        done
    }

    /// An admission that did not happen: the request goes back to its place in its queue,
    /// or, if it was stopped meanwhile, resolves (returned with its payload).
    fn unplace(&mut self, id: JobId, payload: P, now: Instant) -> Option<(P, Resolved)> {
        let j = self.jobs.get_mut(&id)?;
        if let Some(end) = j.stop.clone() {
            return Some((payload, self.resolve(id, end, now)));
        }
        let Place::Admitting(key) = j.place else {
            return None;
        };
        j.place = Place::Queued;
        j.payload = Some(payload);
        j.planned_at = None;
        let q = self.models[key.model].queues.get_mut(j.band);
        if let Err(pos) = q.binary_search(&id) {
            q.insert(pos, id);
        }
        if let Some(t) = self.tasks.get_mut(&j.task) {
            t.placed = t.placed.saturating_sub(1);
            t.queued += 1;
            if t.placed == 0 {
                t.engine = None;
            }
        }
        if let Some(e) = self.engine_mut(key) {
            e.jobs.remove(&id);
        }
        None
    }
}
