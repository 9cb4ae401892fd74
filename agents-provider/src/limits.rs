//! Size limits on what an HTTP provider reads from the server: [`ProviderLimits`].
//!
//! The server behind a base URL is untrusted input, like the model it serves: a broken proxy,
//! a gateway in front of a self-hosted model or a wrong base URL can send anything. Without
//! limits the memory of one call would be bounded only by how much the server manages to send
//! before the timeout. With them, crossing any limit ends the call at once with
//! [`ProviderError::LimitExceeded`](super::ProviderError::LimitExceeded), which names the limit
//! and the setting to raise; nothing more is read (the connection is dropped) and the run
//! ends as failed with that reason in its audit record.
//!
//! # What one call can cost with the defaults
//!
//! | what | bound |
//! | --- | --- |
//! | a non-streaming answer body | 2 MiB read, then parsed as JSON once (a JSON tree costs up to about 20 times its text: ≈ 45 MiB in the worst case) |
//! | one server-sent event (a line, or the data of one event) | 1 MiB, parsed as JSON once (≈ 21 MiB worst case) |
//! | the answer's text | 1 MiB |
//! | the arguments of one tool call / of all tool calls of one answer | 1 MiB / 2 MiB |
//! | tool calls in one answer | 64 |
//! | an error body (4xx/5xx) | 64 KiB, not configurable |
//!
//! So one call stays below about 64 MiB of peak memory whatever the server sends, and time
//! stays bounded by [`ProviderHttpOptions::timeout`](super::ProviderHttpOptions::timeout) (90 s by default).

use std::fmt;

/// One of the [`ProviderLimits`], as named by
/// [`ProviderError::LimitExceeded`](super::ProviderError::LimitExceeded).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProviderLimit {
    /// [`ProviderLimits::max_body_bytes`].
    Body,
    /// [`ProviderLimits::max_event_bytes`].
    Event,
    /// [`ProviderLimits::max_text_bytes`].
    Text,
    /// [`ProviderLimits::max_call_arguments_bytes`].
    CallArguments,
    /// [`ProviderLimits::max_answer_arguments_bytes`].
    AnswerArguments,
    /// [`ProviderLimits::max_tool_calls`].
    ToolCalls,
}

impl ProviderLimit {
    /// The setting that raises this limit, as written in code.
    pub fn setting(self) -> &'static str {
        match self {
            Self::Body => "ProviderHttpOptions::limits.max_body_bytes",
            Self::Event => "ProviderHttpOptions::limits.max_event_bytes",
            Self::Text => "ProviderHttpOptions::limits.max_text_bytes",
            Self::CallArguments => "ProviderHttpOptions::limits.max_call_arguments_bytes",
            Self::AnswerArguments => "ProviderHttpOptions::limits.max_answer_arguments_bytes",
            Self::ToolCalls => "ProviderHttpOptions::limits.max_tool_calls",
        }
    }

    /// What crossed the limit, in words.
    pub fn what(self) -> &'static str {
        match self {
            Self::Body => "the answer body",
            Self::Event => "one server-sent event (line or data)",
            Self::Text => "the answer's text",
            Self::CallArguments => "the arguments of one tool call",
            Self::AnswerArguments => "the tool-call arguments of the answer",
            Self::ToolCalls => "the number of tool calls in the answer",
        }
    }

    /// The unit of the limit (`bytes`, or `calls` for [`ToolCalls`](Self::ToolCalls)).
    pub fn unit(self) -> &'static str {
        match self {
            Self::ToolCalls => "calls",
            _ => "bytes",
        }
    }
}

impl fmt::Display for ProviderLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.what())
    }
}

/// How much of a server's answer one call reads (see the [module docs](self) for what the
/// defaults cost). Each limit is checked as the bytes arrive, before they are kept.
///
/// ```
/// use agents_provider::{ProviderHttpOptions, ProviderLimits};
///
/// // A model that writes long documents: allow 8 MiB of text and a 16 MiB body.
/// let http = ProviderHttpOptions {
///     limits: ProviderLimits { max_text_bytes: 8 << 20, max_body_bytes: 16 << 20, ..ProviderLimits::default() },
///     ..ProviderHttpOptions::default()
/// };
/// assert_eq!(http.limits.max_tool_calls, 64);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProviderLimits {
    /// The largest non-streaming answer body, in bytes (default 2 MiB).
    pub max_body_bytes: usize,
    /// The largest server-sent-event line, and the largest data of one event, in bytes
    /// (default 1 MiB). A line without its newline counts as it grows.
    pub max_event_bytes: usize,
    /// The largest text of one answer, in bytes (default 1 MiB).
    pub max_text_bytes: usize,
    /// The largest arguments of one tool call, in bytes, however many fragments they arrive
    /// in (default 1 MiB).
    pub max_call_arguments_bytes: usize,
    /// The largest arguments of all tool calls of one answer together, in bytes
    /// (default 2 MiB).
    pub max_answer_arguments_bytes: usize,
    /// The most tool calls in one answer (default 64).
    pub max_tool_calls: usize,
}

impl ProviderLimits {
    /// The default largest non-streaming body (2 MiB).
    pub const DEFAULT_MAX_BODY_BYTES: usize = 2 << 20;
    /// The default largest event (1 MiB).
    pub const DEFAULT_MAX_EVENT_BYTES: usize = 1 << 20;
    /// The default largest text (1 MiB).
    pub const DEFAULT_MAX_TEXT_BYTES: usize = 1 << 20;
    /// The default largest arguments of one call (1 MiB).
    pub const DEFAULT_MAX_CALL_ARGUMENTS_BYTES: usize = 1 << 20;
    /// The default largest arguments of one answer (2 MiB).
    pub const DEFAULT_MAX_ANSWER_ARGUMENTS_BYTES: usize = 2 << 20;
    /// The default most tool calls (64).
    pub const DEFAULT_MAX_TOOL_CALLS: usize = 64;

    /// No limits at all: memory is then bounded only by the timeout. For benchmarks and for
    /// servers that are as trusted as the process itself.
    pub const fn unlimited() -> Self {
        Self {
            max_body_bytes: usize::MAX,
            max_event_bytes: usize::MAX,
            max_text_bytes: usize::MAX,
            max_call_arguments_bytes: usize::MAX,
            max_answer_arguments_bytes: usize::MAX,
            max_tool_calls: usize::MAX,
        }
    }

    /// The value of one limit.
    pub fn get(&self, limit: ProviderLimit) -> usize {
        match limit {
            ProviderLimit::Body => self.max_body_bytes,
            ProviderLimit::Event => self.max_event_bytes,
            ProviderLimit::Text => self.max_text_bytes,
            ProviderLimit::CallArguments => self.max_call_arguments_bytes,
            ProviderLimit::AnswerArguments => self.max_answer_arguments_bytes,
            ProviderLimit::ToolCalls => self.max_tool_calls,
        }
    }

    /// `Ok` when `amount` is within `limit`, else the typed error. Used by the HTTP providers'
    /// stream decoder (`wire`), which the `http` feature compiles.
    #[cfg(feature = "http")]
    pub(crate) fn check(&self, limit: ProviderLimit, amount: usize) -> Result<(), super::ProviderError> {
        let max = self.get(limit);
        if amount > max { Err(super::ProviderError::LimitExceeded { limit, max }) } else { Ok(()) }
    }
}

impl Default for ProviderLimits {
    fn default() -> Self {
        Self {
            max_body_bytes: Self::DEFAULT_MAX_BODY_BYTES,
            max_event_bytes: Self::DEFAULT_MAX_EVENT_BYTES,
            max_text_bytes: Self::DEFAULT_MAX_TEXT_BYTES,
            max_call_arguments_bytes: Self::DEFAULT_MAX_CALL_ARGUMENTS_BYTES,
            max_answer_arguments_bytes: Self::DEFAULT_MAX_ANSWER_ARGUMENTS_BYTES,
            max_tool_calls: Self::DEFAULT_MAX_TOOL_CALLS,
        }
    }
}
