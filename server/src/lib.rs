#![doc = include_str!("../README.md")]

mod api;
mod error;
mod generate;
pub mod metrics;
mod model;
pub mod request;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use gpuport_llm::{GenChunk, GenJob, GenOutput};
use gpuport_scheduler::{Engine, EngineLoader, SchedError, Scheduler};
use parking_lot::Mutex;

pub use api::router;
pub use error::ApiError;
pub use metrics::Metrics;
pub use model::{ModelError, ServedModel};

/// A loader whose engines run [`GenJob`]s: [`gpuport_llm::LlmLoader`], or a test's fake.
pub trait GenLoader:
    EngineLoader<Engine: Engine<Job = GenJob, Chunk = GenChunk, Output = GenOutput>>
{
}

impl<L> GenLoader for L where
    L: EngineLoader<Engine: Engine<Job = GenJob, Chunk = GenChunk, Output = GenOutput>>
{
}

/// How the HTTP layer behaves (the scheduler and engines have their own configuration).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// The key every route but `/health` needs, as `Authorization: Bearer KEY`; `None`: no
    /// key.
    pub api_key: Option<String>,
    /// Origins allowed to call from a browser (CORS); `*` allows any. Empty: no CORS headers.
    pub cors_origins: Vec<String>,
    /// Send the usage chunk at the end of every stream, as if each asked for
    /// `stream_options.include_usage`.
    pub always_include_usage: bool,
    /// How often a stream with nothing to send (queued, or between chunks) gets a `:`
    /// comment, which also notices a client that went away.
    pub keep_alive: Duration,
    /// The `Retry-After` seconds of a 429 (band queue full) or 503.
    pub retry_after_s: u64,
    /// The largest request body, bytes.
    pub body_limit: usize,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            api_key: None,
            cors_origins: Vec::new(),
            always_include_usage: false,
            keep_alive: Duration::from_secs(1),
            retry_after_s: 1,
            body_limit: 8 << 20,
        }
    }
}

/// Where the models stand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadState {
    /// Loading; the ids loaded so far.
    Loading(Vec<String>),
    /// Every model has its first engine.
    Ready,
    /// A load failed; the message.
    Failed(String),
}

/// The server's state: the scheduler, the models it answers for, the configuration, the
/// metrics. Share it as `Arc<Gateway<L>>` with [`router`]; the scheduler's own threads do the
/// work, so no handler blocks a runtime thread.
pub struct Gateway<L: EngineLoader> {
    scheduler: Scheduler<L>,
    models: Vec<Arc<ServedModel>>,
    config: ServerConfig,
    metrics: Arc<Metrics>,
    state: Mutex<LoadState>,
    started: u64,
    seeds: AtomicU64,
}

impl<L: GenLoader> Gateway<L> {
    /// A gateway over `scheduler` for `models` (the first is the default for a request that
    /// names none), still loading: call [`load`](Gateway::load) (on a thread that may block)
    /// to bring up each model's first engine. Fails on an empty or duplicated model list.
    pub fn new(
        scheduler: Scheduler<L>,
        models: Vec<ServedModel>,
        config: ServerConfig,
    ) -> Result<Arc<Gateway<L>>, SchedError> {
        if models.is_empty() {
            return Err(SchedError::bad_request(Some("models"), "no model to serve"));
        }
        for (i, m) in models.iter().enumerate() {
            if models[..i].iter().any(|o| o.id() == m.id()) {
                return Err(SchedError::bad_request(
                    Some("models"),
                    format!("model id {:?} is given twice", m.id()),
                ));
            }
        }
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        Ok(Arc::new(Gateway {
            scheduler,
            models: models.into_iter().map(Arc::new).collect(),
            config,
            metrics: Arc::new(Metrics::default()),
            state: Mutex::new(LoadState::Loading(Vec::new())),
            started: now.as_secs(),
            seeds: AtomicU64::new(now.as_nanos() as u64),
        }))
    }

    /// Loads each model's first engine in order, on this thread (it blocks: call it from a
    /// thread of its own or `spawn_blocking`). Until it returns, `/health` answers 503 and
    /// generation requests 503 `model_loading`. On a failure the state is
    /// [`LoadState::Failed`] and the error is returned.
    pub fn load(&self) -> Result<(), SchedError> {
        for m in &self.models {
            if let Err(e) = self.scheduler.load(m.id()) {
                *self.state.lock() = LoadState::Failed(format!("{}: {e}", m.id()));
                return Err(e);
            }
            if let LoadState::Loading(done) = &mut *self.state.lock() {
                done.push(m.id().to_owned());
            }
        }
        *self.state.lock() = LoadState::Ready;
        Ok(())
    }

    /// The load state.
    pub fn state(&self) -> LoadState {
        self.state.lock().clone()
    }

    /// The scheduler.
    pub fn scheduler(&self) -> &Scheduler<L> {
        &self.scheduler
    }

    /// The models, in the order given.
    pub fn models(&self) -> &[Arc<ServedModel>] {
        &self.models
    }

    /// The metrics.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// The configuration.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    fn ready(&self) -> bool {
        matches!(*self.state.lock(), LoadState::Ready)
    }

    /// The model a request names (the first when it names none), or 404.
    fn model(&self, name: Option<&str>) -> Result<Arc<ServedModel>, ApiError> {
        match name {
            None => Ok(Arc::clone(&self.models[0])),
            Some(n) => self
                .models
                .iter()
                .find(|m| m.id() == n)
                .cloned()
                .ok_or_else(|| ApiError::model_not_found(n)),
        }
    }

    /// A seed for a request that gave none: distinct per request (splitmix64 of a counter
    /// started from the clock).
    fn fresh_seed(&self) -> u64 {
        let mut z = self
            .seeds
            .fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed)
            .wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// Serves `gateway` on `listener` until the future resolves with an I/O error (never
/// otherwise). Sockets get `TCP_NODELAY`, so a streamed token is not held back by Nagle's
/// algorithm.
pub async fn serve<L: GenLoader>(
    listener: tokio::net::TcpListener,
    gateway: Arc<Gateway<L>>,
) -> std::io::Result<()> {
    use axum::serve::ListenerExt;
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, router(gateway)).await
}
