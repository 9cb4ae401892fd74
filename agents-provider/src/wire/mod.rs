//! Reading a provider's answer, bounded: the server-sent-events parser and the answer
//! accumulator shared by both wire formats, each format's reading of its events (OpenAI Chat
//! Completions, Anthropic Messages), and [`WireFormat::decode`], the same reader without the
//! network (for fuzzing, benchmarks and replaying a recorded answer).
//!
//! - `sse`: the incremental `text/event-stream` parser, bounded per line and per event;
//! - `reader`: the reader that feeds a body, chunk by chunk, to a format's state, and the
//!   answer both formats collect ([`DecodedAnswer`] once read);
//! - `chat_completions` and `messages`: the two formats' states, which the providers in
//!   [`openai`](crate::openai) and [`anthropic`](crate::anthropic) read their answers with.
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

mod chat_completions;
mod messages;
mod reader;
mod sse;

pub use reader::DecodedAnswer;

pub(crate) use chat_completions::ChatCompletionsStream;
pub(crate) use messages::MessagesStream;
pub(crate) use reader::{WireCtx, read_answer};

use crate::ProviderError;
use crate::limits::ProviderLimits;
use crate::redact::Redactor;

/// Which wire format an answer is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
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
            Self::OpenAi => reader::decode::<ChatCompletionsStream>(event_stream, chunks, &cx),
            Self::Anthropic => reader::decode::<MessagesStream>(event_stream, chunks, &cx),
        }
    }
}
