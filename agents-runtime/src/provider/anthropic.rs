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
//! use agents_runtime::provider::{AnthropicConfig, AnthropicProvider, ApiKey, PriceTable};
//!
//! let claude = AnthropicProvider::new(
//!     AnthropicConfig::new(
//!         "claude-sonnet-4-5",
//!         ApiKey::new(std::env::var("ANTHROPIC_API_KEY")?),
//!     )
//!     .with_prices(PriceTable::new().with_price("claude-sonnet-4-5*", 3.0, 15.0)),
//! )?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use super::http::{
    self, ApiKey, Endpoint, Flow, HttpOptions, error_message, mentions_unknown_model, normalize_base_url, parse_json,
};
use super::pricing::{PriceTable, Pricer};
use super::{ChatMessage, ChatRequest, ChatResponse, Provider, ProviderError, TokenSink, ToolCallRequest};
use crate::BoxFuture;
use serde_json::{Value, json};
use std::collections::BTreeMap;

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
    pub http: HttpOptions,
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
            http: HttpOptions::default(),
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
}

impl std::fmt::Debug for AnthropicProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnthropicProvider").field("config", &self.config).finish_non_exhaustive()
    }
}

impl AnthropicProvider {
    /// Checks the configuration and builds the HTTP client. Fails with
    /// [`ProviderError::Unreachable`] when the base URL is not an http(s) URL.
    pub fn new(config: AnthropicConfig) -> Result<Self, ProviderError> {
        let base = normalize_base_url(&config.base_url)?;
        let url = if base.ends_with("/v1") { format!("{base}/messages") } else { format!("{base}/v1/messages") };
        let pricer = Pricer::new(config.prices.clone(), &config.model);
        Ok(Self { url, client: http::build_client()?, pricer, config })
    }

    http::http_provider_accessors!(AnthropicConfig);

    /// The JSON body sent for `request`.
    pub fn request_body(&self, request: &ChatRequest) -> Value {
        let mut turns: Vec<(&str, Vec<Value>)> = Vec::new();
        for message in &request.messages {
            let (role, blocks) = match message {
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
            };
            if blocks.is_empty() {
                continue;
            }
            match turns.last_mut() {
                Some((last, existing)) if *last == role => existing.extend(blocks),
                _ => turns.push((role, blocks)),
            }
        }
        let messages: Vec<Value> =
            turns.into_iter().map(|(role, content)| json!({"role": role, "content": content})).collect();
        let mut body = json!({
            "model": self.config.model,
            "max_tokens": self.config.max_tokens,
            "messages": messages,
            "stream": true,
        });
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

    fn classify(&self, status: u16, body: &str) -> ProviderError {
        let parsed: Option<Value> = serde_json::from_str(body).ok();
        let kind = parsed
            .as_ref()
            .and_then(|v| v.pointer("/error/type"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let message = error_message(body);
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
        let headers = vec![
            ("accept", "text/event-stream".to_string()),
            ("x-api-key", self.config.api_key.expose().to_string()),
            ("anthropic-version", self.config.version.clone()),
        ];
        let classify = |status: u16, body: &str| self.classify(status, body);
        let endpoint = Endpoint {
            client: &self.client,
            url: &self.url,
            headers,
            options: &self.config.http,
            key_env_var: &self.config.key_env_var,
            key: Some(&self.config.api_key),
            classify: &classify,
        };
        let (mut response, attempts) = endpoint.post(body, deadline).await?;
        let mut state = StreamState::default();
        if http::is_event_stream(&response) {
            let stopped = http::read_events(&mut response, |event| {
                let data = parse_json(&event.data)?;
                state.apply_event(&data, tokens, attempts).map_err(|e| match e {
                    ProviderError::Other(m) => ProviderError::Other(endpoint.redact(&m)),
                    other => other,
                })
            })
            .await?;
            if !stopped && state.stop_reason.is_none() {
                return Err(ProviderError::Protocol(
                    "the stream ended before the answer was complete (no message_stop)".into(),
                ));
            }
        } else {
            let body = http::read_body(&mut response).await?;
            let whole: Value = serde_json::from_slice(&body)
                .map_err(|e| ProviderError::Protocol(format!("the answer is not JSON ({e})")))?;
            state.apply_whole(&whole, tokens)?;
        }
        Ok(state.into_response(self))
    }
}

impl Provider for AnthropicProvider {
    fn name(&self) -> &str {
        "anthropic"
    }

    fn model(&self) -> &str {
        &self.config.model
    }

    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
        tokens: &'a dyn TokenSink,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(http::within_deadline(self.config.http.timeout, move |deadline| self.call(request, tokens, deadline)))
    }
}

#[derive(Debug)]
enum Block {
    Text,
    ToolUse { id: String, name: String, json: String, initial: Value },
    Other,
}

#[derive(Debug, Default)]
struct StreamState {
    content: String,
    blocks: BTreeMap<u64, Block>,
    input_tokens: u64,
    output_tokens: u64,
    stop_reason: Option<String>,
}

fn tokens_of(usage: &Value) -> (u64, u64) {
    let get = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
    (get("input_tokens") + get("cache_creation_input_tokens") + get("cache_read_input_tokens"), get("output_tokens"))
}

impl StreamState {
    fn text(&mut self, text: &str, tokens: &dyn TokenSink) {
        if !text.is_empty() {
            self.content.push_str(text);
            tokens.token(text);
        }
    }

    fn apply_event(&mut self, event: &Value, tokens: &dyn TokenSink, attempts: u32) -> Result<Flow, ProviderError> {
        let index = event.get("index").and_then(Value::as_u64).unwrap_or(0);
        match event.get("type").and_then(Value::as_str).unwrap_or_default() {
            "message_start" => {
                if let Some(usage) = event.pointer("/message/usage") {
                    let (input, output) = tokens_of(usage);
                    self.input_tokens = input;
                    self.output_tokens = output;
                }
            }
            "content_block_start" => {
                let block = event.get("content_block").unwrap_or(&Value::Null);
                let opened = match block.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        let text = block.get("text").and_then(Value::as_str).unwrap_or("");
                        self.text(text, tokens);
                        Block::Text
                    }
                    Some("tool_use") => Block::ToolUse {
                        id: str_field(block, "id"),
                        name: str_field(block, "name"),
                        json: String::new(),
                        initial: block.get("input").cloned().unwrap_or(Value::Null),
                    },
                    _ => Block::Other,
                };
                self.blocks.insert(index, opened);
            }
            "content_block_delta" => {
                let delta = event.get("delta").unwrap_or(&Value::Null);
                match delta.get("type").and_then(Value::as_str) {
                    Some("text_delta") => {
                        let text = delta.get("text").and_then(Value::as_str).unwrap_or("");
                        self.text(text, tokens);
                    }
                    Some("input_json_delta") => {
                        let part = delta.get("partial_json").and_then(Value::as_str).unwrap_or("");
                        match self.blocks.get_mut(&index) {
                            Some(Block::ToolUse { json, .. }) => json.push_str(part),
                            _ => {
                                return Err(ProviderError::Protocol(format!(
                                    "input_json_delta for block {index}, which is not a \
                                     tool_use block"
                                )));
                            }
                        }
                    }
                    // thinking, signatures, citations: not part of the answer.
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(reason) = event.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(reason.to_string());
                }
                if let Some(usage) = event.get("usage") {
                    let (input, output) = tokens_of(usage);
                    self.input_tokens = self.input_tokens.max(input);
                    self.output_tokens = self.output_tokens.max(output);
                }
            }
            "message_stop" => return Ok(Flow::Stop),
            "error" => return Err(stream_error(event, attempts)),
            // ping, content_block_stop and event types added later.
            _ => {}
        }
        Ok(Flow::Continue)
    }

    /// Applies a whole (non-streamed) message, from gateways that ignore `stream`.
    fn apply_whole(&mut self, whole: &Value, tokens: &dyn TokenSink) -> Result<(), ProviderError> {
        let content = whole
            .get("content")
            .and_then(Value::as_array)
            .ok_or_else(|| ProviderError::Protocol("the answer has no content array".into()))?;
        for (i, block) in content.iter().enumerate() {
            match block.get("type").and_then(Value::as_str) {
                Some("text") => {
                    let text = block.get("text").and_then(Value::as_str).unwrap_or("");
                    self.text(text, tokens);
                }
                Some("tool_use") => {
                    self.blocks.insert(
                        i as u64,
                        Block::ToolUse {
                            id: str_field(block, "id"),
                            name: str_field(block, "name"),
                            json: String::new(),
                            initial: block.get("input").cloned().unwrap_or(Value::Null),
                        },
                    );
                }
                _ => {}
            }
        }
        if let Some(usage) = whole.get("usage") {
            (self.input_tokens, self.output_tokens) = tokens_of(usage);
        }
        self.stop_reason = Some(str_field(whole, "stop_reason"));
        Ok(())
    }

    fn into_response(self, provider: &AnthropicProvider) -> ChatResponse {
        let tool_calls = self
            .blocks
            .into_values()
            .filter_map(|block| match block {
                Block::ToolUse { id, name, json, initial } => Some(ToolCallRequest {
                    id,
                    name,
                    arguments: if !json.trim().is_empty() {
                        json
                    } else if initial.is_object() {
                        initial.to_string()
                    } else {
                        "{}".into()
                    },
                }),
                Block::Text | Block::Other => None,
            })
            .collect();
        ChatResponse {
            content: self.content,
            tool_calls,
            usage: provider.pricer.usage("anthropic", &provider.config.model, self.input_tokens, self.output_tokens),
        }
    }
}

fn str_field(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or_default().to_string()
}

/// An `error` event inside a stream (after a 200): overloaded and server errors keep their
/// HTTP meaning; the call is not retried because tokens may already have been shown.
fn stream_error(event: &Value, attempts: u32) -> ProviderError {
    let kind = event.pointer("/error/type").and_then(Value::as_str).unwrap_or("error");
    let message = event.pointer("/error/message").and_then(Value::as_str).unwrap_or("no details");
    let status = match kind {
        "overloaded_error" => Some(529),
        "api_error" => Some(500),
        "rate_limit_error" => Some(429),
        _ => None,
    };
    match status {
        Some(status) => {
            ProviderError::Upstream { status, attempts, detail: format!("{kind} in the stream: {message}") }
        }
        None => ProviderError::Other(format!("the provider reported an error in the stream ({kind}): {message}")),
    }
}
