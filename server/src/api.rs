//! The routes: generation (in [`crate::generate`]), models, health, metrics, cancellation;
//! the API key check and CORS around them.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use gpuport_scheduler::{EngineState, JobId, Target};
use serde_json::{Value, json};
use tower_http::cors::{AllowOrigin, CorsLayer};

use crate::error::ApiError;
use crate::generate;
use crate::request::Endpoint;
use crate::{Gateway, GenLoader, LoadState};

/// The API as an axum [`Router`], ready to serve (see [`crate::serve`]) or to nest in a
/// larger application.
pub fn router<L: GenLoader>(gateway: Arc<Gateway<L>>) -> Router {
    let limit = gateway.config.body_limit;
    let protected = Router::new()
        .route("/v1/chat/completions", post(chat::<L>))
        .route("/v1/completions", post(completions::<L>))
        .route("/v1/models", get(models::<L>))
        .route("/v1/models/{id}", get(model::<L>))
        .route("/v1/gpuport/requests/{id}", delete(cancel_request::<L>))
        .route("/v1/gpuport/sessions/{key}", delete(cancel_session::<L>))
        .route("/metrics", get(metrics::<L>))
        .route_layer(middleware::from_fn_with_state(
            Arc::clone(&gateway),
            authorize::<L>,
        ));
    let mut app = Router::new()
        .route("/health", get(health::<L>))
        .merge(protected)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(limit))
        .with_state(Arc::clone(&gateway));
    if let Some(cors) = cors(&gateway.config.cors_origins) {
        app = app.layer(cors);
    }
    app
}

fn cors(origins: &[String]) -> Option<CorsLayer> {
    if origins.is_empty() {
        return None;
    }
    let allow = if origins.iter().any(|o| o == "*") {
        AllowOrigin::any()
    } else {
        AllowOrigin::list(origins.iter().filter_map(|o| HeaderValue::from_str(o).ok()))
    };
    Some(
        CorsLayer::new()
            .allow_origin(allow)
            .allow_methods([Method::GET, Method::POST, Method::DELETE, Method::OPTIONS])
            .allow_headers([header::AUTHORIZATION, header::CONTENT_TYPE]),
    )
}

/// 401 unless the request carries the key (when one is set). Compares in constant time.
async fn authorize<L: GenLoader>(
    State(gw): State<Arc<Gateway<L>>>,
    request: Request,
    next: Next,
) -> Response {
    if let Some(key) = &gw.config.api_key {
        let given = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or_default();
        if !same(given.trim().as_bytes(), key.as_bytes()) {
            return ApiError::unauthorized().into_response();
        }
    }
    next.run(request).await
}

fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn not_found(method: Method, uri: axum::http::Uri) -> Response {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "invalid_request_error",
        format!("no route {method} {}", uri.path()),
    )
    .code("not_found")
    .into_response()
}

async fn method_not_allowed(method: Method, uri: axum::http::Uri) -> Response {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "invalid_request_error",
        format!("{method} is not allowed on {}", uri.path()),
    )
    .code("method_not_allowed")
    .into_response()
}

fn body(b: Result<Bytes, BytesRejection>) -> Result<Bytes, ApiError> {
    b.map_err(|e| {
        let status = e.status();
        ApiError::new(status, "invalid_request_error", e.body_text())
    })
}

async fn chat<L: GenLoader>(
    State(gw): State<Arc<Gateway<L>>>,
    b: Result<Bytes, BytesRejection>,
) -> Response {
    let response = match body(b) {
        Ok(b) => generate::complete(Arc::clone(&gw), Endpoint::Chat, b).await,
        Err(e) => e.into_response(),
    };
    gw.metrics.response("chat", response.status().as_u16());
    response
}

async fn completions<L: GenLoader>(
    State(gw): State<Arc<Gateway<L>>>,
    b: Result<Bytes, BytesRejection>,
) -> Response {
    let response = match body(b) {
        Ok(b) => generate::complete(Arc::clone(&gw), Endpoint::Completion, b).await,
        Err(e) => e.into_response(),
    };
    gw.metrics
        .response("completions", response.status().as_u16());
    response
}

fn model_object<L: GenLoader>(gw: &Gateway<L>, m: &crate::ServedModel) -> Value {
    json!({
        "id": m.id(),
        "object": "model",
        "created": gw.started,
        "owned_by": "gpuport",
        "x_gpuport": { "context": m.context(), "chat": m.has_chat_template() },
    })
}

async fn models<L: GenLoader>(State(gw): State<Arc<Gateway<L>>>) -> Response {
    let data: Vec<Value> = gw.models.iter().map(|m| model_object(&gw, m)).collect();
    Json(json!({ "object": "list", "data": data })).into_response()
}

async fn model<L: GenLoader>(
    State(gw): State<Arc<Gateway<L>>>,
    Path(id): Path<String>,
) -> Response {
    match gw.model(Some(&id)) {
        Ok(m) => Json(model_object(&gw, &m)).into_response(),
        Err(e) => e.into_response(),
    }
}

/// `GET /health`: 503 while loading (or after a failed load), else 200 with the pools.
async fn health<L: GenLoader>(State(gw): State<Arc<Gateway<L>>>) -> Response {
    let status = gw.scheduler.status();
    let models: Vec<Value> = gw
        .models
        .iter()
        .map(|m| {
            let pool = status.model(m.id());
            let engines: Vec<Value> = pool
                .map(|p| {
                    p.engines
                        .iter()
                        .map(|e| {
                            json!({
                                "index": e.index,
                                "state": match e.state {
                                    EngineState::Loading => "loading",
                                    EngineState::Ready => "ready",
                                    EngineState::Failed => "failed",
                                },
                                "slots": e.slots,
                                "running": e.running,
                                "kv_pages": e.kv_pages.map(|(used, total)| json!({"used": used, "total": total})),
                            })
                        })
                        .collect()
                })
                .unwrap_or_default();
            json!({
                "id": m.id(),
                "context": m.context(),
                "engines": engines,
                "queued": pool.map(|p| json!(p.queued)),
                "growth_blocked": pool.is_some_and(|p| p.growth_blocked),
            })
        })
        .collect();
    let (code, state, error) = match gw.state() {
        LoadState::Ready => (StatusCode::OK, "ok", None),
        LoadState::Loading(_) => (StatusCode::SERVICE_UNAVAILABLE, "loading", None),
        LoadState::Failed(e) => (StatusCode::SERVICE_UNAVAILABLE, "failed", Some(e)),
    };
    let mut headers = HeaderMap::new();
    if code != StatusCode::OK {
        headers.insert(
            header::RETRY_AFTER,
            HeaderValue::from(gw.config.retry_after_s),
        );
    }
    let body = json!({
        "status": state,
        "error": error,
        "models": models,
        "queued": status.queued,
        "running": status.running(),
        "counters": status.counters,
    });
    (code, headers, Json(body)).into_response()
}

async fn metrics<L: GenLoader>(State(gw): State<Arc<Gateway<L>>>) -> Response {
    let text = gw.metrics.render(&gw.scheduler.status(), gw.ready());
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        )],
        text,
    )
        .into_response()
}

/// The job id in a response id (`chatcmpl-17`, `cmpl-17`) or a bare number.
fn job_id(id: &str) -> Option<JobId> {
    let n = ["chatcmpl-", "cmpl-", "job-"]
        .iter()
        .find_map(|p| id.strip_prefix(p))
        .unwrap_or(id);
    n.parse().ok().map(JobId)
}

/// `DELETE /v1/gpuport/requests/{id}` → `{"cancelled": n}` (0 when it already ended).
async fn cancel_request<L: GenLoader>(
    State(gw): State<Arc<Gateway<L>>>,
    Path(id): Path<String>,
) -> Response {
    let Some(job) = job_id(&id) else {
        return ApiError::bad_field(
            "id",
            format!("{id:?} is not a request id (chatcmpl-N, cmpl-N or N)"),
        )
        .into_response();
    };
    let n = gw.scheduler.cancel(Target::Id(job));
    Json(json!({ "cancelled": n })).into_response()
}

/// `DELETE /v1/gpuport/sessions/{key}` → `{"cancelled": n}`.
async fn cancel_session<L: GenLoader>(
    State(gw): State<Arc<Gateway<L>>>,
    Path(key): Path<String>,
) -> Response {
    let n = gw.scheduler.cancel(Target::Session(key));
    Json(json!({ "cancelled": n })).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_parse() {
        assert_eq!(job_id("chatcmpl-17"), Some(JobId(17)));
        assert_eq!(job_id("cmpl-3"), Some(JobId(3)));
        assert_eq!(job_id("9"), Some(JobId(9)));
        assert_eq!(job_id("chatcmpl-x"), None);
        assert!(same(b"abc", b"abc") && !same(b"abc", b"abd") && !same(b"ab", b"abc"));
    }
}
