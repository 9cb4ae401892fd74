//! Reading a provider's answer, bounded: the server-sent-events parser and the answer
//! accumulator shared by both wire formats, and [`WireFormat::decode`], the same reader without
//! the network (for fuzzing, benchmarks and replaying a recorded answer).
//!
//! Every byte is counted against the [`ProviderLimits`] before it is kept, so an answer that
//! crosses one ends with [`ProviderError::LimitExceeded`] while the memory it holds is still
//! about the limit. Nothing a server sends makes the reader panic: unexpected shapes are
//! ignored or end the call with [`ProviderError::Protocol`].
//!
//! ```
//! use agents_provider::{ProviderLimits, WireFormat};
//!
//! let stream = b"data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"},\"finish_reason\":\"stop\"}]}\n\n\
//!                data: [DONE]\n\n";
//! // Any chunking gives the same answer.
//! let chunks = stream.chunks(7);
//! let answer = WireFormat::OpenAi.decode(true, chunks, &ProviderLimits::default()).unwrap();
//! assert_eq!(answer.content, "Hi");
//! assert_eq!(answer.input_tokens, None); // no usage in this stream
//! ```

use super::limits::{ProviderLimit, ProviderLimits};
use super::redact::Redactor;
use super::{ProviderError, TokenSink, ToolCallRequest};
use serde_json::Value;

/// Which wire format an answer is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WireFormat {
    /// OpenAI Chat Completions (`chat.completion` / `chat.completion.chunk`).
    OpenAi,
    /// Anthropic Messages (`message` / the `message_start` … `message_stop` events).
    Anthropic,
}

impl WireFormat {
    /// Decodes one answer from `chunks` (the body as it arrived, in any chunking) exactly as
    /// the provider does, under `limits`: `event_stream` says whether the body is a
    /// `text/event-stream` (else one JSON document). Without a key, error texts are not
    /// redacted.
    pub fn decode<'b>(
        self,
        event_stream: bool,
        chunks: impl IntoIterator<Item = &'b [u8]>,
        limits: &ProviderLimits,
    ) -> Result<DecodedAnswer, ProviderError> {
        let redactor = Redactor::default();
        let cx = WireCtx { limits, redactor: &redactor, tokens: &|_: &str| {}, attempts: 1 };
        match self {
            Self::OpenAi => decode_with::<super::openai::StreamState>(event_stream, chunks, &cx),
            Self::Anthropic => decode_with::<super::anthropic::StreamState>(event_stream, chunks, &cx),
        }
    }
}

fn decode_with<'b, S: WireState>(
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

/// Whether the reader wants more events.
pub(crate) enum Flow {
    /// Keep reading.
    Continue,
    /// The answer is complete.
    Stop,
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
            .map_err(|e| ProviderError::Protocol(format!("the answer broke off: {}", super::http::error_chain(&e))))?;
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

/// One server-sent event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event:` field, when present.
    pub(crate) event: Option<String>,
    /// The `data:` lines joined with newlines.
    pub(crate) data: String,
}

/// An incremental parser for `text/event-stream` bodies (any line ending, comments,
/// multi-line data, events split across network chunks). A line, and the data of one event,
/// may not grow beyond `max` bytes; the bytes are kept once (no copy while parsing).
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    line: Vec<u8>,
    after_cr: bool,
    event: Option<String>,
    data: Vec<u8>,
    has_data: bool,
}

impl SseParser {
    /// Feeds bytes; `on_event` gets each event they complete, until it says stop.
    pub(crate) fn push<E: From<ProviderError>>(
        &mut self,
        mut bytes: &[u8],
        max: usize,
        on_event: &mut dyn FnMut(SseEvent) -> Result<Flow, E>,
    ) -> Result<Flow, E> {
        if self.after_cr && !bytes.is_empty() {
            self.after_cr = false;
            if bytes[0] == b'\n' {
                bytes = &bytes[1..];
            }
        }
        while !bytes.is_empty() {
            match bytes.iter().position(|&b| b == b'\n' || b == b'\r') {
                None => {
                    check_len(self.line.len().saturating_add(bytes.len()), max)?;
                    self.line.extend_from_slice(bytes);
                    return Ok(Flow::Continue);
                }
                Some(at) => {
                    check_len(self.line.len().saturating_add(at), max)?;
                    self.line.extend_from_slice(&bytes[..at]);
                    let cr = bytes[at] == b'\r';
                    bytes = &bytes[at + 1..];
                    if cr {
                        match bytes.first() {
                            Some(b'\n') => bytes = &bytes[1..],
                            Some(_) => {}
                            None => self.after_cr = true,
                        }
                    }
                    if let Flow::Stop = self.end_line(max, on_event)? {
                        return Ok(Flow::Stop);
                    }
                }
            }
        }
        Ok(Flow::Continue)
    }

    /// Ends the stream: a last event without its blank line is still delivered.
    pub(crate) fn finish<E: From<ProviderError>>(
        &mut self,
        max: usize,
        on_event: &mut dyn FnMut(SseEvent) -> Result<Flow, E>,
    ) -> Result<Flow, E> {
        if !self.line.is_empty()
            && let Flow::Stop = self.end_line(max, on_event)?
        {
            return Ok(Flow::Stop);
        }
        match self.dispatch() {
            Some(event) => on_event(event),
            None => Ok(Flow::Continue),
        }
    }

    fn end_line<E: From<ProviderError>>(
        &mut self,
        max: usize,
        on_event: &mut dyn FnMut(SseEvent) -> Result<Flow, E>,
    ) -> Result<Flow, E> {
        if self.line.is_empty() {
            return match self.dispatch() {
                Some(event) => on_event(event),
                None => Ok(Flow::Continue),
            };
        }
        let line = std::mem::take(&mut self.line);
        if line[0] != b':' {
            let (field, value) = match line.iter().position(|&b| b == b':') {
                Some(at) => {
                    let value = &line[at + 1..];
                    (&line[..at], value.strip_prefix(b" ").unwrap_or(value))
                }
                None => (&line[..], &[][..]),
            };
            match field {
                b"event" => self.event = Some(String::from_utf8_lossy(value).into_owned()),
                b"data" => {
                    let grown = self.data.len().saturating_add(value.len()).saturating_add(usize::from(self.has_data));
                    check_len(grown, max)?;
                    if self.has_data {
                        self.data.push(b'\n');
                    }
                    self.data.extend_from_slice(value);
                    self.has_data = true;
                }
                _ => {}
            }
        }
        // Keep the line's allocation for the next one.
        self.line = line;
        self.line.clear();
        Ok(Flow::Continue)
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = self.event.take();
        if !std::mem::take(&mut self.has_data) {
            self.data.clear();
            return None;
        }
        let data = std::mem::take(&mut self.data);
        let data = String::from_utf8(data).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        Some(SseEvent { event, data })
    }
}

fn check_len(len: usize, max: usize) -> Result<(), ProviderError> {
    if len > max { Err(ProviderError::LimitExceeded { limit: ProviderLimit::Event, max }) } else { Ok(()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(parser: &mut SseParser, parts: &[&[u8]], max: usize) -> Result<Vec<SseEvent>, ProviderError> {
        let mut events = Vec::new();
        for part in parts {
            parser.push(part, max, &mut |e| {
                events.push(e);
                Ok::<_, ProviderError>(Flow::Continue)
            })?;
        }
        parser.finish(max, &mut |e| {
            events.push(e);
            Ok::<_, ProviderError>(Flow::Continue)
        })?;
        Ok(events)
    }

    #[test]
    fn sse_parser_handles_split_chunks_crlf_comments_and_multiline_data() {
        let mut p = SseParser::default();
        let events = collect(
            &mut p,
            &[b": keep-alive\r\nevent: one\r\ndata: {\"a\":", b"1}\r", b"\n\r\ndata: x\ndata: y\n\ndata:[DONE]"],
            usize::MAX,
        )
        .unwrap();
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
        assert!(collect(&mut p, &[b"event: ping\n\nretry: 10\n\n"], usize::MAX).unwrap().is_empty());
    }

    #[test]
    fn a_line_or_an_event_beyond_the_limit_is_refused_as_it_grows() {
        let too_long = ProviderError::LimitExceeded { limit: ProviderLimit::Event, max: 8 };
        // One line without its newline.
        assert_eq!(collect(&mut SseParser::default(), &[b"data: 1234", b"56789"], 8), Err(too_long.clone()));
        // Many short data lines of one event (each line is within the limit).
        assert_eq!(collect(&mut SseParser::default(), &[b"data:123\ndata:123\ndata:123\n"], 8), Err(too_long));
        // Exactly the limit is fine.
        let ok = collect(&mut SseParser::default(), &[b"data:123\ndata:123\n\n"], 8).unwrap();
        assert_eq!(ok[0].data, "123\n123");
    }
}
