//! Every refusal the service answers: an HTTP status and `{"error": {"code", "message"}}`.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// A refusal: its HTTP status, a stable code a client can match on, and a message a person
/// can act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// The stable code (`snake_case`), e.g. `token_expired`, `not_found`, `body_too_large`.
    pub code: &'static str,
    /// What happened and what to do.
    pub message: String,
}

impl ApiError {
    /// A refusal with this status, code and message.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError { status, code, message: message.into() }
    }

    /// 404 `not_found`: what another principal's run, decision or session looks like, and
    /// what an unknown one looks like (the two are not told apart).
    pub fn not_found(what: &str) -> Self {
        ApiError::new(StatusCode::NOT_FOUND, "not_found", format!("no {what} with this id is visible to you"))
    }

    /// 400 `invalid_request` with a message.
    pub fn invalid(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, "invalid_request", message)
    }

    /// 500 `internal` (the details go to the log, not to the client).
    pub fn internal(context: &str, detail: impl std::fmt::Display) -> Self {
        tracing::error!(context, error = %detail, "request failed");
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", format!("{context} failed; see the service log"))
    }

    /// The JSON body.
    pub fn body(&self) -> serde_json::Value {
        json!({ "error": { "code": self.code, "message": self.message } })
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.status.as_u16(), self.code, self.message)
    }
}

impl std::error::Error for ApiError {}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, axum::Json(self.body())).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            let challenge = format!("Bearer error=\"invalid_token\", error_description=\"{}\"", self.code);
            if let Ok(v) = HeaderValue::from_str(&challenge) {
                response.headers_mut().insert(header::WWW_AUTHENTICATE, v);
            }
        }
        response
    }
}

/// The stable code of a status that reached the client without a JSON body (a refusal of a
/// layer: the body limit, the request timeout, an unknown path or method).
pub(crate) fn code_of_status(status: StatusCode) -> (&'static str, &'static str) {
    match status {
        StatusCode::PAYLOAD_TOO_LARGE => {
            ("body_too_large", "the request body is larger than the service accepts; send a smaller body")
        }
        StatusCode::REQUEST_TIMEOUT => ("request_timeout", "the request took longer than the service allows"),
        StatusCode::NOT_FOUND => ("not_found", "no such resource"),
        StatusCode::METHOD_NOT_ALLOWED => ("method_not_allowed", "this path does not accept this method"),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => ("unsupported_media_type", "send the body as application/json"),
        StatusCode::UNPROCESSABLE_ENTITY | StatusCode::BAD_REQUEST => {
            ("invalid_request", "the request could not be read; check its parameters")
        }
        _ if status.is_server_error() => ("internal", "the service failed; see its log"),
        _ => ("refused", "the request was refused"),
    }
}

/// A layer's refusal without a JSON body becomes one (every refusal is JSON).
pub(crate) async fn json_refusals(response: Response) -> Response {
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if is_json {
        return response;
    }
    let (code, message) = code_of_status(status);
    let mut replaced = ApiError::new(status, code, message).into_response();
    for name in [header::RETRY_AFTER, header::ALLOW] {
        if let Some(v) = response.headers().get(&name) {
            replaced.headers_mut().insert(name, v.clone());
        }
    }
    replaced
}
