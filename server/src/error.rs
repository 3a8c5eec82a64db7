//! The one error shape of the API, `{"error": {"message", "type", "param", "code"}}`, with its
//! HTTP status, built from a request problem or a [`SchedError`].

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use gpuport_scheduler::SchedError;

/// An error answered to a client: the status and the OpenAI error object.
///
/// ```
/// use gpuport_server::ApiError;
/// let e = ApiError::bad_field("temperature", "must be between 0 and 2, got 3");
/// assert_eq!(e.status().as_u16(), 400);
/// assert_eq!(e.body()["error"]["param"], "temperature");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{status}: {message}")]
pub struct ApiError {
    status: StatusCode,
    message: String,
    kind: &'static str,
    param: Option<String>,
    code: Option<String>,
    retry_after: Option<u64>,
}

impl ApiError {
    /// An error of `status`, OpenAI `type` `kind`, with a message.
    pub fn new(status: StatusCode, kind: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            message: message.into(),
            kind,
            param: None,
            code: None,
            retry_after: None,
        }
    }

    /// A 400 `invalid_request_error` about `field` (its path in the body, e.g.
    /// `messages[1].content`), with the field named at the start of the message.
    pub fn bad_field(field: &str, reason: impl std::fmt::Display) -> ApiError {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            format!("{field}: {reason}"),
        )
        .param(field)
    }

    /// A 400 `invalid_request_error` about the request as a whole.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "invalid_request_error", message)
    }

    /// 404 `model_not_found`.
    pub fn model_not_found(model: &str) -> ApiError {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            format!("The model `{model}` does not exist (GET /v1/models lists those served)"),
        )
        .param("model")
        .code("model_not_found")
    }

    /// 401 `invalid_api_key`.
    pub fn unauthorized() -> ApiError {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "invalid_request_error",
            "Incorrect or missing API key (send `Authorization: Bearer KEY`)",
        )
        .code("invalid_api_key")
    }

    /// 503 while the models load.
    pub fn loading() -> ApiError {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "server_error",
            "the models are still loading; GET /health says when they are ready",
        )
        .code("model_loading")
        .retry_after(1)
    }

    /// Sets `param`.
    pub fn param(mut self, param: impl Into<String>) -> ApiError {
        self.param = Some(param.into());
        self
    }

    /// Sets `code`.
    pub fn code(mut self, code: impl Into<String>) -> ApiError {
        self.code = Some(code.into());
        self
    }

    /// Adds a `Retry-After` header of `seconds`.
    pub fn retry_after(mut self, seconds: u64) -> ApiError {
        self.retry_after = Some(seconds);
        self
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The JSON body, `{"error": {...}}`.
    pub fn body(&self) -> serde_json::Value {
        serde_json::json!({ "error": self.object() })
    }

    /// The inner error object (what a mid-stream failure sends as `data: {"error": …}`).
    pub fn object(&self) -> serde_json::Value {
        serde_json::json!({
            "message": self.message,
            "type": self.kind,
            "param": self.param,
            "code": self.code,
        })
    }

    /// The error for a scheduler error: `QUEUE_FULL` → 429 with `Retry-After`,
    /// `BAD_REQUEST` → 400 naming the engine's field, `UNKNOWN_MODEL` → 404,
    /// `NO_MODEL`/`LOAD_FAILED`/`SHUT_DOWN` → 503, `GENERATION_FAILED`/`INTERNAL` → 500.
    pub fn from_sched(e: &SchedError, retry_after_s: u64) -> ApiError {
        let message = e.to_string();
        let code = e.code().to_ascii_lowercase();
        match e {
            SchedError::QueueFull { .. } => {
                ApiError::new(StatusCode::TOO_MANY_REQUESTS, "rate_limit_error", message)
                    .code(code)
                    .retry_after(retry_after_s)
            }
            SchedError::BadRequest { field, reason } => {
                let mut err = ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "invalid_request_error",
                    match field {
                        Some(f) => format!("{f}: {reason}"),
                        None => reason.clone(),
                    },
                );
                err.param = field.clone();
                err.code(code)
            }
            SchedError::UnknownModel { model } => ApiError::model_not_found(model),
            SchedError::NoModel { .. } | SchedError::LoadFailed { .. } | SchedError::ShutDown => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "server_error", message)
                    .code(code)
                    .retry_after(retry_after_s)
            }
            SchedError::GenerationFailed { .. } | SchedError::Internal { .. } => {
                ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "server_error", message).code(code)
            }
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, axum::Json(self.body())).into_response();
        if let Some(s) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(s));
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scheduler_errors_map_to_statuses() {
        let full = SchedError::QueueFull {
            band: gpuport_scheduler::Priority::Normal,
            depth: 4,
            cap: 4,
        };
        let e = ApiError::from_sched(&full, 2);
        assert_eq!(e.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(e.retry_after, Some(2));
        assert_eq!(e.body()["error"]["code"], "queue_full");
        let bad = SchedError::bad_request(Some("max_tokens"), "too many");
        let e = ApiError::from_sched(&bad, 1);
        assert_eq!(e.status(), StatusCode::BAD_REQUEST);
        assert_eq!(e.body()["error"]["param"], "max_tokens");
        let e = ApiError::from_sched(&SchedError::ShutDown, 1);
        assert_eq!(e.status(), StatusCode::SERVICE_UNAVAILABLE);
        let e = ApiError::from_sched(
            &SchedError::UnknownModel {
                model: "gpt-9".into(),
            },
            1,
        );
        assert_eq!(e.status(), StatusCode::NOT_FOUND);
        assert_eq!(e.body()["error"]["code"], "model_not_found");
    }
}
