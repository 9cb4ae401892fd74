//! Request bodies within the limit and under the strict JSON rules; which responses are event
//! streams.

use super::answers::{ResponseBody, json_rpc_error, plain, too_large};
use crate::strict::{INVALID_REQUEST, strict_refusal};
use bytes::Bytes;
use http::{HeaderMap, Response, StatusCode, header};
use http_body_util::{BodyExt, Limited};

/// Whether the request declares (`Content-Length`) a body over `max`.
pub(super) fn declared_too_large(headers: &HeaderMap, max: usize) -> bool {
    let declared =
        headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    declared.is_some_and(|n| n > max as u64)
}

/// Reads a POST body within the limit and applies the strict JSON rules: a body with duplicate
/// keys or integers beyond 2^53 gets the JSON-RPC error the stdio transport answers (`-32600`)
/// before rmcp parses it (its parse would keep the last duplicate silently).
pub(super) async fn strict_body<B>(body: B, max: usize) -> Result<Bytes, Box<Response<ResponseBody>>>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let bytes = match Limited::new(body, max).collect().await {
        Ok(c) => c.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => return Err(Box::new(too_large())),
        Err(e) => {
            return Err(Box::new(plain(
                StatusCode::BAD_REQUEST,
                &format!("bad request: the body could not be read: {e}"),
            )));
        }
    };
    if let Some((id, message)) = strict_refusal(&bytes) {
        tracing::debug!(%message, "request body refused by the strict parse");
        return Err(Box::new(json_rpc_error(StatusCode::BAD_REQUEST, id, INVALID_REQUEST, message)));
    }
    Ok(bytes)
}

/// Whether a response is an event stream (its slot lasts as long as its body).
pub(super) fn is_event_stream(r: &Response<ResponseBody>) -> bool {
    r.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("text/event-stream"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::Full;

    #[test]
    fn a_declared_length_over_the_limit_is_too_large() {
        let mut h = HeaderMap::new();
        h.insert(header::CONTENT_LENGTH, "11".parse().unwrap());
        assert!(declared_too_large(&h, 10));
        assert!(!declared_too_large(&h, 11));
        assert!(!declared_too_large(&HeaderMap::new(), 10), "chunked: read within the limit instead");
    }

    #[tokio::test]
    async fn bodies_over_the_limit_or_with_duplicate_keys_are_refused() {
        let read = |text: &'static str, max| strict_body(Full::new(Bytes::from(text)), max);
        assert_eq!(read("{\"id\":1}", 8).await.unwrap(), "{\"id\":1}");
        assert_eq!(read("{\"id\":1}", 7).await.unwrap_err().status(), StatusCode::PAYLOAD_TOO_LARGE);
        let refused = read("{\"id\":1,\"a\":1,\"a\":2}", 100).await.unwrap_err();
        assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    }
}
