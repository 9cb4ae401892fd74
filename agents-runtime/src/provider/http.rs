//! The HTTP stack shared by [`OpenAiProvider`](super::OpenAiProvider) and
//! [`AnthropicProvider`](super::AnthropicProvider): API keys that never print, the per-call
//! timeout, bounded retries, error classification and a server-sent-events parser.
//!
//! # Why plain `reqwest` and `serde_json`
//!
//! Three ways to talk to the providers were considered:
//!
//! - `async-openai` covers the OpenAI API only, so Anthropic would need a second client with
//!   a second error model. Its typed request and stream structs follow OpenAI exactly, while
//!   OpenAI-compatible servers (vLLM, llama.cpp, Ollama, OpenRouter) fill some fields
//!   differently (missing ids, every parallel call at index 0), so a tolerant reader would be
//!   needed anyway; and it retries rate limits with its own backoff policy, separate from the
//!   one deadline per call that this runtime promises.
//! - `genai` covers both wire formats, but it is a large multi-provider library (adapters for
//!   many services we do not use), its errors nest the HTTP status and body inside its own
//!   error tree, which would have to be unwrapped and classified again into
//!   [`ProviderError`], and its stream layer owns the event parsing, so a stalled stream
//!   could only be bounded from outside anyway.
//! - `reqwest` (HTTP/1.1, rustls with the `ring` provider, no other default features) plus a
//!   small SSE parser keeps both providers on one HTTP stack with one timeout model: the whole
//!   call runs under one `tokio::time::timeout`, retries happen only on 429 and 5xx before any
//!   token was streamed, and every status maps to a [`ProviderError`] that says what to do.
//!   The cost is a few hundred lines of wire mapping per provider, tested against canned
//!   responses in the documented wire formats.
//!
//! The TLS configuration is built here with an explicit `ring` crypto provider and the
//! operating system's certificate verifier, so the crate never installs a process-wide
//! rustls provider behind the application's back.

use super::{ProviderError, truncate};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// The default per-call timeout (the seed's 90 s: one provider round trip, not one run).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(90);

/// An API key. It never appears in `Debug` output, error messages or descriptions.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The key itself, for the request header only.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(****)")
    }
}

/// Timeout and retry settings of an HTTP provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpOptions {
    /// The deadline of one `chat` call: connecting, retries and backoff, and reading the whole
    /// stream. A server that accepts the connection and never answers, or stops streaming
    /// midway, produces [`ProviderError::Timeout`] when it expires. Default 90 s.
    pub timeout: Duration,
    /// How many times one call is attempted when the provider answers 429 or 5xx
    /// (default 3). Other failures are not retried.
    pub max_attempts: u32,
    /// The wait before the second attempt; it doubles for each further one (default 500 ms).
    pub initial_backoff: Duration,
    /// The longest computed wait between attempts (default 8 s). A `Retry-After` header from
    /// the provider is honoured even when longer, as long as it fits in the deadline.
    pub max_backoff: Duration,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            timeout: DEFAULT_TIMEOUT,
            max_attempts: 3,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
        }
    }
}

/// The setters shared by the hosted-provider configurations, which keep their per-call options
/// in an `http: HttpOptions` field and their prices in a `prices: PriceTable` field.
macro_rules! http_config_setters {
    () => {
        /// Sets the per-call timeout (default 90 s).
        pub fn with_timeout(mut self, timeout: std::time::Duration) -> Self {
            self.http.timeout = timeout;
            self
        }

        /// Sets the timeout and retry options.
        pub fn with_http(mut self, http: $crate::provider::HttpOptions) -> Self {
            self.http = http;
            self
        }

        /// Sets the price table.
        pub fn with_prices(mut self, prices: $crate::provider::PriceTable) -> Self {
            self.prices = prices;
            self
        }
    };
}
pub(crate) use http_config_setters;

/// The accessors shared by the hosted providers, which keep their configuration in a `config`
/// field and their price lookup in a `pricer` field.
macro_rules! http_provider_accessors {
    ($config:ty) => {
        /// The configuration.
        pub fn config(&self) -> &$config {
            &self.config
        }

        /// Whether the price table has a price for this model (else calls cost 0).
        pub fn price_known(&self) -> bool {
            self.pricer.known()
        }
    };
}
pub(crate) use http_provider_accessors;

/// Builds the HTTP client: HTTP/1.1, rustls with the `ring` provider and the platform verifier.
pub(crate) fn build_client() -> Result<reqwest::Client, ProviderError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = rustls_platform_verifier::Verifier::new(provider.clone())
        .map_err(|e| ProviderError::Other(format!("could not load the system's TLS certificate verifier: {e}")))?;
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ProviderError::Other(format!("could not configure TLS: {e}")))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"http/1.1".to_vec()];
    // No redirects: an API does not redirect, and following one would send the key to
    // whatever host the redirect names.
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| ProviderError::Other(format!("could not build the HTTP client: {e}")))
}

/// Checks a base URL and returns it without a trailing slash.
pub(crate) fn normalize_base_url(base_url: &str) -> Result<String, ProviderError> {
    let trimmed = base_url.trim().trim_end_matches('/');
    match reqwest::Url::parse(trimmed) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.host().is_some() => Ok(trimmed.to_string()),
        _ => Err(ProviderError::Unreachable {
            url: display_url(trimmed),
            detail: "this is not an http:// or https:// URL".into(),
        }),
    }
}

/// Whether a base URL points at this machine (a local model server, which costs nothing).
pub(crate) fn is_loopback(base_url: &str) -> bool {
    let Ok(url) = reqwest::Url::parse(base_url) else {
        return false;
    };
    let Some(host) = url.host_str() else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost") || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// A URL as it may be shown: without user info, query or fragment.
pub(crate) fn display_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut u) => {
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.set_query(None);
            u.set_fragment(None);
            u.to_string().trim_end_matches('/').to_string()
        }
        Err(_) => url.split(['?', '#']).next().unwrap_or_default().to_string(),
    }
}

/// The timeout error for a configured duration (whole seconds, rounded up).
pub(crate) fn timeout_error(timeout: Duration) -> ProviderError {
    let secs = timeout.as_secs() + u64::from(timeout.subsec_nanos() > 0);
    ProviderError::Timeout { secs }
}

/// Runs one call under the per-call `timeout`: `call` gets the deadline (to bound its retries)
/// and an expired deadline becomes [`ProviderError::Timeout`].
pub(crate) async fn within_deadline<T, F>(
    timeout: Duration,
    call: impl FnOnce(Instant) -> F,
) -> Result<T, ProviderError>
where
    F: Future<Output = Result<T, ProviderError>>,
{
    let deadline = Instant::now() + timeout;
    match tokio::time::timeout_at(deadline, call(deadline)).await {
        Ok(result) => result,
        Err(_) => Err(timeout_error(timeout)),
    }
}

/// What one endpoint needs to send a request and classify its failures.
pub(crate) struct Endpoint<'a> {
    pub(crate) client: &'a reqwest::Client,
    pub(crate) url: &'a str,
    pub(crate) headers: Vec<(&'static str, String)>,
    pub(crate) options: &'a HttpOptions,
    /// The variable the key comes from, named by `Unauthorized`.
    pub(crate) key_env_var: &'a str,
    /// The key, so that it can be cut out of any error text the provider echoes.
    pub(crate) key: Option<&'a ApiKey>,
    /// Classifies a non-retryable, non-auth failure status with its body.
    pub(crate) classify: &'a (dyn Fn(u16, &str) -> ProviderError + Send + Sync),
}

impl Endpoint<'_> {
    /// POSTs `body`, retrying on 429 and 5xx with exponential backoff (honouring
    /// `Retry-After`) while the deadline allows. Returns the successful response, whose body
    /// the caller streams, and the number of attempts it took. The caller wraps the whole
    /// call, streaming included, in the deadline; `deadline` here only decides whether a
    /// backoff still fits.
    pub(crate) async fn post(
        &self,
        body: Vec<u8>,
        deadline: Instant,
    ) -> Result<(reqwest::Response, u32), ProviderError> {
        let attempts = self.options.max_attempts.max(1);
        let mut backoff = self.options.initial_backoff;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut request = self.client.post(self.url).header("content-type", "application/json").body(body.clone());
            for (name, value) in &self.headers {
                request = request.header(*name, value);
            }
            let response = request.send().await.map_err(|e| self.send_error(&e))?;
            let status = response.status().as_u16();
            if (200..300).contains(&status) {
                return Ok((response, attempt));
            }
            if (300..400).contains(&status) {
                let to = response
                    .headers()
                    .get("location")
                    .and_then(|v| v.to_str().ok())
                    .map(display_url)
                    .unwrap_or_else(|| "an address it did not give".into());
                return Err(ProviderError::Unreachable {
                    url: display_url(self.url),
                    detail: format!(
                        "it answered HTTP {status}, redirecting to {to}; redirects are not \
                         followed (they would carry the API key elsewhere), so set the base URL \
                         to the final address"
                    ),
                });
            }
            let retry_after = retry_after(response.headers());
            let text = self.redact(&read_error_body(response).await);
            match status {
                401 | 403 => {
                    return Err(ProviderError::Unauthorized { status, env_var: self.key_env_var.to_string() });
                }
                429 | 500..=599 => {
                    let detail = error_message(&text);
                    if attempt >= attempts {
                        return Err(ProviderError::Upstream { status, attempts: attempt, detail });
                    }
                    let wait = retry_after.unwrap_or(backoff.min(self.options.max_backoff));
                    if Instant::now() + wait >= deadline {
                        return Err(ProviderError::Upstream {
                            status,
                            attempts: attempt,
                            detail: format!(
                                "{detail} (the next attempt, in {:.1} s, would not fit in the \
                                 call's timeout)",
                                wait.as_secs_f64()
                            ),
                        });
                    }
                    tracing::warn!(
                        status,
                        attempt,
                        wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                        "provider call failed; retrying"
                    );
                    tokio::time::sleep(wait).await;
                    backoff = backoff.saturating_mul(2);
                }
                _ => return Err((self.classify)(status, &text)),
            }
        }
    }

    fn send_error(&self, e: &reqwest::Error) -> ProviderError {
        let cause = self.redact(&root_cause(e));
        let url = display_url(self.url);
        let detail = if e.is_connect() {
            format!("could not connect ({cause})")
        } else if e.is_builder() {
            format!("the request could not be built ({cause})")
        } else {
            format!("the server did not answer like an HTTP API ({cause})")
        };
        ProviderError::Unreachable { url, detail }
    }

    /// Cuts the key out of a text the provider sent back.
    pub(crate) fn redact(&self, text: &str) -> String {
        match self.key {
            Some(key) if !key.expose().is_empty() => text.replace(key.expose(), "****"),
            _ => text.to_string(),
        }
    }
}

/// The message of the innermost source of an error (the URL is reported separately).
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut current = e;
    while let Some(source) = current.source() {
        current = source;
    }
    current.to_string()
}

/// The messages of an error and its sources, most specific last.
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![e.to_string()];
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = s.source();
    }
    parts.join(": ")
}

/// Reads at most 64 KiB of an error body.
async fn read_error_body(mut response: reqwest::Response) -> String {
    const LIMIT: usize = 64 * 1024;
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        body.extend_from_slice(&chunk);
        if body.len() >= LIMIT {
            body.truncate(LIMIT);
            break;
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}

/// The provider's own message from a JSON error body (`{"error": {"message": ...}}` or
/// `{"error": "..."}` or `{"message": ...}`), else the body's first 300 characters.
pub(crate) fn error_message(body: &str) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let found = parsed.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("error").filter(|e| e.is_string()))
            .or_else(|| v.get("message"))
            .and_then(|m| m.as_str())
            .map(str::to_string)
    });
    let text = found.unwrap_or_else(|| body.trim().to_string());
    let text = if text.is_empty() { "no details in the answer".to_string() } else { text };
    truncate(&text, 300)
}

/// Whether an error text says that a model does not exist.
pub(crate) fn mentions_unknown_model(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    t.contains("model")
        && [
            "not found",
            "does not exist",
            "not exist",
            "not a valid model",
            "invalid model",
            "unknown model",
            "no such model",
        ]
        .iter()
        .any(|p| t.contains(p))
}

/// The `Retry-After` header: seconds (possibly fractional) or an HTTP date.
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let value = headers.get("retry-after")?.to_str().ok()?.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let date = time::OffsetDateTime::parse(value, &time::format_description::well_known::Rfc2822).ok()?;
    let secs = (date - time::OffsetDateTime::now_utc()).as_seconds_f64();
    Some(Duration::from_secs_f64(secs.max(0.0)))
}

/// One server-sent event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event:` field, when present.
    pub(crate) event: Option<String>,
    /// The `data:` lines joined with newlines.
    pub(crate) data: String,
}

/// An incremental parser for `text/event-stream` bodies (any line ending, comments,
/// multi-line data, events split across network chunks).
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    line: Vec<u8>,
    after_cr: bool,
    event: Option<String>,
    data: String,
    has_data: bool,
}

impl SseParser {
    /// Feeds bytes; returns the events completed by them.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        for &b in bytes {
            if self.after_cr {
                self.after_cr = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\n' => self.end_line(&mut out),
                b'\r' => {
                    self.after_cr = true;
                    self.end_line(&mut out);
                }
                _ => self.line.push(b),
            }
        }
        out
    }

    /// Ends the stream: a last event without its blank line is still delivered.
    pub(crate) fn finish(&mut self) -> Vec<SseEvent> {
        let mut out = Vec::new();
        if !self.line.is_empty() {
            self.end_line(&mut out);
        }
        self.dispatch(&mut out);
        out
    }

    fn end_line(&mut self, out: &mut Vec<SseEvent>) {
        let line = String::from_utf8_lossy(&self.line).into_owned();
        self.line.clear();
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line.as_str(), ""),
        };
        match field {
            "event" => self.event = Some(value.to_string()),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        if self.has_data {
            out.push(SseEvent { event: self.event.take(), data: std::mem::take(&mut self.data) });
        }
        self.event = None;
        self.data.clear();
        self.has_data = false;
    }
}

/// Whether the reader wants more events.
pub(crate) enum Flow {
    /// Keep reading.
    Continue,
    /// The stream is complete.
    Stop,
}

/// Reads a streaming body event by event until `on_event` says stop or the body ends.
/// Returns whether the reader stopped by itself (`true`) or the body simply ended (`false`).
pub(crate) async fn read_events(
    response: &mut reqwest::Response,
    mut on_event: impl FnMut(SseEvent) -> Result<Flow, ProviderError>,
) -> Result<bool, ProviderError> {
    let mut parser = SseParser::default();
    loop {
        let chunk = response
            .chunk()
            .await
            .map_err(|e| ProviderError::Protocol(format!("the stream broke off: {}", error_chain(&e))))?;
        let events = match &chunk {
            Some(bytes) => parser.push(bytes),
            None => parser.finish(),
        };
        for event in events {
            if let Flow::Stop = on_event(event)? {
                return Ok(true);
            }
        }
        if chunk.is_none() {
            return Ok(false);
        }
    }
}

/// Reads a whole (non-streaming) body.
pub(crate) async fn read_body(response: &mut reqwest::Response) -> Result<Vec<u8>, ProviderError> {
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| ProviderError::Protocol(format!("the answer broke off: {}", error_chain(&e))))?
    {
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Whether the response is a server-sent-event stream (else it is plain JSON).
pub(crate) fn is_event_stream(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_none_or(|v| !v.to_ascii_lowercase().starts_with("application/json"))
}

/// Parses an event's JSON data.
pub(crate) fn parse_json(data: &str) -> Result<serde_json::Value, ProviderError> {
    serde_json::from_str(data)
        .map_err(|e| ProviderError::Protocol(format!("a stream event is not JSON ({e}): {}", truncate(data, 200))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_parser_handles_split_chunks_crlf_comments_and_multiline_data() {
        let mut p = SseParser::default();
        let mut events = p.push(b": keep-alive\r\nevent: one\r\ndata: {\"a\":");
        assert!(events.is_empty());
        events.extend(p.push(b"1}\r"));
        events.extend(p.push(b"\n\r\ndata: x\ndata: y\n\ndata:[DONE]"));
        events.extend(p.finish());
        assert_eq!(
            events,
            vec![
                SseEvent { event: Some("one".into()), data: "{\"a\":1}".into() },
                SseEvent { event: None, data: "x\ny".into() },
                SseEvent { event: None, data: "[DONE]".into() },
            ]
        );
    }

    #[test]
    fn sse_parser_ignores_events_without_data() {
        let mut p = SseParser::default();
        let events = p.push(b"event: ping\n\nretry: 10\n\n");
        assert!(events.is_empty());
    }

    #[test]
    fn error_message_prefers_the_providers_message() {
        assert_eq!(error_message(r#"{"error":{"message":"slow down","type":"rate_limit"}}"#), "slow down");
        assert_eq!(error_message(r#"{"error":"bad"}"#), "bad");
        assert_eq!(error_message("  <html>nope</html> "), "<html>nope</html>");
        assert_eq!(error_message(""), "no details in the answer");
    }

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        let mut h = reqwest::header::HeaderMap::new();
        h.insert("retry-after", "2".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after", "Sun, 06 Nov 1994 08:49:37 GMT".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::ZERO));
        h.insert("retry-after", "soon".parse().unwrap());
        assert_eq!(retry_after(&h), None);
    }

    #[test]
    fn api_key_debug_is_masked() {
        let key = ApiKey::new("sk-secret-123");
        assert_eq!(format!("{key:?}"), "ApiKey(****)");
    }

    #[test]
    fn urls_are_checked_and_shown_without_credentials() {
        assert!(normalize_base_url("ftp://x").is_err());
        assert!(normalize_base_url("localhost:8080").is_err());
        assert_eq!(normalize_base_url("http://127.0.0.1:8080/v1/").unwrap(), "http://127.0.0.1:8080/v1");
        assert_eq!(display_url("https://user:pw@example.com/v1?key=abc"), "https://example.com/v1");
        assert!(is_loopback("http://localhost:11434/v1"));
        assert!(is_loopback("http://127.0.0.1:8000"));
        assert!(is_loopback("http://[::1]:8000"));
        assert!(!is_loopback("https://openrouter.ai/api/v1"));
    }

    #[test]
    fn unknown_model_texts_are_recognised() {
        assert!(mentions_unknown_model("The model `gpt-9` does not exist or you do not have access to it."));
        assert!(mentions_unknown_model("model \"llama9\" not found, try pulling it first"));
        assert!(!mentions_unknown_model("Not Found"));
    }

    #[test]
    fn timeout_rounds_up() {
        assert_eq!(timeout_error(Duration::from_millis(300)), ProviderError::Timeout { secs: 1 });
        assert_eq!(timeout_error(Duration::from_secs(90)), ProviderError::Timeout { secs: 90 });
    }
}
