//! The HTTP stack shared by [`OpenAiProvider`](super::OpenAiProvider) and
//! [`AnthropicProvider`](super::AnthropicProvider): API keys that never print, the per-call
//! timeout, bounded retries and error classification (the answers themselves are read by
//! [`wire`](super::wire)).
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

pub use super::redact::ApiKey;

use super::ProviderError;
use super::limits::ProviderLimits;
use super::redact::Redactor;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// The default per-call timeout (the seed's 90 s: one provider round trip, not one run).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(90);

/// Timeout and retry settings of an HTTP provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderHttpOptions {
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
    /// How much of an answer one call reads (see [`ProviderLimits`] for the defaults and
    /// what they cost).
    pub limits: ProviderLimits,
    /// Allows sending the API key over `http://` to a host that is not this machine
    /// (default `false`: such a provider is refused when it is built, with
    /// [`ProviderError::CleartextKey`]). Turn it on only for a server on a private network
    /// you control, where no one else can read the traffic; the environment's equivalent is
    /// `AGENTS_ALLOW_CLEARTEXT_KEY=1`. Keys to `localhost`, `127.0.0.0/8` and `::1` never
    /// need it; `https://` never needs it.
    pub allow_cleartext_key: bool,
}

impl Default for ProviderHttpOptions {
    fn default() -> Self {
        Self {
            timeout: DEFAULT_TIMEOUT,
            max_attempts: 3,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
            limits: ProviderLimits::default(),
            allow_cleartext_key: false,
        }
    }
}

/// The setters shared by the hosted-provider configurations, which keep their per-call options
/// in an `http: ProviderHttpOptions` field and their prices in a `prices: PriceTable` field.
macro_rules! http_config_setters {
    () => {
        /// Sets the per-call timeout (default 90 s).
        pub fn with_timeout(mut self, timeout: std::time::Duration) -> Self {
            self.http.timeout = timeout;
            self
        }

        /// Sets the timeout and retry options.
        pub fn with_http(mut self, http: $crate::ProviderHttpOptions) -> Self {
            self.http = http;
            self
        }

        /// Sets the price table.
        pub fn with_prices(mut self, prices: $crate::PriceTable) -> Self {
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

/// The host of a base URL, as the URL parser gives it (lowercase name, dotted quad or
/// bracketed IPv6 address), without its port.
pub(crate) fn url_host(base_url: &str) -> Option<String> {
    reqwest::Url::parse(base_url.trim()).ok()?.host_str().map(str::to_owned)
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

/// Refuses a key that would travel in clear: an `http://` base URL to a host that is not this
/// machine, unless the options opt in.
pub(crate) fn check_key_transport(
    base_url: &str,
    has_key: bool,
    options: &ProviderHttpOptions,
) -> Result<(), ProviderError> {
    let cleartext = reqwest::Url::parse(base_url).is_ok_and(|u| u.scheme() == "http");
    if has_key && cleartext && !is_loopback(base_url) && !options.allow_cleartext_key {
        return Err(ProviderError::CleartextKey { url: display_url(base_url) });
    }
    Ok(())
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

/// `now + wait`, or a point about thirty years away when that does not fit the clock.
fn far_or(now: Instant, wait: Duration) -> Instant {
    now.checked_add(wait).unwrap_or_else(|| now + Duration::from_secs(86_400 * 365 * 30))
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
    // A timeout too large for the clock (`Duration::MAX`) means "no deadline" in practice.
    let deadline = far_or(Instant::now(), timeout);
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
    pub(crate) options: &'a ProviderHttpOptions,
    /// The variable the key comes from, named by `Unauthorized`.
    pub(crate) key_env_var: &'a str,
    /// Cuts the key out of every text built from the server's answers.
    pub(crate) redactor: &'a Redactor,
    /// Classifies a non-retryable, non-auth failure status with its body.
    pub(crate) classify: &'a (dyn Fn(u16, &ErrorBody<'_>) -> ProviderError + Send + Sync),
}

/// An error answer (4xx/5xx), read up to 64 KiB and decoded; every text it offers is redacted.
pub(crate) struct ErrorBody<'a> {
    /// The body as JSON, when it is JSON.
    json: Option<serde_json::Value>,
    /// The provider's own message (see [`error_message`]), redacted, at most 300 characters.
    pub(crate) message: String,
    redactor: &'a Redactor,
}

impl ErrorBody<'_> {
    /// A string at `pointer` in the JSON body, redacted, at most 100 characters.
    pub(crate) fn field(&self, pointer: &str) -> Option<String> {
        let text = self.json.as_ref()?.pointer(pointer)?.as_str()?;
        Some(self.redactor.quote(text, 100))
    }
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
                    // Redacted before the URL is parsed, which would rewrite escapes.
                    .map(|to| display_url(&self.redactor.redact(to)))
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
            let text = read_error_body(response).await;
            let error = ErrorBody {
                json: serde_json::from_str(&text).ok(),
                message: self.redactor.quote(&error_message(&text), 300),
                redactor: self.redactor,
            };
            match status {
                401 | 403 => {
                    return Err(ProviderError::Unauthorized { status, env_var: self.key_env_var.to_string() });
                }
                429 | 500..=599 => {
                    let detail = error.message;
                    if attempt >= attempts {
                        return Err(ProviderError::Upstream { status, attempts: attempt, detail });
                    }
                    let wait = retry_after.unwrap_or(backoff.min(self.options.max_backoff));
                    if Instant::now().checked_add(wait).is_none_or(|then| then >= deadline) {
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
                _ => return Err((self.classify)(status, &error)),
            }
        }
    }

    fn send_error(&self, e: &reqwest::Error) -> ProviderError {
        let cause = self.redactor.quote(&root_cause(e), 500);
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
pub(crate) fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
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
/// `{"error": "..."}` or `{"message": ...}`), else the body. Not cut: the caller redacts, then
/// cuts ([`Redactor::quote`]).
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
    if text.is_empty() { "no details in the answer".to_string() } else { text }
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

/// The `Retry-After` header: seconds (possibly fractional) or an HTTP date. Any value a
/// server can send is read without panicking: a wait beyond what a `Duration` holds saturates
/// (and then never fits in the call's deadline), a date in the past is no wait.
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let value = headers.get("retry-after")?.to_str().ok()?.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs >= 0.0).then(|| Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX));
    }
    let date = time::OffsetDateTime::parse(value, &time::format_description::well_known::Rfc2822).ok()?;
    let secs = (date - time::OffsetDateTime::now_utc()).as_seconds_f64();
    Some(Duration::try_from_secs_f64(secs.max(0.0)).unwrap_or(Duration::MAX))
}

/// Whether the response is a server-sent-event stream (else it is plain JSON).
pub(crate) fn is_event_stream(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_none_or(|v| !v.to_ascii_lowercase().starts_with("application/json"))
}

#[cfg(test)]
mod tests {
    use super::*;

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
        // Values that do not fit a Duration saturate instead of panicking.
        for absurd in ["1e300", "inf", "18446744073709551616", "99999999999999999999.5"] {
            h.insert("retry-after", absurd.parse().unwrap());
            assert_eq!(retry_after(&h), Some(Duration::MAX), "{absurd}");
        }
        for refused in ["NaN", "-1", "-inf"] {
            h.insert("retry-after", refused.parse().unwrap());
            assert_eq!(retry_after(&h), None, "{refused}");
        }
        h.insert("retry-after", "Fri, 31 Dec 9999 23:59:59 GMT".parse().unwrap());
        assert!(retry_after(&h).is_some());
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
    fn a_base_url_host_is_given_without_port_or_path() {
        assert_eq!(url_host("https://API.OpenAI.com/v1").as_deref(), Some("api.openai.com"));
        assert_eq!(url_host("http://[::1]:8000/v1").as_deref(), Some("[::1]"));
        assert_eq!(url_host("not a url"), None);
    }

    #[test]
    fn unknown_model_texts_are_recognised() {
        assert!(mentions_unknown_model("The model `gpt-9` does not exist or you do not have access to it."));
        assert!(mentions_unknown_model("model \"llama9\" not found, try pulling it first"));
        assert!(!mentions_unknown_model("Not Found"));
    }

    #[test]
    fn deadlines_beyond_the_clock_saturate() {
        let now = Instant::now();
        assert!(far_or(now, Duration::MAX) > now);
        assert_eq!(far_or(now, Duration::from_secs(1)), now + Duration::from_secs(1));
    }

    #[test]
    fn a_key_over_cleartext_is_refused_unless_loopback_https_or_opted_in() {
        let options = ProviderHttpOptions::default();
        assert!(matches!(
            check_key_transport("http://10.0.0.5:8000/v1", true, &options),
            Err(ProviderError::CleartextKey { .. })
        ));
        assert!(check_key_transport("http://10.0.0.5:8000/v1", false, &options).is_ok());
        assert!(check_key_transport("https://10.0.0.5:8000/v1", true, &options).is_ok());
        assert!(check_key_transport("http://127.0.0.1:8000/v1", true, &options).is_ok());
        assert!(check_key_transport("http://[::1]:8000/v1", true, &options).is_ok());
        let opted_in = ProviderHttpOptions { allow_cleartext_key: true, ..ProviderHttpOptions::default() };
        assert!(check_key_transport("http://10.0.0.5:8000/v1", true, &opted_in).is_ok());
    }

    #[test]
    fn timeout_rounds_up() {
        assert_eq!(timeout_error(Duration::from_millis(300)), ProviderError::Timeout { secs: 1 });
        assert_eq!(timeout_error(Duration::from_secs(90)), ProviderError::Timeout { secs: 90 });
    }
}
