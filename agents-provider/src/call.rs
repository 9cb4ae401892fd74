//! One model call as a run makes it: a panic of the provider contained, the call traced.

use crate::telemetry;
use crate::{ChatRequest, ChatResponse, Provider, ProviderError, TokenSink, truncate};

/// One call of `provider`, with a panic — while the call is made or while its future is
/// polled — turned into [`ProviderError::Other`], so that a run loop ends the run as failed,
/// with its final event and record, instead of losing the run's task. The panicked future is
/// dropped, never polled again. The call is traced as a `chat {model}` span (see
/// [`telemetry`](crate::telemetry)).
pub async fn chat_contained(
    provider: &dyn Provider,
    request: &ChatRequest,
    tokens: &dyn TokenSink,
) -> Result<ChatResponse, ProviderError> {
    use tracing::Instrument;
    let span = telemetry::chat_span(provider.name(), provider.model());
    let started = std::time::Instant::now();
    let answer = chat_caught(provider, request, tokens).instrument(span.clone()).await;
    telemetry::chat_answered(&span, provider.name(), provider.model(), started.elapsed(), &answer);
    answer
}

async fn chat_caught(
    provider: &dyn Provider,
    request: &ChatRequest,
    tokens: &dyn TokenSink,
) -> Result<ChatResponse, ProviderError> {
    use std::panic::{AssertUnwindSafe, catch_unwind};
    fn panicked(payload: Box<dyn std::any::Any + Send>) -> ProviderError {
        let text = panic_text(&*payload);
        ProviderError::Other(format!("the model provider panicked ({}); the call failed", truncate(&text, 200)))
    }
    let mut call = match catch_unwind(AssertUnwindSafe(|| provider.chat(request, tokens))) {
        Ok(call) => call,
        Err(payload) => return Err(panicked(payload)),
    };
    std::future::poll_fn(move |cx| match catch_unwind(AssertUnwindSafe(|| call.as_mut().poll(cx))) {
        Ok(poll) => poll,
        Err(payload) => std::task::Poll::Ready(Err(panicked(payload))),
    })
    .await
}

/// The message a panic carried (its payload's `&str` or `String`), or "a panic without a
/// message".
///
/// ```
/// let payload = std::panic::catch_unwind(|| panic!("boom {}", 1)).unwrap_err();
/// assert_eq!(agents_provider::panic_text(&*payload), "boom 1");
/// ```
pub fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}
