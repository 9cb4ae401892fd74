//! A provider's JSON API other than chat (an embeddings endpoint, for one): [`JsonEndpoint`]
//! posts one JSON body and reads one JSON answer with the same HTTP stack as the chat
//! providers, so it keeps their guarantees: the key never travels in clear to another machine
//! and never appears in an error, the call has one deadline, 429 and 5xx are retried within
//! it, redirects are not followed, and the answer is read under
//! [`ProviderLimits::max_body_bytes`](super::ProviderLimits::max_body_bytes).
//!
//! ```no_run
//! use agents_provider::{ApiKey, JsonEndpoint, ProviderHttpOptions};
//!
//! # async fn demo() -> Result<(), agents_provider::ProviderError> {
//! let key = ApiKey::new(std::env::var("OPENAI_API_KEY").unwrap_or_default());
//! let endpoint = JsonEndpoint::new(
//!     "https://api.openai.com/v1",
//!     "embeddings",
//!     Some(key),
//!     "OPENAI_API_KEY",
//!     ProviderHttpOptions::default(),
//! )?;
//! let body = serde_json::json!({"model": "text-embedding-3-small", "input": ["leave policy"]});
//! let answer = endpoint.post(&body).await?;
//! assert!(answer.get("data").is_some());
//! # Ok(())
//! # }
//! ```

use super::ProviderError;
use super::http::{self, ApiKey, Endpoint, ErrorBody, ProviderHttpOptions, normalize_base_url};
use super::limits::ProviderLimit;
use super::redact::Redactor;
use serde_json::Value;

/// One JSON endpoint of a provider's API (see the [module docs](self)). `Debug` never shows
/// the key.
pub struct JsonEndpoint {
    url: String,
    client: reqwest::Client,
    api_key: Option<ApiKey>,
    key_env_var: String,
    options: ProviderHttpOptions,
    redactor: Redactor,
}

impl std::fmt::Debug for JsonEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonEndpoint")
            .field("url", &http::display_url(&self.url))
            .field("api_key", &self.api_key)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl JsonEndpoint {
    /// The endpoint `{base_url}/{path}`. Fails with [`ProviderError::Unreachable`] when the
    /// base URL is not an http(s) URL, and with [`ProviderError::CleartextKey`] when the key
    /// would go over `http://` to another machine (see
    /// [`ProviderHttpOptions::allow_cleartext_key`]). `key_env_var` is the variable the key
    /// came from, named when the server refuses it.
    pub fn new(
        base_url: &str,
        path: &str,
        api_key: Option<ApiKey>,
        key_env_var: impl Into<String>,
        options: ProviderHttpOptions,
    ) -> Result<Self, ProviderError> {
        let base = normalize_base_url(base_url)?;
        let has_key = api_key.as_ref().is_some_and(|k| !k.expose().is_empty());
        http::check_key_transport(&base, has_key, &options)?;
        let redactor = Redactor::new(api_key.as_ref());
        let url = format!("{base}/{}", path.trim_start_matches('/'));
        Ok(Self { url, client: http::build_client()?, api_key, key_env_var: key_env_var.into(), options, redactor })
    }

    /// The URL posted to, without credentials, query or fragment.
    pub fn url(&self) -> String {
        http::display_url(&self.url)
    }

    /// `text` with the key cut out, in every form [`Redactor`] covers (for texts built from
    /// the answer).
    pub fn redact(&self, text: &str) -> String {
        self.redactor.redact(text)
    }

    /// Posts `body` and reads the answer as JSON, within the deadline and the body limit.
    /// Every text of a returned error has the key cut out.
    pub async fn post(&self, body: &Value) -> Result<Value, ProviderError> {
        http::within_deadline(self.options.timeout, move |deadline| self.call(body, deadline))
            .await
            .map_err(|e| self.redactor.error(e))
    }

    async fn call(&self, body: &Value, deadline: tokio::time::Instant) -> Result<Value, ProviderError> {
        let bytes =
            serde_json::to_vec(body).map_err(|e| ProviderError::Other(format!("could not encode the request: {e}")))?;
        let mut headers = vec![("accept", "application/json".to_string())];
        if let Some(key) = &self.api_key {
            headers.push(("authorization", format!("Bearer {}", key.expose())));
        }
        let classify = |status: u16, error: &ErrorBody<'_>| self.classify(status, error);
        let endpoint = Endpoint {
            client: &self.client,
            url: &self.url,
            headers,
            options: &self.options,
            key_env_var: &self.key_env_var,
            redactor: &self.redactor,
            classify: &classify,
        };
        let (mut response, _attempts) = endpoint.post(bytes, deadline).await?;
        let limits = &self.options.limits;
        let mut answer = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| {
            ProviderError::Protocol(format!("the answer broke off: {}", self.redactor.quote(&e.to_string(), 300)))
        })? {
            limits.check(ProviderLimit::Body, answer.len().saturating_add(chunk.len()))?;
            answer.extend_from_slice(&chunk);
        }
        serde_json::from_slice(&answer).map_err(|e| ProviderError::Protocol(format!("the answer is not JSON: {e}")))
    }

    fn classify(&self, status: u16, body: &ErrorBody<'_>) -> ProviderError {
        let message = body.message.clone();
        match status {
            404 | 405 => ProviderError::Unreachable {
                url: self.url(),
                detail: format!("it answered HTTP {status}, so no such endpoint is there: {message}"),
            },
            _ => ProviderError::Other(format!("the provider rejected the request (HTTP {status}): {message}")),
        }
    }
}
