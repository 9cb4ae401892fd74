//! The OpenAI-compatible Chat Completions provider: OpenAI itself, OpenRouter, vLLM,
//! the llama.cpp server and Ollama (anything serving `POST {base_url}/chat/completions`).
//!
//! Requests stream (`stream: true` with `stream_options.include_usage`), text fragments go
//! to the [`TokenSink`] as they arrive, and tool-call arguments are reassembled from their
//! fragments by index. See [`super::http`] for the timeout, retry and error model and
//! for why the HTTP stack is plain `reqwest`.
//!
//! ```no_run
//! use agents_runtime::provider::{ApiKey, OpenAiConfig, OpenAiProvider, PriceTable};
//! use std::time::Duration;
//!
//! // Hosted OpenAI, with a price so the budget counts the calls.
//! let openai = OpenAiProvider::new(
//!     OpenAiConfig::openai("gpt-4o-mini", ApiKey::new(std::env::var("OPENAI_API_KEY")?))
//!         .with_prices(PriceTable::new().with_price("gpt-4o-mini", 0.15, 0.60)),
//! )?;
//!
//! // A local Ollama server: no key, not paid, a longer timeout for a slow machine.
//! let ollama = OpenAiProvider::new(
//!     OpenAiConfig::compatible("llama3.2", "http://localhost:11434/v1")
//!         .with_timeout(Duration::from_secs(300)),
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
    pub http: HttpOptions,
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
            http: HttpOptions::default(),
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
            http: HttpOptions::default(),
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
}

impl std::fmt::Debug for OpenAiProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiProvider").field("config", &self.config).finish_non_exhaustive()
    }
}

impl OpenAiProvider {
    /// Checks the configuration and builds the HTTP client. Fails with
    /// [`ProviderError::Unreachable`] when the base URL is not an http(s) URL.
    pub fn new(config: OpenAiConfig) -> Result<Self, ProviderError> {
        let base = normalize_base_url(&config.base_url)?;
        let pricer = Pricer::new(config.prices.clone(), &config.model);
        Ok(Self { url: format!("{base}/chat/completions"), client: http::build_client()?, pricer, config })
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

    fn classify(&self, status: u16, body: &str) -> ProviderError {
        let parsed: Option<Value> = serde_json::from_str(body).ok();
        let code = parsed.as_ref().and_then(|v| v.pointer("/error/code")).and_then(Value::as_str).unwrap_or_default();
        let message = error_message(body);
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
        let mut headers = vec![("accept", "text/event-stream".to_string())];
        if let Some(key) = &self.config.api_key {
            headers.push(("authorization", format!("Bearer {}", key.expose())));
        }
        let classify = |status: u16, body: &str| self.classify(status, body);
        let endpoint = Endpoint {
            client: &self.client,
            url: &self.url,
            headers,
            options: &self.config.http,
            key_env_var: &self.config.key_env_var,
            key: self.config.api_key.as_ref(),
            classify: &classify,
        };
        let (mut response, _attempts) = endpoint.post(body, deadline).await?;
        let mut state = StreamState::default();
        if http::is_event_stream(&response) {
            let stopped = http::read_events(&mut response, |event| {
                if event.data.trim() == "[DONE]" {
                    return Ok(Flow::Stop);
                }
                let chunk = parse_json(&event.data)?;
                state.apply_chunk(&chunk, tokens).map_err(|e| match e {
                    ProviderError::Other(m) => ProviderError::Other(endpoint.redact(&m)),
                    other => other,
                })?;
                Ok(Flow::Continue)
            })
            .await?;
            if !stopped && !state.finished {
                return Err(ProviderError::Protocol(
                    "the stream ended before the answer was complete (no finish_reason and \
                     no [DONE])"
                        .into(),
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

impl Provider for OpenAiProvider {
    fn name(&self) -> &str {
        &self.config.name
    }

    fn model(&self) -> &str {
        &self.config.model
    }

    fn is_paid(&self) -> bool {
        self.config.paid
    }

    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
        tokens: &'a dyn TokenSink,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(http::within_deadline(self.config.http.timeout, move |deadline| self.call(request, tokens, deadline)))
    }
}

#[derive(Debug, Default)]
struct ToolAcc {
    id: String,
    name: String,
    arguments: String,
}

#[derive(Debug, Default)]
struct StreamState {
    content: String,
    tools: Vec<ToolAcc>,
    slots: BTreeMap<u64, usize>,
    usage: Option<(u64, u64)>,
    finished: bool,
}

impl StreamState {
    /// Applies one `chat.completion.chunk`.
    fn apply_chunk(&mut self, chunk: &Value, tokens: &dyn TokenSink) -> Result<(), ProviderError> {
        if let Some(error) = chunk.get("error") {
            return Err(ProviderError::Other(format!(
                "the provider reported an error in the stream: {}",
                http::error_message(&json!({ "error": error }).to_string())
            )));
        }
        if let Some(choice) = chunk.get("choices").and_then(Value::as_array).and_then(|c| c.first()) {
            let delta = choice.get("delta").unwrap_or(&Value::Null);
            if let Some(text) = delta.get("content").and_then(Value::as_str)
                && !text.is_empty()
            {
                self.content.push_str(text);
                tokens.token(text);
            }
            if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
                for call in calls {
                    self.apply_tool_fragment(call);
                }
            }
            if choice.get("finish_reason").is_some_and(|r| !r.is_null()) {
                self.finished = true;
            }
        }
        self.read_usage(chunk);
        Ok(())
    }

    fn apply_tool_fragment(&mut self, call: &Value) {
        let id = call.get("id").and_then(Value::as_str).filter(|id| !id.is_empty());
        // The raw index keys the fragments; a server that omits it continues the last call.
        // A new id under an index already in use opens a new call (Ollama numbers every call
        // of a parallel batch 0).
        let raw = call.get("index").and_then(Value::as_u64).or_else(|| self.slots.keys().copied().max()).unwrap_or(0);
        let slot = match self.slots.get(&raw) {
            Some(&slot) if id.is_none_or(|id| self.tools[slot].id.is_empty() || self.tools[slot].id == id) => slot,
            _ => {
                self.tools.push(ToolAcc::default());
                self.slots.insert(raw, self.tools.len() - 1);
                self.tools.len() - 1
            }
        };
        let acc = &mut self.tools[slot];
        if let Some(id) = id {
            acc.id = id.to_string();
        }
        let function = call.get("function").unwrap_or(&Value::Null);
        if let Some(name) = function.get("name").and_then(Value::as_str)
            && !name.is_empty()
        {
            acc.name = name.to_string();
        }
        if let Some(args) = function.get("arguments").and_then(Value::as_str) {
            acc.arguments.push_str(args);
        }
    }

    fn read_usage(&mut self, v: &Value) {
        if let Some(usage) = v.get("usage").filter(|u| u.is_object()) {
            let get = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
            self.usage = Some((get("prompt_tokens"), get("completion_tokens")));
        }
    }

    /// Applies a whole (non-streamed) `chat.completion`, from servers that ignore `stream`.
    fn apply_whole(&mut self, whole: &Value, tokens: &dyn TokenSink) -> Result<(), ProviderError> {
        let message = whole
            .pointer("/choices/0/message")
            .ok_or_else(|| ProviderError::Protocol("the answer has no choices[0].message".into()))?;
        if let Some(text) = message.get("content").and_then(Value::as_str)
            && !text.is_empty()
        {
            self.content.push_str(text);
            tokens.token(text);
        }
        if let Some(calls) = message.get("tool_calls").and_then(Value::as_array) {
            for (i, call) in calls.iter().enumerate() {
                let mut call = call.clone();
                if call.get("index").is_none() {
                    call["index"] = json!(i);
                }
                self.apply_tool_fragment(&call);
            }
        }
        self.read_usage(whole);
        self.finished = true;
        Ok(())
    }

    fn into_response(self, provider: &OpenAiProvider) -> ChatResponse {
        let (input, output) = self.usage.unwrap_or_else(|| {
            if provider.config.paid {
                tracing::warn!(
                    model = %provider.config.model,
                    "the provider reported no token usage; this call is counted as 0 tokens"
                );
            }
            (0, 0)
        });
        let tool_calls = self
            .tools
            .into_iter()
            .enumerate()
            .map(|(index, acc)| ToolCallRequest {
                id: if acc.id.is_empty() { format!("call_{index}") } else { acc.id },
                name: acc.name,
                arguments: if acc.arguments.trim().is_empty() { "{}".into() } else { acc.arguments },
            })
            .collect();
        ChatResponse {
            content: self.content,
            tool_calls,
            usage: provider.pricer.usage(&provider.config.name, &provider.config.model, input, output),
        }
    }
}
