//! A provider's failures as a run sees them: a panicking provider ends the run as failed
//! with its final event and `run_finished` record; a provider limit ends it with the limit
//! named in the audit; a paid call whose usage cannot be read is counted against the budget by
//! the documented estimate.
#![cfg(feature = "http")]

use crate::provider_common;

use agents_runtime::RunResultExt as _;
use agents_runtime::audit::{AuditStatus, MemorySink};
use agents_runtime::budget::InMemoryBudget;
use agents_runtime::events::Event;
use agents_runtime::provider::{
    AnthropicConfig, AnthropicProvider, ApiKey, ChatRequest, ChatResponse, OpenAiConfig, OpenAiProvider, PriceTable,
    Provider, ProviderError, TokenSink,
};
use agents_runtime::{Principal, RoleMap, RunStatus, Runtime, agent, permissions, tool};
use futures::future::BoxFuture;
use provider_common::hostile::{Body, Hostile, head};
use provider_common::*;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

permissions! {
    pub mod perms { notes.read }
}

/// Reads notes.
#[tool(permission = perms::notes::read)]
async fn read_notes() -> Result<String, String> {
    Ok("none".into())
}

agent! {
    /// An assistant.
    pub struct Assistant;
    tools: [read_notes],
}

fn me() -> Principal {
    Principal::new("u1", "org1", "reader")
}

fn runtime(audit: Arc<MemorySink>, provider: Arc<dyn Provider>) -> Runtime {
    Runtime::builder(audit, provider).roles(RoleMap::new().role("reader", ["notes.read"])).build()
}

/// Panics while the call is being made, or while its future is polled.
struct Panicking {
    when_polled: bool,
}

impl Provider for Panicking {
    fn name(&self) -> &str {
        "panicking"
    }

    fn model(&self) -> &str {
        "m"
    }

    fn chat<'a>(
        &'a self,
        _: &'a ChatRequest,
        _: &'a dyn TokenSink,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        if !self.when_polled {
            panic!("a header the HTTP layer could not take");
        }
        Box::pin(async {
            tokio::task::yield_now().await;
            panic!("a number that did not fit");
        })
    }
}

#[tokio::test]
async fn a_panicking_provider_fails_the_run_with_its_final_event_and_record() {
    for when_polled in [false, true] {
        let audit = Arc::new(MemorySink::new());
        let rt = runtime(audit.clone(), Arc::new(Panicking { when_polled }));
        let mut run = rt.start::<Assistant>(me(), &format!("panic-{when_polled}"), "hello".into()).unwrap();
        let mut events = Vec::new();
        let collect = async {
            while let Some(event) = run.events().recv().await {
                let done = matches!(event, Event::Done { .. });
                events.push(event);
                if done {
                    break;
                }
            }
        };
        // Without containment the run's task dies and no final event ever comes.
        let ended = tokio::time::timeout(Duration::from_secs(10), collect).await;
        assert!(ended.is_ok(), "no final event within 10 s: {events:?}");
        let out = run.wait().await;
        assert_eq!(out.status(), RunStatus::Failed, "{out:?}");
        let error = out.error_text().unwrap();
        assert!(error.contains("the model provider panicked"), "{error}");
        assert!(!error.contains("the run task failed"), "{error}");
        assert!(
            events.iter().any(|e| matches!(e, Event::Done { status, .. } if *status == RunStatus::Failed)),
            "the final event is sent: {events:?}"
        );
        let finished: Vec<_> = audit.records().into_iter().filter(|r| r.status == AuditStatus::RunFinished).collect();
        assert_eq!(finished.len(), 1);
        assert_eq!(finished[0].reason.as_deref(), Some("failed"));
        assert!(
            audit.records().iter().any(|r| r.status == AuditStatus::Notice
                && r.reason.as_deref().is_some_and(|x| x.contains("the model provider panicked"))),
            "{:?}",
            audit.records()
        );
    }
}

#[tokio::test]
async fn a_provider_limit_fails_the_run_with_the_limit_in_the_audit() {
    let server = Hostile::start(
        head("text/event-stream"),
        Body::Endless {
            prefix: b"data: {\"choices\":[{\"delta\":{\"content\":\"".to_vec(),
            unit: b"x".to_vec(),
            suffix: Vec::new(),
            total: 64 << 20,
        },
    )
    .await;
    let config =
        OpenAiConfig::compatible("m", format!("{}/v1", server.base_url)).with_http(fast_http(Duration::from_secs(30)));
    let audit = Arc::new(MemorySink::new());
    let rt = runtime(audit.clone(), Arc::new(OpenAiProvider::new(config).unwrap()));
    let out = rt.start::<Assistant>(me(), "limit", "hello".into()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::Failed, "{out:?}");
    assert!(out.error_text().as_deref().unwrap().contains("max_event_bytes"), "{out:?}");
    let records = audit.records();
    let notice = records.iter().find(|r| r.status == AuditStatus::Notice).expect("a notice with the reason");
    assert!(notice.reason.as_deref().unwrap().contains("ProviderHttpOptions::limits.max_event_bytes"), "{notice:?}");
    assert_eq!(records.last().unwrap().status, AuditStatus::RunFinished);
}

static USAGE_TESTS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// An OpenAI stream that answers `ok` with `usage` as given.
fn openai_answer(usage: serde_json::Value) -> Vec<u8> {
    let events = [
        format!(
            "data: {}\n\n",
            json!({"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]})
        ),
        format!("data: {}\n\n", json!({"choices": [], "usage": usage})),
        "data: [DONE]\n\n".to_string(),
    ];
    sse_response(&events)
}

/// An Anthropic stream that answers `ok` with the `message_start` usage as given and no usage
/// in `message_delta`.
fn anthropic_answer(usage: serde_json::Value) -> Vec<u8> {
    let events = [
        format!("event: message_start\ndata: {}\n\n", json!({"type": "message_start", "message": {"usage": usage}})),
        format!(
            "event: content_block_start\ndata: {}\n\n",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "ok"}})
        ),
        format!(
            "event: message_delta\ndata: {}\n\n",
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}})
        ),
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n".to_string(),
    ];
    sse_response(&events)
}

#[tokio::test]
async fn unreadable_usage_of_a_paid_call_is_counted_against_the_budget_by_the_estimate() {
    let _one = USAGE_TESTS.lock().await;
    let unreadable = [
        json!({"prompt_tokens": "12", "completion_tokens": 3}),
        json!({"prompt_tokens": 12, "completion_tokens": -3}),
        json!({"prompt_tokens": 1.5, "completion_tokens": 3}),
        json!("12 tokens"),
    ];
    for (i, usage) in unreadable.into_iter().enumerate() {
        let server = TestServer::start(vec![Reply::Bytes(openai_answer(usage.clone()))]).await;
        // A paid server (as if remote) with a price: 1 USD per million tokens both ways.
        let mut config = OpenAiConfig::compatible("m", format!("{}/v1", server.base_url))
            .with_prices(PriceTable::new().with_price("m", 1.0, 1.0).unwrap())
            .with_http(fast_http(Duration::from_secs(20)));
        config.paid = true;
        let budget = Arc::new(InMemoryBudget::new().with_user_cap("org1", "u1", 10.0));
        let audit = Arc::new(MemorySink::new());
        let rt = Runtime::builder(audit, Arc::new(OpenAiProvider::new(config).unwrap()))
            .roles(RoleMap::new().role("reader", ["notes.read"]))
            .budget(budget.clone())
            .build();
        let out = rt.start::<Assistant>(me(), &format!("usage-{i}"), "hello".into()).unwrap().wait().await;
        assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
        let spent = budget.user_spend("org1", "u1");
        assert!(spent > 0.0, "{usage}: an unreadable usage is never free");
        // The estimate: the request's size for unreadable input tokens, the answer's size
        // ("ok") for unreadable output tokens (no max_tokens was sent).
        let request_bytes = server.requests()[0].body.len() as u64;
        let input = usage.get("prompt_tokens").and_then(|v| v.as_u64()).unwrap_or(request_bytes);
        let output = usage.get("completion_tokens").and_then(|v| v.as_u64()).unwrap_or(2);
        assert!((spent - (input + output) as f64 / 1e6).abs() < 1e-12, "{usage}: spent {spent}");
        assert_eq!(out.report().usage.cost_usd, spent);
    }
}

#[tokio::test]
async fn both_providers_estimate_unreadable_usage_the_same_way_and_warn() {
    // The other usage test warns from the same place; one at a time, so that the warnings
    // counted here are this test's.
    let _one = USAGE_TESTS.lock().await;
    let capture = Capture::install();
    for usage in [json!(null), json!({"prompt_tokens": "many"}), json!({"prompt_tokens": 5, "completion_tokens": -1})] {
        let server = TestServer::start(vec![Reply::Bytes(openai_answer(usage.clone()))]).await;
        let config =
            OpenAiConfig::openai("gpt-4o-mini", ApiKey::new("sk-x")).with_http(fast_http(Duration::from_secs(20)));
        let config = OpenAiConfig { base_url: format!("{}/v1", server.base_url), max_tokens: Some(77), ..config };
        let response = ask(&OpenAiProvider::new(config).unwrap()).await.unwrap();
        assert!(response.usage.estimated, "{usage}");
        let request_bytes = server.requests()[0].body.len() as u64;
        let expected_input = usage.get("prompt_tokens").and_then(|v| v.as_u64()).unwrap_or(request_bytes);
        assert_eq!((response.usage.input_tokens, response.usage.output_tokens), (expected_input, 77), "{usage}");
    }
    for usage in [json!(null), json!({"input_tokens": "many", "output_tokens": 1}), json!({"input_tokens": -4})] {
        let server = TestServer::start(vec![Reply::Bytes(anthropic_answer(usage.clone()))]).await;
        let config = AnthropicConfig::new("claude-sonnet-4-5", ApiKey::new("sk-ant-x"))
            .with_base_url(server.base_url.clone())
            .with_max_tokens(77)
            .with_http(fast_http(Duration::from_secs(20)));
        let response = ask(&AnthropicProvider::new(config).unwrap()).await.unwrap();
        assert!(response.usage.estimated, "{usage}");
        let request_bytes = server.requests()[0].body.len() as u64;
        let expected_output = usage.get("output_tokens").and_then(|v| v.as_u64()).unwrap_or(77);
        assert_eq!(
            (response.usage.input_tokens, response.usage.output_tokens),
            (request_bytes, expected_output),
            "{usage}"
        );
    }
    let warnings = capture.warnings();
    assert_eq!(
        warnings.iter().filter(|w| w.contains("no readable token usage")).count(),
        6,
        "one warning per call: {warnings:?}"
    );
    // Readable usage: no estimate, no warning.
    let server =
        TestServer::start(vec![Reply::Bytes(openai_answer(json!({"prompt_tokens": 5, "completion_tokens": 2})))]).await;
    let config = OpenAiConfig::openai("gpt-4o-mini", ApiKey::new("sk-x")).with_http(fast_http(Duration::from_secs(20)));
    let response =
        ask(&OpenAiProvider::new(OpenAiConfig { base_url: format!("{}/v1", server.base_url), ..config }).unwrap())
            .await
            .unwrap();
    assert!(!response.usage.estimated);
    assert_eq!((response.usage.input_tokens, response.usage.output_tokens), (5, 2));
    assert_eq!(capture.warnings().iter().filter(|w| w.contains("no readable token usage")).count(), 6);
}
