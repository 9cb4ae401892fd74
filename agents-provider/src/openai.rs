//! The OpenAI-compatible Chat Completions provider: OpenAI itself, OpenRouter, vLLM,
//! the llama.cpp server and Ollama (anything serving `POST {base_url}/chat/completions`).
//!
//! Requests stream (`stream: true` with `stream_options.include_usage`), text fragments go
//! to the [`TokenSink`] as they arrive, and tool-call arguments are reassembled from their
//! fragments by index. See [`super::http`] for the timeout, retry and error model and
//! for why the HTTP stack is plain `reqwest`.
//!
//! ```no_run
//! use agents_provider::{ApiKey, OpenAiConfig, OpenAiProvider, PriceTable};
//! use std::time::Duration;
//!
//! // Hosted OpenAI, with a price so the budget counts the calls.
//! let openai = OpenAiProvider::new(
//!     OpenAiConfig::openai("gpt-4o-mini", ApiKey::new(std::env::var("OPENAI_API_KEY")?))
//!         .with_prices(PriceTable::new().with_price("gpt-4o-mini", 0.15, 0.60)?),
//! )?;
//!
//! // A local Ollama server: no key, not paid, a longer timeout for a slow machine.
//! let ollama = OpenAiProvider::new(
//!     OpenAiConfig::compatible("llama3.2", "http://localhost:11434/v1")
//!         .with_timeout(Duration::from_secs(300)),
//! )?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use super::http::{self, ApiKey, Endpoint, ErrorBody, ProviderHttpOptions, mentions_unknown_model, normalize_base_url};
use super::pricing::{PriceTable, Pricer};
use super::redact::Redactor;
use super::wire::{self, ChatCompletionsStream, WireCtx};
use super::{ChatMessage, ChatRequest, ChatResponse, Provider, ProviderError, TokenSink};
use crate::BoxFuture;
use serde_json::{Value, json};

/// How to reach an OpenAI-compatible endpoint. `Debug` never shows the key.
#[derive(Debug, Clone)]
pub struct OpenAiConfig {
    /// The provider name reported by [`Provider::name`]: `openai` or `openai-compatible`.
    pub name: String,
    /// The model id sent with each request.
    pub model: String,
    /// The API root, up to and including `/v1` (`/chat/completions` is appended).
    pub base_url: String,
    /// The key, sent as `Authorization: Bearer`. Local servers usually need none.
    pub api_key: Option<ApiKey>,
    /// The environment variable the key comes from, named when the key is refused.
    pub key_env_var: String,
    /// Whether calls cost money (the budget gate runs before each paid call).
    pub paid: bool,
    /// Prices used to turn usage into cost.
    pub prices: PriceTable,
    /// Timeout and retries.
    pub http: ProviderHttpOptions,
    /// The completion token limit, when one should be sent.
    pub max_tokens: Option<u32>,
}

impl OpenAiConfig {
    /// The base URL of the OpenAI API.
    pub const OPENAI_BASE_URL: &'static str = "https://api.openai.com/v1";

    /// Hosted OpenAI (paid; the key is reported as coming from `OPENAI_API_KEY`).
    pub fn openai(model: impl Into<String>, api_key: ApiKey) -> Self {
        Self {
            name: "openai".into(),
            model: model.into(),
            base_url: Self::OPENAI_BASE_URL.into(),
            api_key: Some(api_key),
            key_env_var: "OPENAI_API_KEY".into(),
            paid: true,
            prices: PriceTable::new(),
            http: ProviderHttpOptions::default(),
            max_tokens: None,
        }
    }

    /// Any OpenAI-compatible server, without a key (add one with
    /// [`with_api_key`](Self::with_api_key)). It counts as paid unless the base URL points at
    /// this machine (`localhost`, `127.0.0.1`, `::1`); change [`paid`](Self::paid) to override.
    pub fn compatible(model: impl Into<String>, base_url: impl Into<String>) -> Self {
        let base_url = base_url.into();
        Self {
            name: "openai-compatible".into(),
            model: model.into(),
            paid: !http::is_loopback(&base_url),
            base_url,
            api_key: None,
            key_env_var: "AGENTS_API_KEY".into(),
            prices: PriceTable::new(),
            http: ProviderHttpOptions::default(),
            max_tokens: None,
        }
    }

    /// Sets the key and the variable it came from (named when the key is refused).
    pub fn with_api_key(mut self, api_key: ApiKey, env_var: impl Into<String>) -> Self {
        self.api_key = Some(api_key);
        self.key_env_var = env_var.into();
        self
    }

    http::http_config_setters!();
}

/// A [`Provider`] speaking the OpenAI Chat Completions API with streaming and tool calls.
pub struct OpenAiProvider {
    config: OpenAiConfig,
    url: String,
    client: reqwest::Client,
    pricer: Pricer,
    redactor: Redactor,
}

impl std::fmt::Debug for OpenAiProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiProvider").field("config", &self.config).finish_non_exhaustive()
    }
}

impl OpenAiProvider {
    /// Checks the configuration and builds the HTTP client. Fails with
    /// [`ProviderError::Unreachable`] when the base URL is not an http(s) URL, and with
    /// [`ProviderError::CleartextKey`] when a key would go over `http://` to another machine
    /// (see [`ProviderHttpOptions::allow_cleartext_key`]).
    pub fn new(config: OpenAiConfig) -> Result<Self, ProviderError> {
        let base = normalize_base_url(&config.base_url)?;
        let has_key = config.api_key.as_ref().is_some_and(|k| !k.expose().is_empty());
        http::check_key_transport(&base, has_key, &config.http)?;
        let pricer = Pricer::new(config.prices.clone(), &config.model);
        let redactor = Redactor::new(config.api_key.as_ref());
        Ok(Self { url: format!("{base}/chat/completions"), client: http::build_client()?, pricer, redactor, config })
    }

    http::http_provider_accessors!(OpenAiConfig);

    /// The JSON body sent for `request`.
    pub fn request_body(&self, request: &ChatRequest) -> Value {
        let mut messages = Vec::new();
        if !request.system.is_empty() {
            messages.push(json!({"role": "system", "content": request.system}));
        }
        for message in &request.messages {
            messages.push(match message {
                ChatMessage::User { content } => json!({"role": "user", "content": content}),
                ChatMessage::Assistant { content, tool_calls } => {
                    let mut m = json!({"role": "assistant", "content": content});
                    if !tool_calls.is_empty() {
                        if content.is_empty() {
                            m["content"] = Value::Null;
                        }
                        m["tool_calls"] = tool_calls
                            .iter()
                            .map(|c| {
                                json!({
                                    "id": c.id,
                                    "type": "function",
                                    "function": {"name": c.name, "arguments": c.arguments},
                                })
                            })
                            .collect();
                    }
                    m
                }
                ChatMessage::Tool { call_id, content, .. } => {
                    json!({"role": "tool", "tool_call_id": call_id, "content": content})
                }
            });
        }
        let mut body = json!({
            "model": self.config.model,
            "messages": messages,
            "stream": true,
            "stream_options": {"include_usage": true},
        });
        if !request.tools.is_empty() {
            body["tools"] = request
                .tools
                .iter()
                .map(|t| {
                    json!({
                        "type": "function",
                        "function": {
                            "name": t.name,
                            "description": t.description,
                            "parameters": t.input_schema,
                        },
                    })
                })
                .collect();
        }
        if let Some(schema) = &request.response_schema {
            body["response_format"] = json!({
                "type": "json_schema",
                "json_schema": {"name": "response", "schema": schema},
            });
        }
        if let Some(max) = self.config.max_tokens {
            // OpenAI's reasoning models accept only the newer name; other servers the older.
            let field = if self.config.name == "openai" { "max_completion_tokens" } else { "max_tokens" };
            body[field] = json!(max);
        }
        body
    }

    fn classify(&self, status: u16, body: &ErrorBody<'_>) -> ProviderError {
        let code = body.field("/error/code").unwrap_or_default();
        let message = body.message.clone();
        let unknown_model = code == "model_not_found" || mentions_unknown_model(&message);
        match status {
            404 | 400 | 422 if unknown_model => {
                ProviderError::UnknownModel { model: self.config.model.clone(), detail: message }
            }
            404 | 405 => ProviderError::Unreachable {
                url: http::display_url(&self.url),
                detail: format!(
                    "it answered HTTP {status}, so no chat completions endpoint is there \
                     (OpenAI-compatible base URLs usually end in /v1): {message}"
                ),
            },
            _ => ProviderError::Other(format!("the provider rejected the request (HTTP {status}): {message}")),
        }
    }

    async fn call(
        &self,
        request: &ChatRequest,
        tokens: &dyn TokenSink,
        deadline: tokio::time::Instant,
    ) -> Result<ChatResponse, ProviderError> {
        let body = serde_json::to_vec(&self.request_body(request))
            .map_err(|e| ProviderError::Other(format!("could not encode the request: {e}")))?;
        let request_bytes = body.len();
        let mut headers = vec![("accept", "text/event-stream".to_string())];
        if let Some(key) = &self.config.api_key {
            headers.push(("authorization", format!("Bearer {}", key.expose())));
        }
        let classify = |status: u16, body: &ErrorBody<'_>| self.classify(status, body);
        let endpoint = Endpoint {
            client: &self.client,
            url: &self.url,
            headers,
            options: &self.config.http,
            key_env_var: &self.config.key_env_var,
            redactor: &self.redactor,
            classify: &classify,
        };
        let (mut response, attempts) = endpoint.post(body, deadline).await?;
        let cx = WireCtx { limits: &self.config.http.limits, redactor: &self.redactor, tokens, attempts };
        let event_stream = http::is_event_stream(&response);
        let answer = wire::read_answer::<ChatCompletionsStream>(&mut response, event_stream, &cx).await?;
        let usage = self.pricer.usage(
            &self.config.name,
            &self.config.model,
            self.config.paid,
            &answer,
            request_bytes,
            self.config.max_tokens,
        );
        Ok(ChatResponse { content: answer.content, tool_calls: answer.tool_calls, usage })
    }
}

impl Provider for OpenAiProvider {
    fn name(&self) -> &str {
        &self.config.name
    }

    fn model(&self) -> &str {
        &self.config.model
    }

    fn host(&self) -> Option<String> {
        http::url_host(&self.config.base_url)
    }

    fn is_paid(&self) -> bool {
        self.config.paid
    }

    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
        tokens: &'a dyn TokenSink,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move {
            http::within_deadline(self.config.http.timeout, move |deadline| self.call(request, tokens, deadline))
                .await
                .map_err(|e| self.redactor.error(e))
        })
    }
}
