//! The span tree, attributes and metrics of one run (a read call with a secret argument, an
//! approved action, a handoff), through the same layer an application installs, into
//! in-memory exporters; and that no argument, result, model text or secret value is in any of
//! it.

use crate::common;

use common::*;
use opentelemetry::trace::{SpanId, SpanKind, Status};
use opentelemetry::{KeyValue, Value};
use opentelemetry_sdk::metrics::InMemoryMetricExporter;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData, ResourceMetrics};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SpanData};
use tracing_subscriber::layer::SubscriberExt as _;

/// The conventions' attribute names (the `opentelemetry-semantic-conventions` constants for
/// them are deprecated since the GenAI conventions moved to their own repository).
mod semconv {
    pub(crate) const GEN_AI_OPERATION_NAME: &str = "gen_ai.operation.name";
    pub(crate) const GEN_AI_AGENT_NAME: &str = "gen_ai.agent.name";
    pub(crate) const GEN_AI_REQUEST_MODEL: &str = "gen_ai.request.model";
    pub(crate) const GEN_AI_PROVIDER_NAME: &str = "gen_ai.provider.name";
    pub(crate) const GEN_AI_CONVERSATION_ID: &str = "gen_ai.conversation.id";
    pub(crate) const GEN_AI_USAGE_INPUT_TOKENS: &str = "gen_ai.usage.input_tokens";
    pub(crate) const GEN_AI_USAGE_OUTPUT_TOKENS: &str = "gen_ai.usage.output_tokens";
    pub(crate) const GEN_AI_TOOL_NAME: &str = "gen_ai.tool.name";
    pub(crate) const GEN_AI_TOOL_TYPE: &str = "gen_ai.tool.type";
    pub(crate) const GEN_AI_TOOL_CALL_ID: &str = "gen_ai.tool.call.id";
}

fn attr<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
    span.attributes.iter().find(|kv| kv.key.as_str() == key).map(|kv| &kv.value)
}

fn text(span: &SpanData, key: &str) -> String {
    match attr(span, key) {
        Some(v) => v.as_str().into_owned(),
        None => panic!("span `{}` has no attribute `{key}`: {:?}", span.name, span.attributes),
    }
}

fn int(span: &SpanData, key: &str) -> i64 {
    match attr(span, key) {
        Some(Value::I64(v)) => *v,
        other => panic!("span `{}`: `{key}` is {other:?}, expected an integer", span.name),
    }
}

/// One metric data point, flattened: (metric name, attributes, value as f64).
type Point = (String, Vec<KeyValue>, f64);

fn points(metrics: &[ResourceMetrics]) -> Vec<Point> {
    fn of<T: Copy + Into<f64>>(name: &str, data: &MetricData<T>, out: &mut Vec<Point>) {
        match data {
            MetricData::Sum(s) => out.extend(
                s.data_points().map(|p| (name.to_owned(), p.attributes().cloned().collect(), p.value().into())),
            ),
            MetricData::Histogram(h) => out.extend(
                h.data_points().map(|p| (name.to_owned(), p.attributes().cloned().collect(), p.count() as f64)),
            ),
            MetricData::Gauge(g) => out.extend(
                g.data_points().map(|p| (name.to_owned(), p.attributes().cloned().collect(), p.value().into())),
            ),
            MetricData::ExponentialHistogram(_) => {}
        }
    }
    let mut out = Vec::new();
    for rm in metrics {
        for sm in rm.scope_metrics() {
            for m in sm.metrics() {
                match m.data() {
                    AggregatedMetrics::F64(d) => of(m.name(), d, &mut out),
                    AggregatedMetrics::U64(d) => {
                        // u64 → f64 is lossy only beyond 2^53, far above any count here.
                        let mut tmp = Vec::new();
                        match d {
                            MetricData::Sum(s) => {
                                tmp.extend(s.data_points().map(|p| {
                                    (m.name().to_owned(), p.attributes().cloned().collect(), p.value() as f64)
                                }))
                            }
                            MetricData::Histogram(h) => {
                                tmp.extend(h.data_points().map(|p| {
                                    (m.name().to_owned(), p.attributes().cloned().collect(), p.count() as f64)
                                }))
                            }
                            _ => {}
                        }
                        out.extend(tmp);
                    }
                    AggregatedMetrics::I64(d) => {
                        if let MetricData::Sum(s) = d {
                            out.extend(
                                s.data_points().map(|p| {
                                    (m.name().to_owned(), p.attributes().cloned().collect(), p.value() as f64)
                                }),
                            );
                        }
                    }
                }
            }
        }
    }
    out
}

fn has(attrs: &[KeyValue], key: &str, value: &str) -> bool {
    attrs.iter().any(|kv| kv.key.as_str() == key && kv.value.as_str() == value)
}

/// Runs the scenario with the exporters behind `agents_telemetry::Telemetry::layer`.
fn traced_run() -> (Vec<SpanData>, Vec<ResourceMetrics>, Ran) {
    let spans = InMemorySpanExporter::default();
    let metrics = InMemoryMetricExporter::default();
    let telemetry = agents_telemetry::Telemetry::from_exporters("clinic-test", spans.clone(), metrics.clone());
    let subscriber = tracing_subscriber::registry().with(telemetry.layer());
    let ran = {
        let _default = tracing::subscriber::set_default(subscriber);
        // A current-thread runtime: the run's task runs on this thread, under this subscriber.
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(run_scenario())
    };
    telemetry.force_flush().unwrap();
    let finished = spans.get_finished_spans().unwrap();
    let exported = metrics.get_finished_metrics().unwrap();
    (finished, exported, ran)
}

#[test]
fn span_tree_attributes_and_metrics_of_a_run() {
    let (spans, metrics, ran) = traced_run();
    let named = |name: &str| -> Vec<&SpanData> { spans.iter().filter(|s| s.name == name).collect() };

    // invoke_agent: the root, one per run.
    let runs = named("invoke_agent FrontDesk");
    assert_eq!(runs.len(), 1, "spans: {:?}", spans.iter().map(|s| &s.name).collect::<Vec<_>>());
    let run = runs[0];
    assert_eq!(run.parent_span_id, SpanId::INVALID);
    assert_eq!(run.span_kind, SpanKind::Internal);
    assert_eq!(text(run, semconv::GEN_AI_OPERATION_NAME), "invoke_agent");
    assert_eq!(text(run, semconv::GEN_AI_AGENT_NAME), "FrontDesk");
    assert_eq!(text(run, semconv::GEN_AI_REQUEST_MODEL), MODEL);
    assert_eq!(text(run, semconv::GEN_AI_PROVIDER_NAME), "scripted");
    assert_eq!(text(run, semconv::GEN_AI_CONVERSATION_ID), "session-telemetry");
    assert_eq!(text(run, "agents.run.id"), ran.run_id);
    assert_eq!(text(run, "agents.manifest.sha256"), <FrontDesk as agents_runtime::Agent>::MANIFEST_SHA256);
    assert_eq!(text(run, "agents.run.status"), "completed");
    assert_eq!(int(run, "agents.run.iterations"), 4);
    assert_eq!(text(run, "agents.user.id"), "u-17");
    let run_id = run.span_context.span_id();

    // chat: one per model call, children of the run, with the tokens each reported.
    let chats = named(&format!("chat {MODEL}"));
    assert_eq!(chats.len(), 4);
    let mut tokens: Vec<(i64, i64)> = chats
        .iter()
        .map(|c| {
            assert_eq!(c.parent_span_id, run_id, "a chat span is a child of the run");
            assert_eq!(c.span_kind, SpanKind::Client);
            assert_eq!(text(c, semconv::GEN_AI_OPERATION_NAME), "chat");
            assert_eq!(text(c, semconv::GEN_AI_REQUEST_MODEL), MODEL);
            assert_eq!(text(c, semconv::GEN_AI_PROVIDER_NAME), "scripted");
            (int(c, semconv::GEN_AI_USAGE_INPUT_TOKENS), int(c, semconv::GEN_AI_USAGE_OUTPUT_TOKENS))
        })
        .collect();
    tokens.sort();
    assert_eq!(tokens, vec![(10, 1), (20, 2), (30, 3), (40, 4)]);

    // execute_tool: one per call, children of the run, with the gate's verdict.
    let tool = |name: &str| -> &SpanData {
        let found = named(&format!("execute_tool {name}"));
        assert_eq!(found.len(), 1, "one `execute_tool {name}` span");
        let s = found[0];
        assert_eq!(s.parent_span_id, run_id, "a tool span is a child of the run");
        assert_eq!(s.span_kind, SpanKind::Internal);
        assert_eq!(text(s, semconv::GEN_AI_OPERATION_NAME), "execute_tool");
        assert_eq!(text(s, semconv::GEN_AI_TOOL_NAME), name);
        assert_eq!(text(s, semconv::GEN_AI_TOOL_TYPE), "function");
        assert!(text(s, semconv::GEN_AI_TOOL_CALL_ID).starts_with("call_"));
        assert_eq!(text(s, "agents.run.id"), ran.run_id);
        s
    };
    let read = tool("lookup_patient");
    assert_eq!(text(read, "agents.tool.tier"), "read");
    assert_eq!(text(read, "agents.tool.risk"), "low");
    assert_eq!(text(read, "agents.audit.outcome"), "executed");
    assert!(attr(read, "agents.decision").is_none(), "a read call has no decision");
    assert_eq!(read.status, Status::Unset);
    let action = tool("book_visit");
    assert_eq!(text(action, "agents.tool.tier"), "action");
    assert_eq!(text(action, "agents.tool.risk"), "high");
    assert_eq!(text(action, "agents.decision"), "approved");
    assert_eq!(text(action, "agents.audit.outcome"), "executed");
    let handoff = tool("refer_to_specialist");
    assert_eq!(text(handoff, "agents.tool.tier"), "handoff");
    assert_eq!(text(handoff, "agents.audit.outcome"), "handed_off");
    // Each attribute once: a value recorded twice would be exported as two attributes.
    for s in &spans {
        let mut keys: Vec<&str> = s.attributes.iter().map(|kv| kv.key.as_str()).collect();
        keys.sort();
        let n = keys.len();
        keys.dedup();
        assert_eq!(keys.len(), n, "span `{}` repeats an attribute: {:?}", s.name, s.attributes);
    }
    assert_eq!(spans.len(), 1 + 4 + 3, "no other spans: {:?}", spans.iter().map(|s| &s.name).collect::<Vec<_>>());

    // Metrics: runs and calls by tier and outcome, the confirmation wait, model latency and tokens.
    let points = points(&metrics);
    let point = |name: &str, attrs: &[(&str, &str)]| -> f64 {
        let found: Vec<&Point> =
            points.iter().filter(|(n, a, _)| n == name && attrs.iter().all(|(k, v)| has(a, k, v))).collect();
        assert_eq!(found.len(), 1, "one `{name}` point with {attrs:?} in {points:?}");
        found[0].2
    };
    assert_eq!(point("agents.runs", &[("gen_ai.agent.name", "FrontDesk"), ("agents.run.status", "completed")]), 1.0);
    let calls = "agents.tool.calls";
    assert_eq!(point(calls, &[("agents.tool.tier", "read"), ("agents.audit.outcome", "executed")]), 1.0);
    assert_eq!(point(calls, &[("agents.tool.tier", "action"), ("agents.audit.outcome", "executed")]), 1.0);
    assert_eq!(point(calls, &[("agents.tool.tier", "handoff"), ("agents.audit.outcome", "handed_off")]), 1.0);
    assert_eq!(
        point("agents.confirmation.wait", &[("agents.decision", "approved"), ("gen_ai.tool.name", "book_visit")]),
        1.0
    );
    assert_eq!(point("gen_ai.client.operation.duration", &[("gen_ai.request.model", MODEL)]), 4.0);
    assert_eq!(point("gen_ai.client.token.usage", &[("gen_ai.token.type", "input")]), 4.0);
    assert_eq!(point("gen_ai.client.token.usage", &[("gen_ai.token.type", "output")]), 4.0);
}

#[test]
fn no_argument_result_model_text_or_secret_value_in_any_span_or_metric() {
    let (spans, metrics, _) = traced_run();
    assert!(!spans.is_empty() && !metrics.is_empty(), "the scan needs something to scan");
    // Everything exported, as text: names, every attribute, every event and its attributes,
    // statuses, every metric's name and data point attributes.
    let everything = format!("{spans:?}\n{metrics:?}");
    for value in [SECRET, ARG_VALUE, RESULT_VALUE, NOTE_VALUE, MODEL_TEXT] {
        assert!(!everything.contains(value), "`{value}` was exported");
    }
    // The scan sees what it scans: the run's ids are there.
    assert!(everything.contains("session-telemetry"));
}
