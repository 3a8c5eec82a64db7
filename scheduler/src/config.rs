//! The scheduler's knobs.

use crate::error::SchedError;
use crate::request::PerBand;

/// How a [`Scheduler`](crate::Scheduler) (or a [`Core`](crate::core::Core)) schedules.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The most engines (copies of the model) per model. A cap, not a size: `load` brings up
    /// one, and another is loaded only when a task waits that no engine can admit.
    /// Default 2.
    pub engines: usize,
    /// Decode steps per [`Engine::step`](crate::Engine::step) call (K), so the length of a
    /// step boundary. Retune live with [`Scheduler::configure`](crate::Scheduler::configure).
    /// Default 8.
    pub decode_steps: u32,
    /// The share of an engine's slots one task may hold: `floor(task_share × slots)`, at
    /// least 1. Default 0.5, so one large batch never takes every slot from whoever arrives
    /// next. In `(0, 1]`.
    pub task_share: f64,
    /// The most requests waiting in each band's queue, over every model; a submission past
    /// it fails with `QUEUE_FULL`. A batch is accepted whole or not at all, so a cap must fit
    /// the largest batch. Default 1024 per band.
    pub queue_cap: PerBand<usize>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            engines: 2,
            decode_steps: 8,
            task_share: 0.5,
            queue_cap: PerBand::splat(1024),
        }
    }
}

impl Config {
    /// Checks every field's range; a `BAD_REQUEST` names the field at fault.
    pub fn validate(&self) -> Result<(), SchedError> {
        if self.engines == 0 {
            return Err(SchedError::bad_request(
                Some("engines"),
                "the engine cap must be at least 1",
            ));
        }
        if self.decode_steps == 0 {
            return Err(SchedError::bad_request(
                Some("decode_steps"),
                "decode_steps must be at least 1",
            ));
        }
        if !(self.task_share > 0.0 && self.task_share <= 1.0) {
            return Err(SchedError::bad_request(
                Some("task_share"),
                "task_share must be in (0, 1]",
            ));
        }
        Ok(())
    }

    /// The slots one task may hold on an engine of `slots` slots.
    pub fn task_limit(&self, slots: usize) -> usize {
        // `as` saturates; the product is in [0, slots].
        let share = (self.task_share * slots as f64).floor() as usize;
        share.clamp(1, slots.max(1))
    }
}
