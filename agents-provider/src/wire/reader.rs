//! The answer reader both wire formats share: [`Reader`] feeds a body, chunk by chunk, to a
//! format's [`WireState`] under the [`ProviderLimits`], and [`Answer`] collects what the
//! format reads, each part counted against its limit before it is kept.

use super::sse::{Flow, SseEvent, SseParser};
use crate::limits::{ProviderLimit, ProviderLimits};
use crate::redact::Redactor;
use crate::{ProviderError, TokenSink, ToolCallRequest};
use serde_json::Value;

/// An answer as read from the wire, before pricing.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DecodedAnswer {
    /// The text.
    pub content: String,
    /// The tool calls, in order.
    pub tool_calls: Vec<ToolCallRequest>,
    /// Prompt tokens as the server reported them; `None` when missing or unreadable (not a
    /// whole number ≥ 0).
    pub input_tokens: Option<u64>,
    /// Completion tokens as the server reported them; `None` when missing or unreadable.
    pub output_tokens: Option<u64>,
}

/// What the readers of one call share.
pub(crate) struct WireCtx<'a> {
    pub(crate) limits: &'a ProviderLimits,
    pub(crate) redactor: &'a Redactor,
    pub(crate) tokens: &'a dyn TokenSink,
    /// Attempts the call took (named by in-stream errors that keep their HTTP meaning).
    pub(crate) attempts: u32,
}

/// One wire format's interpretation of events and whole answers.
pub(crate) trait WireState: Default {
    /// One server-sent event.
    fn event(&mut self, event: &SseEvent, cx: &WireCtx<'_>) -> Result<Flow, ProviderError>;
    /// A whole (non-streamed) answer.
    fn whole(&mut self, body: &Value, cx: &WireCtx<'_>) -> Result<(), ProviderError>;
    /// Why a stream that ended here is incomplete, if it is.
    fn incomplete(&self) -> Option<&'static str>;
    /// The answer read so far.
    fn into_answer(self) -> DecodedAnswer;
}

enum Mode {
    Stream(SseParser),
    Whole(Vec<u8>),
}

/// Feeds body chunks to a [`WireState`], under the limits.
pub(crate) struct Reader<S> {
    mode: Mode,
    state: S,
}

impl<S: WireState> Reader<S> {
    pub(crate) fn new(event_stream: bool) -> Self {
        let mode = if event_stream { Mode::Stream(SseParser::default()) } else { Mode::Whole(Vec::new()) };
        Self { mode, state: S::default() }
    }

    /// Feeds one chunk of the body.
    pub(crate) fn feed(&mut self, bytes: &[u8], cx: &WireCtx<'_>) -> Result<Flow, ProviderError> {
        match &mut self.mode {
            Mode::Stream(parser) => {
                let state = &mut self.state;
                parser.push(bytes, cx.limits.max_event_bytes, &mut |event| state.event(&event, cx))
            }
            Mode::Whole(body) => {
                cx.limits.check(ProviderLimit::Body, body.len().saturating_add(bytes.len()))?;
                body.extend_from_slice(bytes);
                Ok(Flow::Continue)
            }
        }
    }

    /// The body ended.
    pub(crate) fn finish(mut self, cx: &WireCtx<'_>) -> Result<DecodedAnswer, ProviderError> {
        match &mut self.mode {
            Mode::Stream(parser) => {
                let state = &mut self.state;
                if let Flow::Stop = parser.finish(cx.limits.max_event_bytes, &mut |event| state.event(&event, cx))? {
                    return Ok(self.into_answer());
                }
                if let Some(why) = self.state.incomplete() {
                    return Err(ProviderError::Protocol(format!(
                        "the stream ended before the answer was complete ({why})"
                    )));
                }
            }
            Mode::Whole(body) => {
                let whole: Value = serde_json::from_slice(body)
                    .map_err(|e| ProviderError::Protocol(format!("the answer is not JSON ({e})")))?;
                *body = Vec::new();
                self.state.whole(&whole, cx)?;
            }
        }
        Ok(self.into_answer())
    }

    pub(crate) fn into_answer(self) -> DecodedAnswer {
        self.state.into_answer()
    }
}

/// Decodes one answer from `chunks` as the state `S` reads it (see
/// [`WireFormat::decode`](super::WireFormat::decode)).
pub(crate) fn decode<'b, S: WireState>(
    event_stream: bool,
    chunks: impl IntoIterator<Item = &'b [u8]>,
    cx: &WireCtx<'_>,
) -> Result<DecodedAnswer, ProviderError> {
    let mut reader = Reader::<S>::new(event_stream);
    for chunk in chunks {
        if let Flow::Stop = reader.feed(chunk, cx)? {
            return Ok(reader.into_answer());
        }
    }
    reader.finish(cx)
}

/// Reads a response body into an answer, chunk by chunk, under the limits.
pub(crate) async fn read_answer<S: WireState>(
    response: &mut reqwest::Response,
    event_stream: bool,
    cx: &WireCtx<'_>,
) -> Result<DecodedAnswer, ProviderError> {
    let mut reader = Reader::<S>::new(event_stream);
    loop {
        let chunk = response
            .chunk()
            .await
            .map_err(|e| ProviderError::Protocol(format!("the answer broke off: {}", crate::http::error_chain(&e))))?;
        match chunk {
            Some(bytes) => {
                if let Flow::Stop = reader.feed(&bytes, cx)? {
                    return Ok(reader.into_answer());
                }
            }
            None => return reader.finish(cx),
        }
    }
}

/// Parses an event's JSON data; the error quotes the start of the data, redacted.
pub(crate) fn parse_json(data: &str, cx: &WireCtx<'_>) -> Result<Value, ProviderError> {
    serde_json::from_str(data).map_err(|e| {
        ProviderError::Protocol(format!("a stream event is not JSON ({e}): {}", cx.redactor.quote(data, 200)))
    })
}

/// A count of tokens as the server wrote it: a whole number ≥ 0, else `None`.
pub(crate) fn token_count(v: Option<&Value>) -> Option<u64> {
    v?.as_u64()
}

/// One tool call as it is being read.
#[derive(Debug, Default)]
pub(crate) struct CallAcc {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) arguments: String,
}

/// The parts of an answer both formats collect, each counted against its limit.
#[derive(Debug, Default)]
pub(crate) struct Answer {
    pub(crate) content: String,
    pub(crate) calls: Vec<CallAcc>,
    arguments_total: usize,
    pub(crate) input_tokens: Option<u64>,
    pub(crate) output_tokens: Option<u64>,
}

impl Answer {
    /// Appends text and streams it to the sink.
    pub(crate) fn text(&mut self, text: &str, cx: &WireCtx<'_>) -> Result<(), ProviderError> {
        if text.is_empty() {
            return Ok(());
        }
        cx.limits.check(ProviderLimit::Text, self.content.len().saturating_add(text.len()))?;
        self.content.push_str(text);
        cx.tokens.token(text);
        Ok(())
    }

    /// Opens a new tool call; its position.
    pub(crate) fn open_call(&mut self, cx: &WireCtx<'_>) -> Result<usize, ProviderError> {
        cx.limits.check(ProviderLimit::ToolCalls, self.calls.len().saturating_add(1))?;
        self.calls.push(CallAcc::default());
        Ok(self.calls.len() - 1)
    }

    /// Sets a short text field of a call (id, name), bounded by the call's arguments limit.
    pub(crate) fn field(text: &str, cx: &WireCtx<'_>) -> Result<String, ProviderError> {
        cx.limits.check(ProviderLimit::CallArguments, text.len())?;
        Ok(text.to_string())
    }

    /// Counts arguments kept outside the calls (a `tool_use` block's initial `input`).
    pub(crate) fn count_arguments(&mut self, len: usize, cx: &WireCtx<'_>) -> Result<(), ProviderError> {
        cx.limits.check(ProviderLimit::CallArguments, len)?;
        cx.limits.check(ProviderLimit::AnswerArguments, self.arguments_total.saturating_add(len))?;
        self.arguments_total += len;
        Ok(())
    }

    /// Appends a fragment of the arguments of call `slot`.
    pub(crate) fn arguments(&mut self, slot: usize, part: &str, cx: &WireCtx<'_>) -> Result<(), ProviderError> {
        let Some(call) = self.calls.get_mut(slot) else {
            return Err(ProviderError::Protocol("arguments for a tool call that was never opened".into()));
        };
        cx.limits.check(ProviderLimit::CallArguments, call.arguments.len().saturating_add(part.len()))?;
        cx.limits.check(ProviderLimit::AnswerArguments, self.arguments_total.saturating_add(part.len()))?;
        call.arguments.push_str(part);
        self.arguments_total += part.len();
        Ok(())
    }
}
