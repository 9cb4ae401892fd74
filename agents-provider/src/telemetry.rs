//! The `chat {model}` span of one model call and the metrics of its latency and token usage,
//! following the OpenTelemetry semantic conventions for generative AI (the runtime's
//! `telemetry` module lists every span and metric of a run, these included).
//!
//! - span `chat {model}` (kind client; `tracing` target `agents_runtime::telemetry`):
//!   `gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.request.model`, and when the
//!   model answers `gen_ai.usage.input_tokens` and `gen_ai.usage.output_tokens`; `error.type`
//!   (the kind of provider error, never its text) and an error status when the call fails.
//! - metrics, `DEBUG` events with target [`METRICS_TARGET`] in the `tracing-opentelemetry`
//!   convention: `gen_ai.client.operation.duration` (histogram, `s`: `gen_ai.operation.name`,
//!   `gen_ai.provider.name`, `gen_ai.request.model`, `error.type`) and
//!   `gen_ai.client.token.usage` (histogram, `{token}`: the same and `gen_ai.token.type`,
//!   `input` or `output`).
//!
//! No prompt, answer text, argument or key reaches a span or a metric: only names, counts and
//! the kind of failure.

use crate::{ChatResponse, ProviderError};
use std::time::Duration;
use tracing::Span;
use tracing::field::Empty;

/// The `tracing` target of the metric events of a run: the runtime's and those of its model
/// calls (see the [module docs](self)).
pub const METRICS_TARGET: &str = "agents_runtime::metrics";

/// The span of one model call: `chat {model}`.
pub(crate) fn chat_span(provider: &str, model: &str) -> Span {
    tracing::info_span!(
        // The target the span had when the runtime wrote it: a filter on `agents_runtime`
        // still sees every span of a run.
        target: "agents_runtime::telemetry",
        "chat",
        otel.name = format!("chat {model}"),
        otel.kind = "client",
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = provider,
        gen_ai.request.model = model,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        error.type = Empty,
        otel.status_code = Empty,
    )
}

/// Records a model call's answer (token counts, why it stopped) or failure on its span, and
/// its latency and token usage as metrics.
pub(crate) fn chat_answered(
    span: &Span,
    provider: &str,
    model: &str,
    took: Duration,
    answer: &Result<ChatResponse, ProviderError>,
) {
    let error = answer.as_ref().err().map(ProviderError::kind);
    if !span.is_disabled() {
        match answer {
            Ok(r) => {
                span.record("gen_ai.usage.input_tokens", as_i64(r.usage.input_tokens));
                span.record("gen_ai.usage.output_tokens", as_i64(r.usage.output_tokens));
            }
            Err(_) => {
                span.record("error.type", error);
                span.record("otel.status_code", "error");
            }
        }
    }
    tracing::event!(
        target: METRICS_TARGET,
        tracing::Level::DEBUG,
        histogram.gen_ai.client.operation.duration = took.as_secs_f64(),
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = provider,
        gen_ai.request.model = model,
        error.type = error,
    );
    if let Ok(r) = answer {
        for (kind, count) in [("input", r.usage.input_tokens), ("output", r.usage.output_tokens)] {
            tracing::event!(
                target: METRICS_TARGET,
                tracing::Level::DEBUG,
                histogram.gen_ai.client.token.usage = count,
                gen_ai.operation.name = "chat",
                gen_ai.provider.name = provider,
                gen_ai.request.model = model,
                gen_ai.token.type = kind,
            );
        }
    }
}

/// A count as the signed integer OpenTelemetry attributes hold (`tracing-opentelemetry` records
/// an unsigned field as text).
fn as_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
