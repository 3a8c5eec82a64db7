//! A generation request from body to response: parse and check it, build the engine's
//! [`GenJob`], submit it to the scheduler, then answer with one JSON object or an SSE stream.
//!
//! The scheduler's threads deliver the chunks (`on_chunk`) and the outcome (`on_done`) into
//! one unbounded channel, so nothing here blocks a runtime thread and the chunks always come
//! before the outcome. The receiving side — the handler's future, or the SSE stream — holds a
//! [`CancelOnDrop`]: when the client goes away, the future or stream is dropped and the request
//! is cancelled, so it leaves its engine at the next step boundary and its slot and pages are
//! free for the next.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use axum::Json;
use axum::body::Bytes;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use gpuport_llm::{Finish, GenChunk, GenJob, GenOutput, Sampling};
use gpuport_scheduler::{End, JobId, Outcome, Request, Scheduler, Target};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::error::ApiError;
use crate::metrics::Metrics;
use crate::request::{self, Endpoint, GenRequest, Input};
use crate::{Gateway, GenLoader, ServedModel};

/// What the scheduler's threads send the request's receiver.
enum Msg {
    Chunk(GenChunk),
    Done(Outcome<GenOutput>),
}

/// Cancels its request when dropped before [`disarm`](CancelOnDrop::disarm): the client
/// disconnected, or closed the stream.
struct CancelOnDrop<L: GenLoader> {
    scheduler: Scheduler<L>,
    metrics: Arc<Metrics>,
    id: JobId,
    armed: bool,
}

impl<L: GenLoader> CancelOnDrop<L> {
    fn disarm(&mut self) {
        self.armed = false;
    }
}

impl<L: GenLoader> Drop for CancelOnDrop<L> {
    fn drop(&mut self) {
        if self.armed && self.scheduler.cancel(Target::Id(self.id)) > 0 {
            self.metrics.disconnects.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// A submitted request: its receiver and its guard.
struct Submitted<L: GenLoader> {
    rx: mpsc::UnboundedReceiver<Msg>,
    guard: CancelOnDrop<L>,
}

impl<L: GenLoader> Submitted<L> {
    /// The next message; `None` if the scheduler dropped the request's callbacks without an
    /// outcome (it never does: a request resolves exactly once).
    async fn next(&mut self) -> Option<Msg> {
        let m = self.rx.recv().await;
        if matches!(m, Some(Msg::Done(_)) | None) {
            self.guard.disarm();
        }
        m
    }
}

/// What a response needs to know about its request.
struct Reply {
    endpoint: Endpoint,
    id: String,
    created: u64,
    model: String,
    prompt_tokens: usize,
    include_usage: bool,
}

/// Bodies up to this size are parsed and tokenized on the runtime's thread (microseconds);
/// larger ones on the blocking pool.
const INLINE_BODY: usize = 16 << 10;

/// Handles one generation body.
pub(crate) async fn complete<L: GenLoader>(
    gw: Arc<Gateway<L>>,
    endpoint: Endpoint,
    body: Bytes,
) -> Response {
    let arrived = Instant::now();
    // Tokenizing a long prompt takes a while: off the runtime's threads.
    let prepared = if body.len() > INLINE_BODY {
        let g = Arc::clone(&gw);
        tokio::task::spawn_blocking(move || prepare(&g, endpoint, &body))
            .await
            .unwrap_or_else(|e| {
                Err(ApiError::new(
                    axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                    "server_error",
                    format!("preparing the request failed: {e}"),
                ))
            })
    } else {
        prepare(&gw, endpoint, &body)
    };
    let (model, req, job) = match prepared {
        Ok(x) => x,
        Err(e) => return e.into_response(),
    };
    let prompt_tokens = job.prompt.len();
    let (submitted, id) = match submit(&gw, &model, &req, job, arrived) {
        Ok(x) => x,
        Err(e) => return e.into_response(),
    };
    let reply = Reply {
        endpoint,
        id: match endpoint {
            Endpoint::Chat => format!("chatcmpl-{}", id.get()),
            Endpoint::Completion => format!("cmpl-{}", id.get()),
        },
        created: unix_now(),
        model: model.id().to_owned(),
        prompt_tokens,
        include_usage: req.include_usage || gw.config.always_include_usage,
    };
    if req.stream {
        stream(gw, submitted, reply).into_response()
    } else {
        whole(gw, submitted, reply).await
    }
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Parses the body and builds the job: 400 for a bad field or a prompt that does not fit the
/// context, 404 for an unknown model, 503 while loading.
fn prepare<L: GenLoader>(
    gw: &Gateway<L>,
    endpoint: Endpoint,
    body: &[u8],
) -> Result<(Arc<ServedModel>, GenRequest, GenJob), ApiError> {
    let req = request::parse(endpoint, body)?;
    let model = gw.model(req.model.as_deref())?;
    if !gw.ready() {
        return Err(ApiError::loading());
    }
    let prompt = model.prompt_ids(&req.input)?;
    let context = model.context();
    let n = prompt.len();
    let prompt_field = match req.input {
        Input::Messages(_) => "messages",
        Input::Text(_) | Input::Tokens(_) => "prompt",
    };
    if n >= context {
        return Err(ApiError::bad_field(
            prompt_field,
            format!(
                "this model's maximum context length is {context} tokens, and the prompt has \
                 {n} tokens (at least one more is needed for the reply)"
            ),
        )
        .code("context_length_exceeded"));
    }
    let max_tokens = match req.max_tokens {
        Some((m, field)) if n + m > context => {
            return Err(ApiError::bad_field(
                field,
                format!(
                    "this model's maximum context length is {context} tokens, and {} were \
                     requested ({n} in the prompt, {m} for the completion)",
                    n + m
                ),
            )
            .code("context_length_exceeded"));
        }
        Some((m, _)) => m,
        None => (model.defaults().max_tokens as usize).clamp(1, context - n),
    };
    let d = model.defaults();
    let sampling = Sampling {
        temperature: req.temperature.unwrap_or(d.temperature as f32),
        top_k: req
            .top_k
            .unwrap_or_else(|| d.top_k.map_or(0, |k| k.min(u64::from(u32::MAX)) as u32)),
        top_p: req.top_p.unwrap_or(d.top_p as f32),
        repeat_penalty: req
            .repeat_penalty
            .unwrap_or(d.repeat_penalty.unwrap_or(1.0) as f32),
        penalty_last_n: 64,
        seed: req.seed.unwrap_or_else(|| gw.fresh_seed()),
    };
    let job = GenJob {
        prompt,
        max_tokens,
        sampling,
        stop_tokens: model.stop_tokens().to_vec(),
        stop_text: req.stop.clone(),
    };
    Ok((model, req, job))
}

/// Submits the job; its chunks and outcome go to the returned receiver.
fn submit<L: GenLoader>(
    gw: &Gateway<L>,
    model: &ServedModel,
    req: &GenRequest,
    job: GenJob,
    arrived: Instant,
) -> Result<(Submitted<L>, JobId), ApiError> {
    let mut request = Request::new(job)
        .priority(req.priority)
        .preemptible(req.preemptible)
        .model(model.id());
    request.session = req.session.clone();
    request.task = req.task.clone();
    let (tx, rx) = mpsc::unbounded_channel();
    let chunk_tx = tx.clone();
    let metrics = Arc::clone(&gw.metrics);
    let mut last: Option<Instant> = None;
    // On the engine's worker thread: a few atomics and a channel send.
    let on_chunk = move |c: GenChunk| {
        let n = c.ids.len() as u64;
        if n > 0 {
            let now = Instant::now();
            match last {
                None => metrics.ttft.observe_n(now - arrived, 1),
                Some(prev) => {
                    let per = (now - prev).checked_div(n as u32).unwrap_or(Duration::ZERO);
                    metrics.inter_token.observe_n(per, n);
                }
            }
            last = Some(now);
            metrics.completion_tokens.fetch_add(n, Ordering::Relaxed);
        }
        let _ = chunk_tx.send(Msg::Chunk(c));
    };
    let ticket = gw
        .scheduler
        .complete(request, on_chunk)
        .map_err(|e| ApiError::from_sched(&e, gw.config.retry_after_s))?;
    let id = ticket.id();
    let guard = CancelOnDrop {
        scheduler: gw.scheduler.clone(),
        metrics: Arc::clone(&gw.metrics),
        id,
        armed: true,
    };
    ticket.on_done(move |o| {
        let _ = tx.send(Msg::Done(o));
    });
    Ok((Submitted { rx, guard }, id))
}

/// The standard finish reason, and gpuport's flag when the scheduler stopped the request.
/// A request stopped early keeps `length` (the reply is cut short, as at `max_tokens`), so a
/// strict client sees a value it knows; `x_gpuport` says why.
fn ending(
    o: &Outcome<GenOutput>,
    retry_after_s: u64,
) -> Result<(&'static str, Option<&'static str>), ApiError> {
    let reason = |f: Option<Finish>| match f {
        Some(Finish::Stop) => "stop",
        Some(Finish::Length) | Some(Finish::Evicted) | None => "length",
    };
    let finish = o.output.as_ref().map(|out| out.finish);
    match &o.end {
        End::Finished => Ok((reason(finish), None)),
        End::Preempted { .. } => Ok((reason(finish), Some("preempted"))),
        End::Superseded { .. } => Ok((reason(finish), Some("superseded"))),
        End::Cancelled => Ok((reason(finish), Some("cancelled"))),
        End::Failed(e) => Err(ApiError::from_sched(e, retry_after_s)),
    }
}

/// `x_gpuport`: the flag (if any) and the timings.
fn extension(o: &Outcome<GenOutput>, flag: Option<&str>) -> Value {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let queue = ms(o.started_at.unwrap_or(o.finished_at) - o.queued_at);
    let (prefill, decode) = o
        .output
        .as_ref()
        .map_or((0.0, 0.0), |out| (out.prefill_ms, out.decode_ms));
    let mut x = json!({
        "timings": { "queue_ms": queue, "prefill_ms": prefill, "decode_ms": decode },
    });
    if let (Some(flag), Some(map)) = (flag, x.as_object_mut()) {
        map.insert(flag.to_owned(), Value::Bool(true));
    }
    x
}

fn usage(prompt_tokens: usize, o: &Outcome<GenOutput>) -> Value {
    let (completion, cached) = o
        .output
        .as_ref()
        .map_or((0, 0), |out| (out.ids.len(), out.cached_tokens));
    json!({
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion,
        "total_tokens": prompt_tokens + completion,
        "prompt_tokens_details": { "cached_tokens": cached },
    })
}

fn count_usage(metrics: &Metrics, prompt_tokens: usize, o: &Outcome<GenOutput>) {
    metrics
        .prompt_tokens
        .fetch_add(prompt_tokens as u64, Ordering::Relaxed);
    if let Some(out) = &o.output {
        metrics
            .cached_tokens
            .fetch_add(out.cached_tokens as u64, Ordering::Relaxed);
    }
}

/// A non-streamed reply: waits for the outcome (the guard cancels if the client goes away
/// first and this future is dropped).
async fn whole<L: GenLoader>(gw: Arc<Gateway<L>>, mut sub: Submitted<L>, reply: Reply) -> Response {
    let outcome = loop {
        match sub.next().await {
            Some(Msg::Chunk(_)) => {}
            Some(Msg::Done(o)) => break o,
            None => {
                return ApiError::from_sched(
                    &gpuport_scheduler::SchedError::Internal {
                        reason: "the request ended without an outcome".into(),
                    },
                    1,
                )
                .into_response();
            }
        }
    };
    count_usage(&gw.metrics, reply.prompt_tokens, &outcome);
    let (finish, flag) = match ending(&outcome, gw.config.retry_after_s) {
        Ok(x) => x,
        Err(e) => return e.into_response(),
    };
    let text = outcome.output.as_ref().map_or("", |o| o.text.as_str());
    let choice = match reply.endpoint {
        Endpoint::Chat => json!({
            "index": 0,
            "message": { "role": "assistant", "content": text, "refusal": null },
            "logprobs": null,
            "finish_reason": finish,
        }),
        Endpoint::Completion => json!({
            "text": text,
            "index": 0,
            "logprobs": null,
            "finish_reason": finish,
        }),
    };
    let object = match reply.endpoint {
        Endpoint::Chat => "chat.completion",
        Endpoint::Completion => "text_completion",
    };
    Json(json!({
        "id": reply.id,
        "object": object,
        "created": reply.created,
        "model": reply.model,
        "choices": [choice],
        "usage": usage(reply.prompt_tokens, &outcome),
        "x_gpuport": extension(&outcome, flag),
    }))
    .into_response()
}

/// The SSE stream's state.
struct Streaming<L: GenLoader> {
    gw: Arc<Gateway<L>>,
    sub: Submitted<L>,
    reply: Reply,
    pending: VecDeque<Event>,
    /// The text sent so far (a stopped request's output may hold text not yet streamed).
    sent: String,
    done: bool,
}

impl Reply {
    fn chunk(&self, choices: Value, usage: Option<Value>, ext: Option<Value>) -> Event {
        let object = match self.endpoint {
            Endpoint::Chat => "chat.completion.chunk",
            Endpoint::Completion => "text_completion",
        };
        let mut v = json!({
            "id": self.id,
            "object": object,
            "created": self.created,
            "model": self.model,
            "choices": choices,
        });
        if let Some(map) = v.as_object_mut() {
            if self.include_usage {
                map.insert("usage".into(), usage.unwrap_or(Value::Null));
            }
            if let Some(x) = ext {
                map.insert("x_gpuport".into(), x);
            }
        }
        Event::default().data(v.to_string())
    }

    fn text(&self, text: &str, finish: Option<&str>, ext: Option<Value>) -> Event {
        let choice = match self.endpoint {
            Endpoint::Chat => json!({
                "index": 0,
                "delta": if finish.is_some() && text.is_empty() { json!({}) } else { json!({ "content": text }) },
                "logprobs": null,
                "finish_reason": finish,
            }),
            Endpoint::Completion => json!({
                "text": text,
                "index": 0,
                "logprobs": null,
                "finish_reason": finish,
            }),
        };
        self.chunk(json!([choice]), None, ext)
    }

    fn role(&self) -> Event {
        let choice = json!({
            "index": 0,
            "delta": { "role": "assistant", "content": "" },
            "logprobs": null,
            "finish_reason": null,
        });
        self.chunk(json!([choice]), None, None)
    }
}

/// A streamed reply: the role at once (chat), a chunk per piece of text, one chunk with the
/// finish reason, the usage chunk when asked for, `[DONE]` — or `data: {"error": …}` if the
/// request failed once streaming. `:` comments keep an idle stream (a queued request) alive.
fn stream<L: GenLoader>(
    gw: Arc<Gateway<L>>,
    sub: Submitted<L>,
    reply: Reply,
) -> Sse<impl futures_util::Stream<Item = Result<Event, Infallible>>> {
    let keep_alive = gw.config.keep_alive;
    let mut pending = VecDeque::new();
    if reply.endpoint == Endpoint::Chat {
        pending.push_back(reply.role());
    }
    let state = Streaming {
        gw,
        sub,
        reply,
        pending,
        sent: String::new(),
        done: false,
    };
    let events = futures_util::stream::unfold(state, |mut st| async move {
        loop {
            if let Some(e) = st.pending.pop_front() {
                return Some((Ok(e), st));
            }
            if st.done {
                return None;
            }
            match st.sub.next().await {
                Some(Msg::Chunk(c)) => {
                    if !c.text.is_empty() {
                        st.sent.push_str(&c.text);
                        let e = st.reply.text(&c.text, None, None);
                        st.pending.push_back(e);
                    }
                }
                Some(Msg::Done(o)) => {
                    st.done = true;
                    let events = st.finish(&o);
                    st.pending.extend(events);
                }
                None => {
                    st.done = true;
                    let e = ApiError::from_sched(
                        &gpuport_scheduler::SchedError::Internal {
                            reason: "the request ended without an outcome".into(),
                        },
                        1,
                    );
                    st.pending.push_back(
                        Event::default().data(json!({ "error": e.object() }).to_string()),
                    );
                }
            }
        }
    });
    Sse::new(events).keep_alive(KeepAlive::new().interval(keep_alive))
}

impl<L: GenLoader> Streaming<L> {
    /// The closing events for outcome `o`.
    fn finish(&mut self, o: &Outcome<GenOutput>) -> Vec<Event> {
        count_usage(&self.gw.metrics, self.reply.prompt_tokens, o);
        let (finish, flag) = match ending(o, self.gw.config.retry_after_s) {
            Ok(x) => x,
            Err(e) => {
                return vec![Event::default().data(json!({ "error": e.object() }).to_string())];
            }
        };
        let mut events = Vec::new();
        // Text the engine held back (a possible stop string) when the request was stopped.
        if let Some(out) = &o.output
            && let Some(rest) = out.text.strip_prefix(self.sent.as_str())
            && !rest.is_empty()
        {
            events.push(self.reply.text(rest, None, None));
        }
        events.push(self.reply.text("", Some(finish), Some(extension(o, flag))));
        if self.reply.include_usage {
            events.push(self.reply.chunk(
                json!([]),
                Some(usage(self.reply.prompt_tokens, o)),
                None,
            ));
        }
        events.push(Event::default().data("[DONE]"));
        events
    }
}
