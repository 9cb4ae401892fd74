//! The answers the front door gives in place of the MCP service's: refusals as plain text, and
//! the JSON-RPC error of a strict-JSON refusal.

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use std::convert::Infallible;

/// The body of every response of the front door (and of the MCP service behind it).
pub type ResponseBody = BoxBody<Bytes, Infallible>;

/// A plain-text answer.
pub(crate) fn plain(status: StatusCode, text: &str) -> Response<ResponseBody> {
    let mut r = Response::new(Full::new(Bytes::from(text.to_owned())).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    r
}

/// What every request on a session that is not the caller's gets: the answer rmcp gives for a
/// session that does not exist, word for word, so a refusal does not confirm that the session
/// exists.
pub(super) fn session_not_found() -> Response<ResponseBody> {
    plain(StatusCode::NOT_FOUND, "Not Found: Session not found")
}

/// A body over the limit, declared or read.
pub(super) fn too_large() -> Response<ResponseBody> {
    plain(StatusCode::PAYLOAD_TOO_LARGE, "payload too large: the request body exceeds the server's limit")
}

/// A JSON-RPC error answered over HTTP.
pub(super) fn json_rpc_error(
    status: StatusCode,
    id: serde_json::Value,
    code: i64,
    message: String,
) -> Response<ResponseBody> {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    let mut r = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}
