//! Spans and metrics, following the OpenTelemetry semantic conventions for generative AI.
//!
//! The runtime writes to [`tracing`] only: with no subscriber (or one that filters these
//! out) a span or metric event is one disabled-callsite check and nothing else is computed.
//! `agents-telemetry` turns them into OpenTelemetry traces and metrics and exports them over
//! OTLP when the standard `OTEL_*` environment variables are set; any other `tracing`
//! subscriber sees the same spans and events.
//!
//! # Spans
//!
//! | span (`otel.name`) | kind | when |
//! | --- | --- | --- |
//! | `invoke_agent {agent}` | internal | one per run ([`Runtime::start`](crate::Runtime::start)) |
//! | `chat {model}` | client | one per model call (the run's and the conversational classifier's), written by [`provider::chat_contained`](crate::provider::chat_contained) |
//! | `execute_tool {tool}` | internal | one per tool call the model (or a direct session, or another tool) asks for, refused ones included |
//!
//! The `tracing` span names are the operation names (`invoke_agent`, `chat`,
//! `execute_tool`); `otel.name` carries the full name an OpenTelemetry backend shows.
//! `chat` and `execute_tool` spans are children of the run's `invoke_agent` span.
//!
//! Attributes, by span (the `gen_ai.*` names are the conventions'; `agents.*` are this
//! runtime's own):
//!
//! - `invoke_agent`: `gen_ai.operation.name`, `gen_ai.agent.name`, `gen_ai.conversation.id`
//!   (the session id), `gen_ai.provider.name`, `gen_ai.request.model`, `agents.run.id`,
//!   `agents.manifest.sha256`, `agents.user.id`, `agents.org.id`, `agents.role`, and when the
//!   run ends `agents.run.status` and `agents.run.iterations`.
//! - `chat`: `gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.request.model`, and when
//!   it answers `gen_ai.usage.input_tokens` and `gen_ai.usage.output_tokens`; `error.type`
//!   (the kind of provider error, never its text) when it fails.
//! - `execute_tool`: `gen_ai.operation.name`, `gen_ai.tool.name`, `gen_ai.tool.call.id`,
//!   `gen_ai.tool.type` (`function`), `agents.run.id`, `agents.tool.tier`, `agents.tool.risk`
//!   (both absent for a name the agent does not have), `agents.audit.outcome` (the status of
//!   the call's final audit record: `executed`, `failed`, `denied`, `rejected`, `skipped`,
//!   `handed_off` or `substituted`; absent when the call ends as a conversational proposal
//!   waiting for the user's next message) and `agents.decision` (`approved`, `rejected` or
//!   `undecided`: an action that waited for a person's decision); `error.type` (the outcome)
//!   and an error status when the call did not run or failed.
//!
//! **Never recorded**: argument values, result values, the model's text, the prompt, tool
//! descriptions, confirmation tokens, API keys. Only names, ids, counts, enumerations and the
//! manifest hash reach a span, so no secret can (the `agents-telemetry` tests scan every
//! exported attribute for a call's secret value).
//!
//! # Metrics
//!
//! Metrics are `tracing` events at `DEBUG` level with target [`METRICS_TARGET`], whose fields
//! follow the `tracing-opentelemetry` metrics convention (`monotonic_counter.<name>`,
//! `histogram.<name>`; the other fields are the metric's attributes):
//!
//! | metric | instrument | unit | attributes |
//! | --- | --- | --- | --- |
//! | `agents.runs` | counter | `{run}` | `gen_ai.agent.name`, `agents.run.status` |
//! | `agents.tool.calls` | counter | `{call}` | `gen_ai.tool.name`, `agents.tool.tier`, `agents.audit.outcome` |
//! | `agents.confirmation.wait` | histogram | `s` | `gen_ai.tool.name`, `agents.decision` |
//! | `gen_ai.client.operation.duration` | histogram | `s` | `gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.request.model`, `error.type` |
//! | `gen_ai.client.token.usage` | histogram | `{token}` | `gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.request.model`, `gen_ai.token.type` (`input`/`output`) |

use crate::audit::AuditStatus;
use agents_core::{Tier, ToolSpec};
use std::time::Duration;
use tracing::Span;
use tracing::field::Empty;

pub use crate::provider::telemetry::METRICS_TARGET;

/// The span of one run: `invoke_agent {agent}`.
#[allow(clippy::too_many_arguments, reason = "one attribute each, named at the one call site")]
pub(crate) fn run_span(
    agent: &str,
    run_id: &str,
    session_id: &str,
    manifest_sha256: &str,
    provider: &str,
    model: &str,
    user_id: &str,
    org_id: &str,
    role: &str,
) -> Span {
    tracing::info_span!(
        "invoke_agent",
        otel.name = format!("invoke_agent {agent}"),
        otel.kind = "internal",
        gen_ai.operation.name = "invoke_agent",
        gen_ai.agent.name = agent,
        gen_ai.conversation.id = session_id,
        gen_ai.provider.name = provider,
        gen_ai.request.model = model,
        agents.run.id = run_id,
        agents.manifest.sha256 = manifest_sha256,
        agents.user.id = user_id,
        agents.org.id = org_id,
        agents.role = role,
        agents.run.status = Empty,
        agents.run.iterations = Empty,
        otel.status_code = Empty,
    )
}

/// Records how the current run ended on its span, and counts it.
pub(crate) fn run_ended(agent: &str, status: &'static str, iterations: u32) {
    let span = Span::current();
    if !span.is_disabled() {
        span.record("agents.run.status", status);
        span.record("agents.run.iterations", i64::from(iterations));
        if status == "failed" {
            span.record("otel.status_code", "error");
        }
    }
    tracing::event!(
        target: METRICS_TARGET,
        tracing::Level::DEBUG,
        monotonic_counter.agents.runs = 1u64,
        gen_ai.agent.name = agent,
        agents.run.status = status,
    );
}

/// The span of one tool call: `execute_tool {tool}`. `spec` is the tool's when the agent has
/// one of that name.
pub(crate) fn tool_span(
    name: &str,
    call_id: &str,
    run_id: &str,
    spec: impl FnOnce() -> Option<&'static ToolSpec>,
) -> Span {
    let span = tracing::info_span!(
        "execute_tool",
        otel.name = format!("execute_tool {name}"),
        otel.kind = "internal",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = name,
        gen_ai.tool.call.id = call_id,
        gen_ai.tool.type = "function",
        agents.run.id = run_id,
        agents.tool.tier = Empty,
        agents.tool.risk = Empty,
        agents.audit.outcome = Empty,
        agents.decision = Empty,
        error.type = Empty,
        otel.status_code = Empty,
    );
    if !span.is_disabled()
        && let Some(spec) = spec()
    {
        span.record("agents.tool.tier", spec.tier.as_str());
        span.record("agents.tool.risk", spec.risk.as_str());
    }
    span
}

/// Every audit record of a run passes here: a call's final record sets its outcome on the
/// current `execute_tool` span and counts the call. Spans without these fields (the run's)
/// ignore them. (An attribute is recorded once: a second value would be exported as a second
/// attribute of the same name.)
pub(crate) fn audited(status: AuditStatus, tool: Option<&str>, tier: Option<Tier>) {
    let Some(tool) = tool else { return };
    let error =
        matches!(status, AuditStatus::Failed | AuditStatus::Rejected | AuditStatus::Skipped | AuditStatus::Denied);
    if !error && !matches!(status, AuditStatus::Executed | AuditStatus::HandedOff | AuditStatus::Substituted) {
        return;
    }
    // No subscriber takes anything (none is set, or every one is off): neither the span nor
    // the metric would be recorded, and the current span is not looked up.
    if tracing::level_filters::LevelFilter::current() == tracing::level_filters::LevelFilter::OFF {
        return;
    }
    let outcome = status.as_str();
    let span = Span::current();
    if !span.is_disabled() {
        span.record("agents.audit.outcome", outcome);
        if error {
            span.record("error.type", outcome);
            span.record("otel.status_code", "error");
        }
    }
    tracing::event!(
        target: METRICS_TARGET,
        tracing::Level::DEBUG,
        monotonic_counter.agents.tool.calls = 1u64,
        gen_ai.tool.name = tool,
        agents.tool.tier = tier.map(Tier::as_str),
        agents.audit.outcome = outcome,
    );
}

/// How long an action waited for a person's decision and what came of it: on the current
/// `execute_tool` span, and as a metric.
pub(crate) fn confirmation_waited(tool: &str, waited: Duration, decision: &'static str) {
    let span = Span::current();
    if !span.is_disabled() {
        span.record("agents.decision", decision);
    }
    tracing::event!(
        target: METRICS_TARGET,
        tracing::Level::DEBUG,
        histogram.agents.confirmation.wait = waited.as_secs_f64(),
        gen_ai.tool.name = tool,
        agents.decision = decision,
    );
}
