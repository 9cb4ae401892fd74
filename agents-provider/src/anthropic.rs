//! The Anthropic Messages provider (`POST {base_url}/v1/messages`, `anthropic-version:
//! 2023-06-01`), streaming, with tool use.
//!
//! Mapping: the system prompt is the top-level `system` field; an assistant turn becomes
//! `text` and `tool_use` blocks; tool results become `tool_result` blocks in one user message
//! (consecutive messages of the same role are merged, as the API requires alternation).
//! A response schema, which the Messages API has no field for, is added to the system prompt
//! as an instruction. See [`super::http`] for the timeout, retry and error model.
//!
//! ```no_run
//! use agents_provider::{AnthropicConfig, AnthropicProvider, ApiKey, PriceTable};
//!
//! let claude = AnthropicProvider::new(
//!     AnthropicConfig::new(
//!         "claude-sonnet-4-5",
//!         ApiKey::new(std::env::var("ANTHROPIC_API_KEY")?),
//!     )
//!     .with_prices(PriceTable::new().with_price("claude-sonnet-4-5*", 3.0, 15.0)?),
//! )?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use super::http::{self, ApiKey, Endpoint, ErrorBody, ProviderHttpOptions, mentions_unknown_model, normalize_base_url};
use super::pricing::{PriceTable, Pricer};
use super::redact::Redactor;
use super::wire::{self, MessagesStream, WireCtx};
use super::{ChatMessage, ChatRequest, ChatResponse, Provider, ProviderError, TokenSink};
use crate::BoxFuture;
use serde_json::{Value, json};

/// How to reach the Anthropic Messages API. `Debug` never shows the key.
#[derive(Debug, Clone)]
pub struct AnthropicConfig {
    /// The model id, e.g. `claude-sonnet-4-5`.
    pub model: String,
    /// The API root (`/v1/messages` is appended; a root already ending in `/v1` works too).
    pub base_url: String,
    /// The key, sent as `x-api-key`.
    pub api_key: ApiKey,
    /// The environment variable the key comes from, named when the key is refused.
    pub key_env_var: String,
    /// The `anthropic-version` header.
    pub version: String,
    /// `max_tokens`, which the API requires (default 4096).
    pub max_tokens: u32,
    /// Prices used to turn usage into cost.
    pub prices: PriceTable,
    /// Timeout and retries.
    pub http: ProviderHttpOptions,
}

impl AnthropicConfig {
    /// The base URL of the Anthropic API.
    pub const DEFAULT_BASE_URL: &'static str = "https://api.anthropic.com";
    /// The API version header value.
    pub const API_VERSION: &'static str = "2023-06-01";
    /// The default `max_tokens`.
    pub const DEFAULT_MAX_TOKENS: u32 = 4096;

    /// The hosted API with this model and key (reported as coming from `ANTHROPIC_API_KEY`).
    pub fn new(model: impl Into<String>, api_key: ApiKey) -> Self {
        Self {
            model: model.into(),
            base_url: Self::DEFAULT_BASE_URL.into(),
            api_key,
            key_env_var: "ANTHROPIC_API_KEY".into(),
            version: Self::API_VERSION.into(),
            max_tokens: Self::DEFAULT_MAX_TOKENS,
            prices: PriceTable::new(),
            http: ProviderHttpOptions::default(),
        }
    }

    /// Sets the base URL (a proxy or gateway).
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = base_url.into();
        self
    }

    /// Sets the variable the key came from (named when the key is refused).
    pub fn with_key_env_var(mut self, env_var: impl Into<String>) -> Self {
        self.key_env_var = env_var.into();
        self
    }

    /// Sets `max_tokens`.
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    http::http_config_setters!();
}

/// A [`Provider`] speaking the Anthropic Messages API with streaming and tool use.
pub struct AnthropicProvider {
    config: AnthropicConfig,
    url: String,
    client: reqwest::Client,
    pricer: Pricer,
    redactor: Redactor,
}

impl std::fmt::Debug for AnthropicProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnthropicProvider").field("config", &self.config).finish_non_exhaustive()
    }
}

impl AnthropicProvider {
    /// Checks the configuration and builds the HTTP client. Fails with
    /// [`ProviderError::Unreachable`] when the base URL is not an http(s) URL, and with
    /// [`ProviderError::CleartextKey`] when the key would go over `http://` to another machine
    /// (see [`ProviderHttpOptions::allow_cleartext_key`]).
    pub fn new(config: AnthropicConfig) -> Result<Self, ProviderError> {
        let base = normalize_base_url(&config.base_url)?;
        http::check_key_transport(&base, !config.api_key.expose().is_empty(), &config.http)?;
        let url = if base.ends_with("/v1") { format!("{base}/messages") } else { format!("{base}/v1/messages") };
        let pricer = Pricer::new(config.prices.clone(), &config.model);
        let redactor = Redactor::new(Some(&config.api_key));
        Ok(Self { url, client: http::build_client()?, pricer, redactor, config })
    }

    http::http_provider_accessors!(AnthropicConfig);

    /// The JSON body sent for `request`.
    pub fn request_body(&self, request: &ChatRequest) -> Value {
        let mut body = json!({
            "model": self.config.model,
            "max_tokens": self.config.max_tokens,
            "messages": turns(&request.messages),
            "stream": true,
        });
        let system = system_prompt(request);
        if !system.is_empty() {
            body["system"] = json!(system);
        }
        if !request.tools.is_empty() {
            body["tools"] = request
                .tools
                .iter()
                .map(|t| {
                    json!({
                        "name": t.name,
                        "description": t.description,
                        "input_schema": t.input_schema,
                    })
                })
                .collect();
        }
        body
    }

    fn classify(&self, status: u16, body: &ErrorBody<'_>) -> ProviderError {
        let kind = body.field("/error/type").unwrap_or_default();
        let message = body.message.clone();
        let about_model = message.to_ascii_lowercase().contains("model");
        match status {
            404 if kind == "not_found_error" && about_model => {
                ProviderError::UnknownModel { model: self.config.model.clone(), detail: message }
            }
            400 if mentions_unknown_model(&message) => {
                ProviderError::UnknownModel { model: self.config.model.clone(), detail: message }
            }
            404 | 405 => ProviderError::Unreachable {
                url: http::display_url(&self.url),
                detail: format!(
                    "it answered HTTP {status}, so the Messages endpoint is not there (the \
                     Anthropic base URL is {}): {message}",
                    AnthropicConfig::DEFAULT_BASE_URL
                ),
            },
            _ if kind.is_empty() => {
                ProviderError::Other(format!("the provider rejected the request (HTTP {status}): {message}"))
            }
            _ => ProviderError::Other(format!("the provider rejected the request (HTTP {status}, {kind}): {message}")),
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
        let headers = vec![
            ("accept", "text/event-stream".to_string()),
            ("x-api-key", self.config.api_key.expose().to_string()),
            ("anthropic-version", self.config.version.clone()),
        ];
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
        let answer = wire::read_answer::<MessagesStream>(&mut response, event_stream, &cx).await?;
        let usage = self.pricer.usage(
            "anthropic",
            &self.config.model,
            true,
            &answer,
            request_bytes,
            Some(self.config.max_tokens),
        );
        Ok(ChatResponse { content: answer.content, tool_calls: answer.tool_calls, usage })
    }
}

/// The conversation as the Messages API takes it: each message as its role and content
/// blocks, consecutive messages of one role merged into one turn (the API requires the roles
/// to alternate), messages without blocks left out.
fn turns(messages: &[ChatMessage]) -> Vec<Value> {
    let mut turns: Vec<(&str, Vec<Value>)> = Vec::new();
    for message in messages {
        let (role, blocks) = blocks(message);
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    turns.into_iter().map(|(role, content)| json!({"role": role, "content": content})).collect()
}

/// One message's role and content blocks: `text` for what the user or the model wrote,
/// `tool_use` for the model's calls, `tool_result` (a user block) for a call's result.
fn blocks(message: &ChatMessage) -> (&'static str, Vec<Value>) {
    match message {
        ChatMessage::User { content } => {
            ("user", if content.is_empty() { vec![] } else { vec![json!({"type": "text", "text": content})] })
        }
        ChatMessage::Assistant { content, tool_calls } => {
            let mut blocks = Vec::new();
            if !content.is_empty() {
                blocks.push(json!({"type": "text", "text": content}));
            }
            for call in tool_calls {
                // `input` must be an object; arguments that are not one were already
                // refused by the gate, and the tool result says so.
                let input = serde_json::from_str::<Value>(&call.arguments)
                    .ok()
                    .filter(Value::is_object)
                    .unwrap_or_else(|| json!({}));
                blocks.push(json!({
                    "type": "tool_use",
                    "id": call.id,
                    "name": call.name,
                    "input": input,
                }));
            }
            ("assistant", blocks)
        }
        ChatMessage::Tool { call_id, content, is_error, .. } => {
            let mut block = json!({
                "type": "tool_result",
                "tool_use_id": call_id,
                "content": content,
            });
            if *is_error {
                block["is_error"] = json!(true);
            }
            ("user", vec![block])
        }
    }
}

/// The system prompt, with the response schema, which the Messages API has no field for,
/// added as an instruction.
fn system_prompt(request: &ChatRequest) -> String {
    let mut system = request.system.clone();
    if let Some(schema) = &request.response_schema {
        if !system.is_empty() {
            system.push_str("\n\n");
        }
        system.push_str(
            "When you give your final answer, answer with only a JSON value that matches \
             this JSON schema:\n",
        );
        system.push_str(&schema.to_string());
    }
    system
}

impl Provider for AnthropicProvider {
    fn name(&self) -> &str {
        "anthropic"
    }

    fn model(&self) -> &str {
        &self.config.model
    }

    fn host(&self) -> Option<String> {
        http::url_host(&self.config.base_url)
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
