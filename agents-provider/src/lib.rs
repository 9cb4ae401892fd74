#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "http")]
pub mod anthropic;
mod call;
#[cfg(feature = "http")]
pub mod config;
#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "http")]
pub mod json_endpoint;
pub mod limits;
#[cfg(feature = "http")]
pub mod openai;
pub mod pricing;
pub mod redact;
pub mod scripted;
pub mod telemetry;
#[cfg(feature = "http")]
pub mod wire;

#[cfg(feature = "http")]
pub use anthropic::{AnthropicConfig, AnthropicProvider};
#[cfg(feature = "http")]
pub use config::{ConfigError, ProviderConfig, ProviderDescription, ProviderKind, provider_from_env};
#[cfg(feature = "http")]
pub use http::{ApiKey, DEFAULT_TIMEOUT, ProviderHttpOptions};
#[cfg(feature = "http")]
pub use json_endpoint::JsonEndpoint;
pub use limits::{ProviderLimit, ProviderLimits};
#[cfg(feature = "http")]
pub use openai::{OpenAiConfig, OpenAiProvider};
pub use pricing::{ModelPrice, PriceError, PriceTable};
pub use scripted::{RuleProvider, ScriptedProvider, ToolOutcome};
#[cfg(feature = "http")]
pub use wire::{DecodedAnswer, WireFormat};

pub use agents_core::BoxFuture;
pub use call::{chat_contained, panic_text};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

/// A tool as offered to the model: only tools in the run's availability snapshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// The name the model calls.
    pub name: String,
    /// The description (the tool's doc comment).
    pub description: String,
    /// The JSON schema of the arguments.
    pub input_schema: Value,
}

/// A tool call the model asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCallRequest {
    /// The provider's id for the call (echoed back with the result).
    pub id: String,
    /// The tool name, as the model wrote it (it may not exist).
    pub name: String,
    /// The arguments as the raw JSON text the model produced (parsed strictly by the gate).
    pub arguments: String,
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum ChatMessage {
    /// The user.
    User {
        /// The text.
        content: String,
    },
    /// The model, possibly asking for tools.
    Assistant {
        /// The text (may be empty when only tools are called).
        content: String,
        /// Tool calls.
        tool_calls: Vec<ToolCallRequest>,
    },
    /// The result of one tool call, fed back to the model.
    Tool {
        /// The call's id.
        call_id: String,
        /// The tool name.
        name: String,
        /// The result or error text (JSON).
        content: String,
        /// Whether it is an error.
        is_error: bool,
    },
}

/// One request to a model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// The system prompt.
    pub system: String,
    /// The conversation so far.
    pub messages: Vec<ChatMessage>,
    /// The tools the model may call (empty while a proposal is pending).
    pub tools: Vec<ToolDefinition>,
    /// Constrain the final answer to this JSON schema, when the provider supports it.
    pub response_schema: Option<Value>,
}

/// Tokens and money spent by one call.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Cost in US dollars from the configured price table (0 for free providers).
    pub cost_usd: f64,
    /// Whether the token counts are an estimate because the server's usage could not be read
    /// (missing, of the wrong type, negative): see [`pricing`] for how it is made. The
    /// provider logs a warning for each such call.
    #[serde(default)]
    pub estimated: bool,
}

/// A model's answer to one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    /// The text.
    pub content: String,
    /// Tool calls, in order.
    pub tool_calls: Vec<ToolCallRequest>,
    /// What it cost.
    pub usage: Usage,
}

/// Why a provider call failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// The key was refused (HTTP 401/403).
    #[error("the provider refused the API key (HTTP {status}); check the key in {env_var}")]
    Unauthorized {
        /// HTTP status.
        status: u16,
        /// The environment variable the key came from.
        env_var: String,
    },
    /// The model does not exist.
    #[error("the provider does not know the model `{model}`: {detail}")]
    UnknownModel {
        /// The model.
        model: String,
        /// What the provider said.
        detail: String,
    },
    /// The base URL does not answer like the provider's API.
    #[error("could not reach the provider at {url}: {detail}; check the base URL")]
    Unreachable {
        /// The URL.
        url: String,
        /// The cause.
        detail: String,
    },
    /// No answer within the per-call timeout.
    #[error("the provider did not answer within {secs} s")]
    Timeout {
        /// The timeout.
        secs: u64,
    },
    /// Rate limited or failing after the bounded retries.
    #[error("the provider kept failing (HTTP {status}) after {attempts} attempts: {detail}")]
    Upstream {
        /// Last HTTP status.
        status: u16,
        /// Attempts made.
        attempts: u32,
        /// What it said.
        detail: String,
    },
    /// The answer could not be read.
    #[error("the provider's answer could not be read: {0}")]
    Protocol(String),
    /// The answer crossed one of the [`ProviderLimits`]: the call was ended at once and
    /// nothing more was read.
    #[error(
        "the provider's answer crossed a limit: {} is larger than {max} {}; the call was ended \
         and nothing more was read (if such answers are expected from this server, raise `{}`)",
        .limit.what(), .limit.unit(), .limit.setting()
    )]
    LimitExceeded {
        /// Which limit.
        limit: ProviderLimit,
        /// Its value.
        max: usize,
    },
    /// A key would have been sent over a cleartext link (an `http://` base URL to a host
    /// that is not this machine). Refused when the provider is built.
    #[error(
        "refusing to send the API key in clear text to {url}: use an https:// base URL, or, for \
         a server on a private network you control, opt in with \
         `ProviderHttpOptions::allow_cleartext_key = true` (AGENTS_ALLOW_CLEARTEXT_KEY=1)"
    )]
    CleartextKey {
        /// The base URL (without credentials or query).
        url: String,
    },
    /// Anything else.
    #[error("{0}")]
    Other(String),
}

impl ProviderError {
    /// A short, stable name of the kind of failure (the `error.type` of a `chat` span); it
    /// carries none of the error's text.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Self::Unauthorized { .. } => "unauthorized",
            Self::UnknownModel { .. } => "unknown_model",
            Self::Unreachable { .. } => "unreachable",
            Self::Timeout { .. } => "timeout",
            Self::Upstream { .. } => "upstream",
            Self::Protocol(_) => "protocol",
            Self::Other(_) => "other",
            Self::CleartextKey { .. } => "cleartext_key",
            Self::LimitExceeded { .. } => "limit_exceeded",
        }
    }

    /// The same error with `f` applied to every text it carries (the run masks the secret
    /// values of its calls in a provider's error this way: it may quote the request).
    pub fn map_text(self, f: impl Fn(&str) -> String) -> Self {
        match self {
            Self::UnknownModel { model, detail } => Self::UnknownModel { model: f(&model), detail: f(&detail) },
            Self::Unreachable { url, detail } => Self::Unreachable { url: f(&url), detail: f(&detail) },
            Self::Upstream { status, attempts, detail } => Self::Upstream { status, attempts, detail: f(&detail) },
            Self::Protocol(text) => Self::Protocol(f(&text)),
            Self::Other(text) => Self::Other(f(&text)),
            Self::CleartextKey { url } => Self::CleartextKey { url: f(&url) },
            Self::Unauthorized { status, env_var } => Self::Unauthorized { status, env_var: f(&env_var) },
            e @ (Self::Timeout { .. } | Self::LimitExceeded { .. }) => e,
        }
    }
}

/// Receives tokens as they stream.
pub trait TokenSink: Send + Sync {
    /// One fragment of the model's text.
    fn token(&self, text: &str);
}

impl<F: Fn(&str) + Send + Sync> TokenSink for F {
    fn token(&self, text: &str) {
        self(text)
    }
}

/// A model behind an API (or a script).
pub trait Provider: Send + Sync {
    /// `openai`, `anthropic`, `scripted`, ...
    fn name(&self) -> &str;
    /// The model id.
    fn model(&self) -> &str;
    /// Whether calls cost money (the budget gate runs before each paid call).
    fn is_paid(&self) -> bool {
        true
    }
    /// The host of the base URL its calls go to, as a URL parser gives it (no port), or `None`
    /// when it reaches no network host (the default, for offline providers). The runtime
    /// refuses to start a run of an agent whose manifest does not name this host.
    fn host(&self) -> Option<String> {
        None
    }
    /// One model call, streaming tokens to `tokens`.
    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
        tokens: &'a dyn TokenSink,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>>;
}

/// A shared provider is a provider (the runtime holds its provider as `Arc<dyn Provider>`; a
/// conversational classifier may share it).
impl<P: Provider + ?Sized> Provider for std::sync::Arc<P> {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn model(&self) -> &str {
        (**self).model()
    }
    fn is_paid(&self) -> bool {
        (**self).is_paid()
    }
    fn host(&self) -> Option<String> {
        (**self).host()
    }
    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
        tokens: &'a dyn TokenSink,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        (**self).chat(request, tokens)
    }
}

impl fmt::Debug for dyn Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Provider({}:{})", self.name(), self.model())
    }
}

/// At most `max` characters of `text`, with an ellipsis when cut.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}
