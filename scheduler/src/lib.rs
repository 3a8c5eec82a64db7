#![doc = include_str!("../README.md")]

mod config;
pub mod core;
mod driver;
mod engine;
mod error;
pub mod exec;
mod outcome;
mod request;
mod status;
mod ticket;

pub use config::Config;
pub use driver::{Scheduler, Subscription};
pub use engine::{Engine, EngineFailure, EngineLoader, JobId, LoadFailure, Progress, Refusal};
pub use error::SchedError;
pub use outcome::{End, Event, Outcome};
pub use request::{PerBand, Priority, Request, Target};
pub use status::{Counters, EngineState, EngineStatus, ModelStatus, Status};
pub use ticket::{BatchHandle, Ticket};
