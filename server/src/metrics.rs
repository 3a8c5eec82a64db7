//! `GET /metrics`: the scheduler's [`Status`] (queue depth per band, running sequences, engines
//! by state, KV pages, counters) read at scrape time, plus what only the HTTP layer sees —
//! time to first token and inter-token latency histograms, tokens and responses by status —
//! in the Prometheus text format (0.0.4).

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use gpuport_scheduler::{EngineState, Priority, Status};
use parking_lot::Mutex;

/// A Prometheus histogram over fixed bucket bounds (seconds), lock-free to observe.
pub struct Histogram {
    bounds: &'static [f64],
    buckets: Vec<AtomicU64>,
    count: AtomicU64,
    sum_ns: AtomicU64,
}

impl Histogram {
    /// A histogram with these upper bounds (ascending), plus `+Inf`.
    pub fn new(bounds: &'static [f64]) -> Histogram {
        Histogram {
            bounds,
            buckets: bounds.iter().map(|_| AtomicU64::new(0)).collect(),
            count: AtomicU64::new(0),
            sum_ns: AtomicU64::new(0),
        }
    }

    /// Records `n` observations of `d`.
    pub fn observe_n(&self, d: Duration, n: u64) {
        let s = d.as_secs_f64();
        if let Some(i) = self.bounds.iter().position(|b| s <= *b) {
            self.buckets[i].fetch_add(n, Ordering::Relaxed);
        }
        self.count.fetch_add(n, Ordering::Relaxed);
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.sum_ns
            .fetch_add(ns.saturating_mul(n), Ordering::Relaxed);
    }

    /// Observations so far.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    fn render(&self, out: &mut String, name: &str, help: &str) {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        let mut cumulative = 0;
        for (b, c) in self.bounds.iter().zip(&self.buckets) {
            cumulative += c.load(Ordering::Relaxed);
            let _ = writeln!(out, "{name}_bucket{{le=\"{b}\"}} {cumulative}");
        }
        let count = self.count();
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {count}");
        let sum = self.sum_ns.load(Ordering::Relaxed) as f64 / 1e9;
        let _ = writeln!(out, "{name}_sum {sum}\n{name}_count {count}");
    }
}

const TTFT_BOUNDS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];
const ITL_BOUNDS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];

/// What the HTTP layer measures.
pub struct Metrics {
    /// Request arrival to the first generated token.
    pub ttft: Histogram,
    /// Time per generated token after the first (a chunk of n tokens that came d after the
    /// previous one counts n observations of d / n).
    pub inter_token: Histogram,
    /// Generated tokens.
    pub completion_tokens: AtomicU64,
    /// Prompt tokens of accepted requests.
    pub prompt_tokens: AtomicU64,
    /// Prompt tokens served from shared KV pages.
    pub cached_tokens: AtomicU64,
    /// Requests whose client went away before the end (cancelled on disconnect).
    pub disconnects: AtomicU64,
    responses: Mutex<Vec<(&'static str, u16, u64)>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            ttft: Histogram::new(TTFT_BOUNDS),
            inter_token: Histogram::new(ITL_BOUNDS),
            completion_tokens: AtomicU64::new(0),
            prompt_tokens: AtomicU64::new(0),
            cached_tokens: AtomicU64::new(0),
            disconnects: AtomicU64::new(0),
            responses: Mutex::new(Vec::new()),
        }
    }
}

impl Metrics {
    /// Counts one response of `status` from `endpoint`.
    pub fn response(&self, endpoint: &'static str, status: u16) {
        let mut r = self.responses.lock();
        match r
            .iter_mut()
            .find(|(e, s, _)| *e == endpoint && *s == status)
        {
            Some(entry) => entry.2 += 1,
            None => r.push((endpoint, status, 1)),
        }
    }

    /// The Prometheus text for `status` and these metrics; `ready` is whether every model
    /// has loaded.
    pub fn render(&self, status: &Status, ready: bool) -> String {
        let mut out = String::with_capacity(4096);
        let mut gauge = |name: &str, help: &str, kind: &str, rows: Vec<(String, f64)>| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
            for (labels, v) in rows {
                let _ = writeln!(out, "{name}{labels} {v}");
            }
        };
        gauge(
            "gpuport_ready",
            "1 once every model has loaded.",
            "gauge",
            vec![(String::new(), f64::from(u8::from(ready)))],
        );
        let mut queued = Vec::new();
        let mut running = Vec::new();
        let mut engines = Vec::new();
        let mut pages_used = Vec::new();
        let mut pages_total = Vec::new();
        let mut blocked = Vec::new();
        for m in &status.models {
            let model = escape(&m.name);
            for band in Priority::ALL {
                queued.push((
                    format!("{{model=\"{model}\",band=\"{band}\"}}"),
                    *m.queued.get(band) as f64,
                ));
            }
            running.push((
                format!("{{model=\"{model}\"}}"),
                m.engines.iter().map(|e| e.running).sum::<usize>() as f64,
            ));
            for state in [
                EngineState::Loading,
                EngineState::Ready,
                EngineState::Failed,
            ] {
                let name = match state {
                    EngineState::Loading => "loading",
                    EngineState::Ready => "ready",
                    EngineState::Failed => "failed",
                };
                engines.push((
                    format!("{{model=\"{model}\",state=\"{name}\"}}"),
                    m.count(state) as f64,
                ));
            }
            for e in &m.engines {
                if let Some((used, total)) = e.kv_pages {
                    let l = format!("{{model=\"{model}\",engine=\"{}\"}}", e.index);
                    pages_used.push((l.clone(), used as f64));
                    pages_total.push((l, total as f64));
                }
            }
            blocked.push((
                format!("{{model=\"{model}\"}}"),
                f64::from(u8::from(m.growth_blocked)),
            ));
        }
        gauge(
            "gpuport_queue_depth",
            "Requests waiting, per model and priority band.",
            "gauge",
            queued,
        );
        gauge(
            "gpuport_running_sequences",
            "Requests in an engine's batch, per model.",
            "gauge",
            running,
        );
        gauge(
            "gpuport_engines",
            "Engines (model copies) per model, by state.",
            "gauge",
            engines,
        );
        gauge(
            "gpuport_kv_pages_used",
            "KV pages in use (running and retained sequences) after the engine's last step boundary.",
            "gauge",
            pages_used,
        );
        gauge(
            "gpuport_kv_pages_total",
            "KV pages in the engine's pool.",
            "gauge",
            pages_total,
        );
        gauge(
            "gpuport_growth_blocked",
            "1 when a load failed and the model's pool will not grow again.",
            "gauge",
            blocked,
        );
        gauge(
            "gpuport_decode_steps",
            "Decode steps per engine step call (K).",
            "gauge",
            vec![(String::new(), f64::from(status.decode_steps))],
        );
        let c = &status.counters;
        for (name, help, v) in [
            (
                "gpuport_requests_submitted_total",
                "Requests the scheduler accepted.",
                c.submitted,
            ),
            (
                "gpuport_requests_rejected_total",
                "Requests refused because their band's queue was full (429).",
                c.rejected,
            ),
            (
                "gpuport_requests_finished_total",
                "Requests that ran to completion.",
                c.finished,
            ),
            (
                "gpuport_preemptions_total",
                "Requests preempted by an interactive request.",
                c.preemptions,
            ),
            (
                "gpuport_supersessions_total",
                "Requests superseded by a newer request of their session.",
                c.supersessions,
            ),
            (
                "gpuport_cancellations_total",
                "Requests cancelled (DELETE, or the client went away).",
                c.cancellations,
            ),
            (
                "gpuport_failures_total",
                "Requests that failed.",
                c.failures,
            ),
            (
                "gpuport_busy_refusals_total",
                "Admissions deferred for lack of KV pages.",
                c.busy_refusals,
            ),
            (
                "gpuport_disconnects_total",
                "Requests whose client went away before the end.",
                self.disconnects.load(Ordering::Relaxed),
            ),
            (
                "gpuport_prompt_tokens_total",
                "Prompt tokens of accepted requests.",
                self.prompt_tokens.load(Ordering::Relaxed),
            ),
            (
                "gpuport_cached_prompt_tokens_total",
                "Prompt tokens whose KV came from shared pages.",
                self.cached_tokens.load(Ordering::Relaxed),
            ),
            (
                "gpuport_completion_tokens_total",
                "Generated tokens.",
                self.completion_tokens.load(Ordering::Relaxed),
            ),
        ] {
            gauge(name, help, "counter", vec![(String::new(), v as f64)]);
        }
        let rows = self
            .responses
            .lock()
            .iter()
            .map(|(e, s, n)| (format!("{{endpoint=\"{e}\",status=\"{s}\"}}"), *n as f64))
            .collect();
        gauge(
            "gpuport_http_responses_total",
            "Responses of the generation endpoints, by status.",
            "counter",
            rows,
        );
        self.ttft.render(
            &mut out,
            "gpuport_time_to_first_token_seconds",
            "Request arrival to the first generated token.",
        );
        self.inter_token.render(
            &mut out,
            "gpuport_inter_token_seconds",
            "Time per generated token after the first (chunk gap / tokens in the chunk).",
        );
        out
    }
}

/// A label value with `\`, `"` and newlines escaped.
fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_are_cumulative() {
        let h = Histogram::new(&[0.01, 0.1, 1.0]);
        h.observe_n(Duration::from_millis(5), 2);
        h.observe_n(Duration::from_millis(50), 1);
        h.observe_n(Duration::from_secs(5), 1);
        let mut out = String::new();
        h.render(&mut out, "x", "help");
        assert!(out.contains("x_bucket{le=\"0.01\"} 2\n"), "{out}");
        assert!(out.contains("x_bucket{le=\"0.1\"} 3\n"), "{out}");
        assert!(out.contains("x_bucket{le=\"1\"} 3\n"), "{out}");
        assert!(out.contains("x_bucket{le=\"+Inf\"} 4\n"), "{out}");
        assert!(out.contains("x_count 4\n"), "{out}");
        assert!(out.contains("x_sum 5.06\n"), "{out}");
    }
}
