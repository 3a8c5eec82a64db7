//! The router over a fake engine (no GPU): `/health` while loading, after a load and after a
//! failed one; 503 for generation while loading; the SSE framing; a dropped connection
//! cancelling its request; 429 with `Retry-After`. The end-to-end suite with the real engine and
//! the `openai` client is `cli/tests/serve.rs`.

#![allow(clippy::unwrap_used)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use gpuport_gguf::Gguf;
use gpuport_llm::{Finish, GenChunk, GenJob, GenOutput};
use gpuport_scheduler::{
    Config, Engine, EngineFailure, EngineLoader, JobId, LoadFailure, PerBand, Progress, Refusal,
    Scheduler,
};
use gpuport_server::{Gateway, LoadState, ServedModel, ServerConfig};
use parking_lot::{Condvar, Mutex};

/// Each job emits token `3 + (step % 40)` per decode step, text `x`, until `max_tokens`;
/// steps take `step_ms`.
struct Fake {
    jobs: Vec<(JobId, GenJob, Vec<u32>)>,
    step_ms: u64,
    /// Every step fails (a broken device).
    broken: bool,
}

fn output(job: &GenJob, ids: Vec<u32>, finish: Finish) -> GenOutput {
    GenOutput {
        text: "x".repeat(ids.len()),
        ids,
        prompt_tokens: job.prompt.len(),
        cached_tokens: 0,
        finish,
        prefill_ms: 0.0,
        decode_ms: 0.0,
    }
}

impl Engine for Fake {
    type Job = GenJob;
    type Chunk = GenChunk;
    type Output = GenOutput;

    fn slots(&self) -> usize {
        2
    }

    fn admit(&mut self, id: JobId, job: GenJob) -> Result<(), (GenJob, Refusal)> {
        self.jobs.push((id, job, Vec::new()));
        Ok(())
    }

    fn step(&mut self, k: u32) -> Result<Vec<Progress<GenChunk, GenOutput>>, EngineFailure> {
        std::thread::sleep(Duration::from_millis(self.step_ms));
        if self.broken {
            return Err(EngineFailure::new("the device was lost"));
        }
        let mut out = Vec::new();
        for (id, job, ids) in &mut self.jobs {
            let n = (k as usize).min(job.max_tokens - ids.len());
            let new: Vec<u32> = (0..n).map(|i| 3 + ((ids.len() + i) % 40) as u32).collect();
            ids.extend(&new);
            out.push(Progress::Chunk(
                *id,
                GenChunk {
                    text: "x".repeat(n),
                    ids: new,
                },
            ));
        }
        let (done, running): (Vec<_>, Vec<_>) = self
            .jobs
            .drain(..)
            .partition(|(_, job, ids)| ids.len() == job.max_tokens);
        self.jobs = running;
        for (id, job, ids) in done {
            out.push(Progress::Finished(id, output(&job, ids, Finish::Length)));
        }
        Ok(out)
    }

    fn evict(&mut self, id: JobId) -> GenOutput {
        let at = self.jobs.iter().position(|j| j.0 == id).unwrap();
        let (_, job, ids) = self.jobs.remove(at);
        output(&job, ids, Finish::Evicted)
    }
}

/// Loads a [`Fake`] once `gate` opens (or fails, when `fail`).
struct Loader {
    gate: Arc<(Mutex<bool>, Condvar)>,
    fail: bool,
    step_ms: u64,
    broken: bool,
}

impl EngineLoader for Loader {
    type Engine = Fake;

    fn load(&self, model: &str) -> Result<Fake, LoadFailure> {
        if model != "tiny" {
            return Err(LoadFailure::UnknownModel);
        }
        let (open, cv) = &*self.gate;
        let mut open = open.lock();
        while !*open {
            cv.wait(&mut open);
        }
        if self.fail {
            return Err(LoadFailure::Failed("out of memory".into()));
        }
        Ok(Fake {
            jobs: Vec::new(),
            step_ms: self.step_ms,
            broken: self.broken,
        })
    }
}

struct Running {
    gateway: Arc<Gateway<Loader>>,
    gate: Arc<(Mutex<bool>, Condvar)>,
    addr: String,
    _runtime: tokio::runtime::Runtime,
}

impl Running {
    fn open_gate(&self) {
        *self.gate.0.lock() = true;
        self.gate.1.notify_all();
    }

    /// Waits for the load thread to finish.
    fn wait_loaded(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while matches!(self.gateway.state(), LoadState::Loading(_)) {
            assert!(Instant::now() < deadline, "the load did not finish");
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// A gateway over the fake engine, served on a loopback port, loading in the background
/// behind a closed gate.
fn start(fail: bool, step_ms: u64, queue: usize) -> Running {
    start_with(fail, step_ms, queue, false)
}

fn start_with(fail: bool, step_ms: u64, queue: usize, broken: bool) -> Running {
    let gate = Arc::new((Mutex::new(false), Condvar::new()));
    let loader = Loader {
        gate: Arc::clone(&gate),
        fail,
        step_ms,
        broken,
    };
    let config = Config {
        engines: 1,
        queue_cap: PerBand::splat(queue),
        ..Config::default()
    };
    let scheduler = Scheduler::new(loader, config).unwrap();
    let (bytes, _) = gpuport_testing::tiny_llm::build();
    let g = Gguf::parse(bytes).unwrap();
    let model = ServedModel::from_gguf("tiny", &g, 256, Default::default()).unwrap();
    let gateway = Gateway::new(scheduler, vec![model], ServerConfig::default()).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    runtime.spawn(gpuport_server::serve(listener, Arc::clone(&gateway)));
    let loading = Arc::clone(&gateway);
    std::thread::spawn(move || loading.load());
    Running {
        gateway,
        gate,
        addr,
        _runtime: runtime,
    }
}

/// One request over a fresh connection: (status, raw head and body).
fn http(addr: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let status = text.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, text)
}

#[test]
fn health_is_503_while_loading_then_200() {
    let r = start(false, 1, 16);
    let (status, text) = http(&r.addr, "GET", "/health", "");
    assert_eq!(status, 503, "{text}");
    assert!(
        text.contains("\"status\":\"loading\"") && text.contains("retry-after"),
        "{text}"
    );
    let (status, text) = http(&r.addr, "POST", "/v1/completions", r#"{"prompt": "w1"}"#);
    assert_eq!(status, 503, "{text}");
    assert!(text.contains("\"code\":\"model_loading\""), "{text}");
    // A malformed body is a 400 even while loading; an unknown model a 404.
    let (status, _) = http(&r.addr, "POST", "/v1/completions", r#"{"prompt": 5}"#);
    assert_eq!(status, 400);
    let (status, _) = http(
        &r.addr,
        "POST",
        "/v1/completions",
        r#"{"prompt": "a", "model": "x"}"#,
    );
    assert_eq!(status, 404);
    r.open_gate();
    r.wait_loaded();
    let (status, text) = http(&r.addr, "GET", "/health", "");
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("\"state\":\"ready\""), "{text}");
    let (status, text) = http(
        &r.addr,
        "POST",
        "/v1/completions",
        r#"{"prompt": "w1", "max_tokens": 5}"#,
    );
    assert_eq!(status, 200, "{text}");
    assert!(
        text.contains("\"text\":\"xxxxx\"") && text.contains("\"completion_tokens\":5"),
        "{text}"
    );
    let (status, text) = http(&r.addr, "GET", "/nowhere", "");
    assert_eq!(status, 404);
    assert!(text.contains("\"code\":\"not_found\""), "{text}");
    let (status, text) = http(&r.addr, "GET", "/v1/completions", "");
    assert_eq!(status, 405);
    assert!(text.contains("\"code\":\"method_not_allowed\""), "{text}");
    // A large body is tokenized off the runtime's threads: the same checks apply.
    let long = format!(r#"{{"prompt": "{}"}}"#, "w1 ".repeat(10_000));
    let (status, text) = http(&r.addr, "POST", "/v1/completions", &long);
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("context_length_exceeded"), "{text}");
}

#[test]
fn a_failed_load_keeps_health_at_503() {
    let r = start(true, 1, 16);
    r.open_gate();
    r.wait_loaded();
    let (status, text) = http(&r.addr, "GET", "/health", "");
    assert_eq!(status, 503, "{text}");
    assert!(
        text.contains("\"status\":\"failed\"") && text.contains("out of memory"),
        "{text}"
    );
    let metrics = http(&r.addr, "GET", "/metrics", "").1;
    assert!(metrics.contains("gpuport_ready 0"), "{metrics}");
}

#[test]
fn sse_frames() {
    let r = start(false, 1, 16);
    r.open_gate();
    r.wait_loaded();
    let body = r#"{"messages": [{"role": "user", "content": "w1"}], "max_tokens": 4, "stream": true,
                   "stream_options": {"include_usage": true}}"#;
    let (status, text) = http(&r.addr, "POST", "/v1/chat/completions", body);
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("content-type: text/event-stream"), "{text}");
    let events: Vec<serde_json::Value> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    assert!(text.trim_end().ends_with("data: [DONE]\r\n\r\n0") || text.contains("data: [DONE]"));
    assert_eq!(events[0]["choices"][0]["delta"]["role"], "assistant");
    let roles = events
        .iter()
        .filter(|e| !e["choices"][0]["delta"]["role"].is_null())
        .count();
    assert_eq!(roles, 1);
    let content: String = events
        .iter()
        .filter_map(|e| e["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(content, "xxxx");
    let finishes: Vec<_> = events
        .iter()
        .filter_map(|e| e["choices"][0]["finish_reason"].as_str())
        .collect();
    assert_eq!(finishes, ["length"]);
    let last = events.last().unwrap();
    assert_eq!(last["choices"], serde_json::json!([]));
    assert_eq!(last["usage"]["completion_tokens"], 4);
    assert!(events.iter().all(|e| e["id"] == events[0]["id"]));
}

#[test]
fn an_engine_failure_mid_stream_is_an_error_event() {
    let r = start_with(false, 1, 16, true);
    r.open_gate();
    r.wait_loaded();
    let body =
        r#"{"messages": [{"role": "user", "content": "w1"}], "max_tokens": 4, "stream": true}"#;
    let (status, text) = http(&r.addr, "POST", "/v1/chat/completions", body);
    assert_eq!(status, 200, "{text}");
    let data: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .collect();
    assert_eq!(data.len(), 2, "{text}");
    assert!(data[0].contains("\"role\":\"assistant\""), "{text}");
    let err: serde_json::Value = serde_json::from_str(data[1]).unwrap();
    assert_eq!(err["error"]["code"], "generation_failed", "{text}");
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("the device was lost")
    );
    // Not streamed: a 500. (The engine was dropped; with one engine and no growth left the
    // model has none, so a later request is a 503.)
    let (status, text) = http(&r.addr, "POST", "/v1/completions", r#"{"prompt": "w1"}"#);
    assert!(status == 500 || status == 503, "{text}");
}

#[test]
fn a_dropped_connection_cancels_its_request() {
    let r = start(false, 50, 16);
    r.open_gate();
    r.wait_loaded();
    let mut s = TcpStream::connect(&r.addr).unwrap();
    let body = r#"{"prompt": "w1", "max_tokens": 250, "stream": true}"#;
    write!(
        s,
        "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut buf = [0u8; 512];
    let _ = s.read(&mut buf).unwrap();
    let sched = r.gateway.scheduler();
    let deadline = Instant::now() + Duration::from_secs(5);
    while sched.status().running() == 0 {
        assert!(Instant::now() < deadline, "never ran");
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(s);
    let dropped = Instant::now();
    while sched.status().running() > 0 {
        assert!(dropped.elapsed() < Duration::from_secs(2), "not cancelled");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(sched.status().counters.cancellations, 1);
}

#[test]
fn a_full_band_is_429_with_retry_after() {
    let r = start(false, 50, 1);
    r.open_gate();
    r.wait_loaded();
    // Two slots running, one waiting: the next normal request is refused.
    let body = r#"{"prompt": "w1", "max_tokens": 250, "stream": true}"#;
    let sched = r.gateway.scheduler();
    let mut held = Vec::new();
    for (running, queued) in [(1, 0), (2, 0), (2, 1)] {
        let (status, s) = open_stream(&r.addr, body);
        assert_eq!(status, 200);
        held.push(s);
        let deadline = Instant::now() + Duration::from_secs(5);
        while (sched.status().running(), sched.status().queued.normal) != (running, queued) {
            assert!(Instant::now() < deadline, "{:?}", sched.status());
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    let (status, text) = http(&r.addr, "POST", "/v1/completions", r#"{"prompt": "w1"}"#);
    assert_eq!(status, 429, "{text}");
    assert!(
        text.contains("retry-after: 1") && text.contains("\"code\":\"queue_full\""),
        "{text}"
    );
    let background = r#"{"prompt": "w1", "stream": true, "priority": "background"}"#;
    assert_eq!(
        open_stream(&r.addr, background).0,
        200,
        "another band has room"
    );
}

/// Starts a streamed request and returns its status once the head arrives, with the open
/// connection.
fn open_stream(addr: &str, body: &str) -> (u16, TcpStream) {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut buf = [0u8; 64];
    let n = s.read(&mut buf).unwrap();
    let head = String::from_utf8_lossy(&buf[..n]).into_owned();
    (head.split_whitespace().nth(1).unwrap().parse().unwrap(), s)
}
