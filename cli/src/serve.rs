//! `gpuport serve`: the OpenAI-compatible HTTP server (`gpuport-server`) over a scheduler of
//! batched engines, one pool per MODEL. This module only resolves the models, builds the
//! configuration from the flags, binds the socket and prints.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use gpuport_llm::loader::{ModelRef, Source, context_for};
use gpuport_llm::{EngineShape, LlmLoader, ModelConfig};
use gpuport_runtime::GpuOptions;
use gpuport_runtime::gguf::Gguf;
use gpuport_scheduler::{Config, PerBand, Scheduler};
use gpuport_server::{Gateway, ServedModel, ServerConfig};

use crate::llm;
use crate::{EXIT_INVALID, EXIT_USAGE};

/// The flags of `gpuport serve`.
#[derive(clap::Args, Debug, Clone)]
pub struct ServeArgs {
    /// The models to serve: .gguf files, ModelPort text-generation bundles or store ids (what
    /// `generate` takes). A request's `model` picks one by id — the file's stem, the bundle's
    /// folder name, or the store id; the first is the default. `GET /v1/models` lists them.
    #[arg(required = true, value_name = "MODEL")]
    pub models: Vec<PathBuf>,
    /// The address to listen on. The default answers this machine only; anything else
    /// (0.0.0.0) should come with --api-key.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// The port (0: any free port; the one chosen is printed).
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// Require `Authorization: Bearer KEY` on every route but /health.
    #[arg(long, value_name = "KEY", conflicts_with = "api_key_file")]
    pub api_key: Option<String>,
    /// Read the API key from this file (surrounding whitespace trimmed), so it stays out of
    /// the process list.
    #[arg(long, value_name = "FILE")]
    pub api_key_file: Option<PathBuf>,
    /// The most engines (copies of the weights and KV pool) per model. One is loaded at
    /// start; another only when requests wait while every engine is full, and never again
    /// after a load fails (the memory check).
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub engines: usize,
    /// Sequences one engine runs at once (its batch slots).
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub max_seqs: usize,
    /// Positions per sequence, prompt and reply (default: the bundle's, else min(4096, the
    /// model's); with several models, the smallest of theirs). Every sequence is fully
    /// backed by the KV pool.
    #[arg(long, value_name = "N")]
    pub ctx: Option<usize>,
    /// KV cache element type: f32, or f16 for half the pool's memory (default:
    /// `GPUPORT_KV_TYPE`, else f16 on a GPU and f32 on a CPU adapter).
    #[arg(long, value_name = "TYPE", value_parser = crate::llm::parse_kv_type)]
    pub kv_type: Option<gpuport_runtime::gguf::GgmlType>,
    /// The most requests waiting per priority band; past it a request gets 429 with
    /// Retry-After.
    #[arg(long, value_name = "N", default_value_t = 1024)]
    pub queue: usize,
    /// Allow browsers from this origin (CORS); repeatable; `*` allows any.
    #[arg(long = "cors-origin", value_name = "ORIGIN")]
    pub cors_origins: Vec<String>,
    /// Prompt rows one engine step runs at most beside the decoding rows: larger prefills
    /// prompts in fewer steps, smaller keeps the decoding streams' steps short.
    #[arg(long, value_name = "N", default_value_t = 256)]
    pub prefill_rows: usize,
    /// Decode steps per engine step (K): fewer GPU submits against a later cancel or
    /// admission (each takes effect at the next step boundary).
    #[arg(long, value_name = "K", default_value_t = 8)]
    pub decode_steps: u32,
    /// End every stream with the usage chunk, as if each request asked for
    /// `stream_options.include_usage`.
    #[arg(long)]
    pub always_include_usage: bool,
    /// Milliseconds of silence after which a stream gets a `:` keep-alive comment (which
    /// also notices a client that went away while its request is queued).
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    pub keep_alive_ms: u64,
    /// Keep every product in f32 (no tensor cores): a seeded request then draws the tokens it
    /// draws alone whatever the engine runs beside it (but at near-ties), at the cost of
    /// many-stream speed on GPUs with tensor cores. By default a step of 32 rows or more
    /// computes in f16 there, which moves logits by about 1e-3 of the largest.
    #[arg(long)]
    pub f32_products: bool,
}

/// The id a request's `model` names for MODEL.
fn model_id(mref: &ModelRef) -> String {
    let name = |p: &Path| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| p.display().to_string())
    };
    match mref {
        ModelRef::Gguf(p) => p
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| name(p)),
        ModelRef::Bundle(p) if p.is_file() => p.parent().map(name).unwrap_or_else(|| name(p)),
        ModelRef::Bundle(p) => name(p),
        ModelRef::StoreId(id) => id.clone(),
    }
}

fn usage_error(message: &str) -> u8 {
    eprintln!("error: {message}");
    EXIT_USAGE
}

/// Runs `gpuport serve`.
pub fn run(a: ServeArgs) -> u8 {
    if a.max_seqs == 0
        || a.engines == 0
        || a.queue == 0
        || a.decode_steps == 0
        || a.prefill_rows == 0
    {
        return usage_error(
            "--max-seqs, --engines, --queue, --prefill-rows and --decode-steps must be at least 1",
        );
    }
    // The KV cache type, checked before anything loads (an engine loads lazily); unset, each
    // engine takes its adapter's default.
    let kv_type = match a.kv_type {
        Some(kv) => Some(kv),
        None => match gpuport_llm::kv_cache::env_kv_type() {
            Ok(kv) => kv,
            Err(e) => return usage_error(&e.to_string()),
        },
    };
    if a.ctx.is_some_and(|c| c < 2) {
        return usage_error("--ctx must be at least 2");
    }
    let api_key = match (&a.api_key, &a.api_key_file) {
        (Some(k), _) => Some(k.clone()),
        (None, Some(f)) => match std::fs::read_to_string(f) {
            Ok(k) if !k.trim().is_empty() => Some(k.trim().to_owned()),
            Ok(_) => return usage_error(&format!("{}: the key file is empty", f.display())),
            Err(e) => return usage_error(&format!("{}: {e}", f.display())),
        },
        (None, None) => None,
    };
    if api_key.as_deref().is_some_and(|k| k.is_empty()) {
        return usage_error("--api-key is empty");
    }
    // Resolve every MODEL first (typed errors, nothing loaded yet).
    let mut resolved: Vec<(String, Source, usize)> = Vec::new();
    for m in &a.models {
        let source = match llm::resolve(m) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("error [{}]: {e}", e.code());
                return EXIT_USAGE;
            }
        };
        let id = model_id(&ModelRef::parse(m));
        if resolved.iter().any(|(other, _, _)| *other == id) {
            return usage_error(&format!(
                "two models would have the id {id:?}; serve copies under different file or \
                 folder names"
            ));
        }
        let header = Gguf::open(&source.gguf)
            .map_err(|e| e.to_string())
            .and_then(|g| ModelConfig::from_gguf(&g).map_err(|e| e.to_string()));
        let cfg = match header {
            Ok(c) => c,
            Err(e) => {
                eprintln!("error: {}: {e}", source.gguf.display());
                return EXIT_INVALID;
            }
        };
        let context = context_for(&cfg, a.ctx, source.context);
        resolved.push((id, source, context));
    }
    // One engine shape serves every model: the smallest context.
    let context = resolved.iter().map(|r| r.2).min().unwrap_or(2);
    let mut served = Vec::new();
    for (id, source, _) in &resolved {
        match ServedModel::open(id, &source.gguf, context, source.defaults.clone()) {
            Ok(m) => served.push(m),
            Err(e) => {
                eprintln!("error: {e}");
                return EXIT_INVALID;
            }
        }
    }
    let shape = EngineShape {
        prefill_rows: a.prefill_rows,
        kv_type,
        ..EngineShape::new(a.max_seqs, context)
    };
    let loader = LlmLoader::new(
        resolved
            .iter()
            .map(|(id, s, _)| (id.clone(), s.clone()))
            .collect(),
        shape,
    )
    .with_gpu(GpuOptions {
        tensor_cores: a.f32_products.then_some(false),
        ..GpuOptions::default()
    });
    let config = Config {
        engines: a.engines,
        decode_steps: a.decode_steps,
        queue_cap: PerBand::splat(a.queue),
        ..Config::default()
    };
    let scheduler = match Scheduler::new(loader, config) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error [{}]: {e}", e.code());
            return EXIT_USAGE;
        }
    };
    let server_config = ServerConfig {
        api_key,
        cors_origins: a.cors_origins.clone(),
        always_include_usage: a.always_include_usage,
        keep_alive: Duration::from_millis(a.keep_alive_ms.max(1)),
        ..ServerConfig::default()
    };
    let gateway = match Gateway::new(scheduler, served, server_config) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("error [{}]: {e}", e.code());
            return EXIT_USAGE;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("gpuport-http")
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: could not start the async runtime: {e}");
            return EXIT_INVALID;
        }
    };
    let ids: Vec<String> = resolved.iter().map(|r| r.0.clone()).collect();
    let code = runtime.block_on(async move {
        let addr = format!("{}:{}", a.host, a.port);
        let listener = match tokio::net::TcpListener::bind(&addr).await {
            Ok(l) => l,
            Err(e) => return usage_error(&format!("cannot listen on {addr}: {e}")),
        };
        let local: SocketAddr = listener
            .local_addr()
            .unwrap_or_else(|_| SocketAddr::from(([127, 0, 0, 1], a.port)));
        let open = !local.ip().is_loopback();
        if open && gateway.config().api_key.is_none() {
            eprintln!(
                "warning: listening on {} without --api-key: anyone who reaches it can use it",
                local.ip()
            );
        }
        eprintln!(
            "gpuport serve: listening on http://{local} (models: {}; context {context}, {} \
             sequences per engine, up to {} engines per model); loading…",
            ids.join(", "),
            a.max_seqs,
            a.engines
        );
        // The first engine of each model, on a thread of its own: /health says 503 until then.
        let (loaded_tx, loaded_rx) = tokio::sync::oneshot::channel();
        let loading = gateway.clone();
        let started = Instant::now();
        let spawned = std::thread::Builder::new()
            .name("gpuport-serve-load".into())
            .spawn(move || {
                let _ = loaded_tx.send(loading.load());
            });
        if let Err(e) = spawned {
            eprintln!("error: could not start the load thread: {e}");
            return EXIT_INVALID;
        }
        let server = gpuport_server::serve(listener, gateway.clone());
        tokio::pin!(server);
        let load = async {
            match loaded_rx.await {
                Ok(Ok(())) => {
                    eprintln!(
                        "gpuport serve: ready in {:.1} s",
                        started.elapsed().as_secs_f64()
                    );
                    None
                }
                Ok(Err(e)) => Some(e.to_string()),
                Err(_) => Some("the load thread died".to_owned()),
            }
        };
        tokio::select! {
            failed = load => {
                if let Some(e) = failed {
                    eprintln!("error: loading failed: {e}");
                    return EXIT_INVALID;
                }
            }
            r = &mut server => return served_until(r),
            () = shutdown_signal() => return stopped(),
        }
        tokio::select! {
            r = &mut server => served_until(r),
            () = shutdown_signal() => stopped(),
        }
    });
    // The connections' tasks may still hold scheduler handles; the engines' threads are the
    // scheduler's own and stop with the process.
    runtime.shutdown_timeout(Duration::from_secs(1));
    code
}

fn served_until(r: std::io::Result<()>) -> u8 {
    match r {
        Ok(()) => crate::EXIT_OK,
        Err(e) => {
            eprintln!("error: the server stopped: {e}");
            EXIT_INVALID
        }
    }
}

fn stopped() -> u8 {
    eprintln!("gpuport serve: stopping");
    crate::EXIT_OK
}

/// Ctrl-C, or SIGTERM on Unix.
async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}
