//! Export over OTLP/HTTP (protobuf) to a receiver this test starts on loopback, configured the
//! way an operator does it (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_SERVICE_NAME`), and what
//! arrived decoded with the OTLP protobuf messages: span names, kinds, parents, attributes,
//! the service name, the metrics, and no argument, result, model text or secret value.

use crate::common;

use bytes::Bytes;
use common::*;
use http_body_util::{BodyExt, Full};
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::Span;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tracing_subscriber::layer::SubscriberExt as _;

/// What the receiver got: (path, content type, body) per request.
type Received = Arc<Mutex<Vec<(String, String, Bytes)>>>;

/// An OTLP/HTTP receiver on a free loopback port, on its own thread and runtime (the
/// exporter's blocking client must not wait on the test's runtime). Answers 200 with an
/// empty (valid) protobuf response.
fn start_receiver() -> (String, Received) {
    let received: Received = Arc::default();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let store = received.clone();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            loop {
                let Ok((stream, _)) = listener.accept().await else { return };
                let store = store.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                        let store = store.clone();
                        async move {
                            let path = req.uri().path().to_owned();
                            let kind = req
                                .headers()
                                .get(hyper::header::CONTENT_TYPE)
                                .and_then(|v| v.to_str().ok())
                                .unwrap_or_default()
                                .to_owned();
                            let body = req.into_body().collect().await?.to_bytes();
                            store.lock().unwrap().push((path, kind, body));
                            let mut answer = hyper::Response::new(Full::new(Bytes::new()));
                            answer.headers_mut().insert(
                                hyper::header::CONTENT_TYPE,
                                hyper::header::HeaderValue::from_static("application/x-protobuf"),
                            );
                            Ok::<_, hyper::Error>(answer)
                        }
                    });
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await;
                });
            }
        });
    });
    (url, received)
}

fn value(v: &Option<AnyValue>) -> String {
    match v.as_ref().and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(any_value::Value::DoubleValue(d)) => d.to_string(),
        other => format!("{other:?}"),
    }
}

fn attrs(kvs: &[KeyValue]) -> HashMap<String, String> {
    kvs.iter().map(|kv| (kv.key.clone(), value(&kv.value))).collect()
}

#[test]
fn spans_and_metrics_arrive_over_otlp_http() {
    let (url, received) = start_receiver();
    let vars: HashMap<&str, String> =
        HashMap::from([("OTEL_EXPORTER_OTLP_ENDPOINT", url.clone()), ("OTEL_SERVICE_NAME", "clinic-otlp".to_owned())]);
    let telemetry = agents_telemetry::from_vars(|name| vars.get(name).cloned())
        .expect("the configuration is valid")
        .expect("an endpoint is set, so telemetry is on");
    let subscriber = tracing_subscriber::registry().with(telemetry.layer());
    let ran = {
        let _default = tracing::subscriber::set_default(subscriber);
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(run_scenario())
    };
    // Flushes both pipelines over HTTP before returning.
    telemetry.shutdown().expect("the receiver accepted every export");

    let received = received.lock().unwrap().clone();
    let bodies = |path: &str| -> Vec<Bytes> {
        received.iter().filter(|(p, _, _)| p == path).map(|(_, _, b)| b.clone()).collect()
    };
    for (path, kind, _) in &received {
        assert_eq!(kind, "application/x-protobuf", "{path} was sent as protobuf");
    }

    // Traces: decode every request and collect the spans with their service name.
    let trace_bodies = bodies("/v1/traces");
    assert!(
        !trace_bodies.is_empty(),
        "no request reached /v1/traces: {:?}",
        received.iter().map(|r| &r.0).collect::<Vec<_>>()
    );
    let mut spans: Vec<Span> = Vec::new();
    for body in &trace_bodies {
        let request = ExportTraceServiceRequest::decode(body.clone()).expect("a valid OTLP trace request");
        for rs in request.resource_spans {
            let resource = attrs(&rs.resource.expect("a resource").attributes);
            assert_eq!(resource.get("service.name").map(String::as_str), Some("clinic-otlp"));
            spans.extend(rs.scope_spans.into_iter().flat_map(|ss| ss.spans));
        }
    }
    let one = |name: &str| -> &Span {
        let found: Vec<&Span> = spans.iter().filter(|s| s.name == name).collect();
        assert_eq!(found.len(), 1, "one `{name}` span in {:?}", spans.iter().map(|s| &s.name).collect::<Vec<_>>());
        found[0]
    };
    let run = one("invoke_agent FrontDesk");
    assert!(run.parent_span_id.is_empty(), "the run is the root");
    assert_eq!(run.kind, SpanKind::Internal as i32);
    let a = attrs(&run.attributes);
    assert_eq!(a["gen_ai.operation.name"], "invoke_agent");
    assert_eq!(a["gen_ai.agent.name"], "FrontDesk");
    assert_eq!(a["gen_ai.request.model"], MODEL);
    assert_eq!(a["agents.run.id"], ran.run_id);
    assert_eq!(a["agents.run.status"], "completed");
    assert_eq!(a["agents.manifest.sha256"], <FrontDesk as agents_runtime::Agent>::MANIFEST_SHA256);

    let chats: Vec<&Span> = spans.iter().filter(|s| s.name == format!("chat {MODEL}")).collect();
    assert_eq!(chats.len(), 4);
    let mut input_tokens: Vec<String> = chats
        .iter()
        .map(|c| {
            assert_eq!(c.parent_span_id, run.span_id);
            assert_eq!(c.trace_id, run.trace_id);
            assert_eq!(c.kind, SpanKind::Client as i32);
            let a = attrs(&c.attributes);
            assert_eq!(a["gen_ai.operation.name"], "chat");
            assert_eq!(a["gen_ai.provider.name"], "scripted");
            a["gen_ai.usage.input_tokens"].clone()
        })
        .collect();
    input_tokens.sort();
    assert_eq!(input_tokens, ["10", "20", "30", "40"]);

    for (tool, tier, outcome) in [
        ("lookup_patient", "read", "executed"),
        ("book_visit", "action", "executed"),
        ("refer_to_specialist", "handoff", "handed_off"),
    ] {
        let s = one(&format!("execute_tool {tool}"));
        assert_eq!(s.parent_span_id, run.span_id);
        assert_eq!(s.kind, SpanKind::Internal as i32);
        let a = attrs(&s.attributes);
        assert_eq!(a["gen_ai.operation.name"], "execute_tool");
        assert_eq!(a["gen_ai.tool.name"], tool);
        assert_eq!(a["gen_ai.tool.type"], "function");
        assert!(a["gen_ai.tool.call.id"].starts_with("call_"));
        assert_eq!(a["agents.tool.tier"], tier);
        assert_eq!(a["agents.audit.outcome"], outcome);
    }
    assert_eq!(attrs(&one("execute_tool book_visit").attributes)["agents.decision"], "approved");

    // Metrics: the names arrived, with their attributes.
    let metric_bodies = bodies("/v1/metrics");
    assert!(!metric_bodies.is_empty(), "no request reached /v1/metrics");
    let mut names = Vec::new();
    for body in &metric_bodies {
        let request = ExportMetricsServiceRequest::decode(body.clone()).expect("a valid OTLP metrics request");
        for rm in request.resource_metrics {
            for sm in rm.scope_metrics {
                names.extend(sm.metrics.into_iter().map(|m| m.name));
            }
        }
    }
    for name in [
        "agents.runs",
        "agents.tool.calls",
        "agents.confirmation.wait",
        "gen_ai.client.operation.duration",
        "gen_ai.client.token.usage",
    ] {
        assert!(names.iter().any(|n| n == name), "metric `{name}` did not arrive: {names:?}");
    }

    // Nothing of the call's values in anything that left the process, in any form the bytes
    // could carry them (protobuf strings are plain UTF-8).
    for (path, _, body) in &received {
        for value in [SECRET, ARG_VALUE, RESULT_VALUE, NOTE_VALUE, MODEL_TEXT] {
            assert!(!body.windows(value.len()).any(|w| w == value.as_bytes()), "`{value}` was exported to {path}");
        }
    }
    // The scan sees what it scans: the run id is in the bytes.
    assert!(received.iter().any(|(_, _, b)| b.windows(ran.run_id.len()).any(|w| w == ran.run_id.as_bytes())));
}

#[test]
fn nothing_is_built_without_an_endpoint_and_a_wrong_protocol_is_refused() {
    let none = |_: &str| None;
    assert!(agents_telemetry::from_vars(none).unwrap().is_none(), "no endpoint: telemetry stays off");
    let disabled = |name: &str| match name {
        "OTEL_EXPORTER_OTLP_ENDPOINT" => Some("http://127.0.0.1:9".to_owned()),
        "OTEL_SDK_DISABLED" => Some("true".to_owned()),
        _ => None,
    };
    assert!(agents_telemetry::from_vars(disabled).unwrap().is_none(), "OTEL_SDK_DISABLED=true turns it off");
    let grpc = |name: &str| match name {
        "OTEL_EXPORTER_OTLP_ENDPOINT" => Some("http://127.0.0.1:9".to_owned()),
        "OTEL_EXPORTER_OTLP_PROTOCOL" => Some("grpc".to_owned()),
        _ => None,
    };
    let e = agents_telemetry::from_vars(grpc).unwrap_err().to_string();
    assert!(e.contains("OTEL_EXPORTER_OTLP_PROTOCOL") && e.contains("http/protobuf"), "{e}");
    let bad_url = |name: &str| match name {
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" => Some("not a url".to_owned()),
        _ => None,
    };
    let e = agents_telemetry::from_vars(bad_url).unwrap_err().to_string();
    assert!(e.contains("OTEL_EXPORTER_OTLP"), "{e}");
}
