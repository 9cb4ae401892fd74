//! The answering start: `POST /v1/runs` with `Prefer: wait=<seconds>` answers with the run's
//! state (the body `GET /v1/runs/{id}` gives) when the run ends or waits for a decision within
//! the bound; it never holds a request for a person, refuses a bad bound before anything
//! starts, keeps authentication and the strict body, and the run outlives a client that left.

use crate::common::{self, AGENT, alice, bob, call, dev, ended, executed, get, open, serve, serve_with};
use agents_runtime::Runtime;
use agents_runtime::audit::{MemorySink, verify_jsonl_bytes};
use agents_runtime::provider::{BoxFuture, ChatRequest, ChatResponse, Provider, ProviderError, TokenSink};
use agents_service::{DevAuthenticator, ServiceLimits};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

fn body(session: &str, input: &str) -> String {
    json!({"agent": AGENT, "input": input, "session_id": session}).to_string()
}

/// `POST /v1/runs` as `who` with `Prefer: <prefer>`.
async fn start_waiting(base: SocketAddr, who: &agents_runtime::Principal, prefer: &str, body: &str) -> common::Reply {
    call(base, "POST", "/v1/runs", &[dev(who), ("prefer".into(), prefer.into())], Some(body)).await
}

#[tokio::test]
async fn the_answer_arrives_in_the_post_as_get_shows_it() {
    let s = serve(ServiceLimits::default()).await;
    let r = start_waiting(s.base, &alice(), "wait=10", &body("ans-1", "lookup the keyboard")).await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.headers.get("preference-applied").map(String::as_str), Some("wait=10"), "{}", r.head);
    let answered = r.json();
    assert_eq!(answered["status"], "completed", "{answered}");
    assert_eq!(answered["text"], "done: 1 call(s)", "{answered}");
    assert_eq!(answered["session_id"], "ans-1", "{answered}");
    assert_eq!(answered["waiting_for"], json!([]), "{answered}");
    // The same body, field for field, as the run's status reads.
    let run = answered["run_id"].as_str().unwrap();
    let status = get(s.base, &format!("/v1/runs/{run}"), &alice()).await.json();
    assert_eq!(answered, status);
    // The event stream still serves the whole run.
    let events = open(s.base, run, &alice(), None).await.rest().await;
    assert!(events.iter().any(|e| e.event == "done"), "{events:?}");
    // Other preferences are ignored; without `wait` the start answers as it always did.
    let r = start_waiting(s.base, &alice(), "respond-async", &body("ans-1", "hello")).await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert!(!r.headers.contains_key("preference-applied"), "{}", r.head);
    assert!(r.json()["events"].is_string() && r.json()["status"].is_null(), "{}", r.body);
}

#[tokio::test]
async fn a_run_waiting_for_a_decision_is_answered_at_once() {
    let mut limits = ServiceLimits::default();
    limits.max_answer_wait = Duration::from_secs(25);
    let s = serve(limits).await;
    // Were the request held for the person, it would end at the bound with the plain start
    // answer (no `Preference-Applied`, no `status`): the assertions below would fail.
    let r = start_waiting(s.base, &alice(), "wait=25", &body("ans-2", "submit a keyboard")).await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.headers.get("preference-applied").map(String::as_str), Some("wait=25"), "{}", r.head);
    let waiting = r.json();
    assert_eq!(waiting["status"], "running", "{waiting}");
    let calls = waiting["waiting_for"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "{waiting}");
    let call_id = calls[0].as_str().unwrap();
    // The call it names is the one waiting for Alice; deciding it runs it.
    assert_eq!(common::pending_call(s.base, &alice()).await, call_id);
    assert_eq!(executed("ans-2"), 0);
    let run = waiting["run_id"].as_str().unwrap();
    assert_eq!(get(s.base, &format!("/v1/runs/{run}"), &alice()).await.json()["waiting_for"], json!([call_id]));
    let d = common::post(s.base, &format!("/v1/decisions/{call_id}"), &alice(), r#"{"verdict": "approve"}"#).await;
    assert_eq!(d.status, 200, "{}", d.body);
    let done = ended(s.base, &alice(), run).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["waiting_for"], json!([]), "{done}");
    assert_eq!(executed("ans-2"), 1);
}

#[tokio::test]
async fn a_bad_wait_is_refused_and_starts_nothing() {
    let mut limits = ServiceLimits::default();
    limits.max_answer_wait = Duration::from_secs(20);
    limits.request_timeout = Duration::from_secs(8);
    let s = serve(limits).await;
    // The request timeout caps it below the configured 20 s: 7 at most here.
    for bad in [
        "wait=abc",
        "wait=-1",
        "wait=+3",
        "wait=1.5",
        "wait=",
        "wait",
        "wait=8",
        "wait=21",
        "wait=99999999999999999999999",
        "wait=2, wait=3",
        "respond-async, WAIT=9",
    ] {
        let r = start_waiting(s.base, &alice(), bad, &body("bad", "lookup the keyboard")).await;
        assert_eq!((r.status, r.code().as_str()), (400, "invalid_prefer"), "{bad}: {}", r.body);
        assert!(r.json()["error"]["message"].as_str().unwrap().contains("wait"), "{bad}: {}", r.body);
    }
    // Two `Prefer` headers each naming a wait are one wait given twice.
    let headers = [dev(&alice()), ("prefer".into(), "wait=1".into()), ("prefer".into(), "wait=2".into())];
    let r = call(s.base, "POST", "/v1/runs", &headers, Some(&body("bad", "hello"))).await;
    assert_eq!((r.status, r.code().as_str()), (400, "invalid_prefer"), "{}", r.body);
    assert!(get(s.base, "/v1/runs", &alice()).await.json()["runs"].as_array().unwrap().is_empty());
    assert!(s.audit.records().is_empty(), "nothing was recorded: {:?}", s.audit.records());
    // The largest accepted wait is answered.
    let r = start_waiting(s.base, &alice(), "wait=7", &body("bad", "lookup the keyboard")).await;
    assert_eq!((r.status, &r.json()["status"]), (201, &json!("completed")), "{}", r.body);
}

#[tokio::test]
async fn authentication_and_the_strict_body_hold_as_for_the_present_start() {
    let s = serve(ServiceLimits::default()).await;
    let no_one = call(
        s.base,
        "POST",
        "/v1/runs",
        &[("prefer".into(), "wait=5".into())],
        Some(&body("auth", "lookup the keyboard")),
    )
    .await;
    assert_eq!(no_one.status, 401, "{}", no_one.body);
    let forged = [("x-dev-principal".into(), "alice/acme".into()), ("prefer".into(), "wait=5".into())];
    let r = call(s.base, "POST", "/v1/runs", &forged, Some(&body("auth", "lookup the keyboard"))).await;
    assert_eq!(r.status, 401, "{}", r.body);
    let duplicate = r#"{"agent": "Desk", "agent": "Desk", "input": "lookup the keyboard"}"#;
    let r = start_waiting(s.base, &alice(), "wait=5", duplicate).await;
    assert_eq!((r.status, r.code().as_str()), (400, "invalid_json"), "{}", r.body);
    let r = start_waiting(s.base, &alice(), "wait=5", r#"{"agent": "Desk", "input": "x", "extra": 1}"#).await;
    assert_eq!((r.status, r.code().as_str()), (400, "invalid_request"), "{}", r.body);
    assert!(s.audit.records().is_empty(), "nothing started: {:?}", s.audit.records());
    // Alice's run answered to Alice; Bob naming her session gets a session of his own, and
    // neither her run nor its answer is his to read.
    let mine = start_waiting(s.base, &alice(), "wait=5", &body("shared-name", "lookup the keyboard")).await.json();
    let his = start_waiting(s.base, &bob(), "wait=5", &body("shared-name", "hello")).await.json();
    assert_eq!((mine["status"].as_str(), his["status"].as_str()), (Some("completed"), Some("completed")));
    assert_eq!(his["text"], "hello", "Bob's run did not see Alice's history: {his}");
    let run = mine["run_id"].as_str().unwrap();
    assert_eq!(get(s.base, &format!("/v1/runs/{run}"), &bob()).await.status, 404);
    let bobs: Vec<Value> = get(s.base, "/v1/runs", &bob()).await.json()["runs"].as_array().unwrap().clone();
    assert_eq!(bobs.len(), 1, "{bobs:?}");
}

/// The test model, answering only once the gate opens.
struct Gated {
    gate: Arc<tokio::sync::Semaphore>,
    model: agents_runtime::provider::scripted::RuleProvider,
}

impl Provider for Gated {
    fn name(&self) -> &str {
        "scripted"
    }
    fn model(&self) -> &str {
        "gated"
    }
    fn is_paid(&self) -> bool {
        false
    }
    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
        tokens: &'a dyn TokenSink,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move {
            drop(self.gate.acquire().await);
            self.model.chat(request, tokens).await
        })
    }
}

/// A service whose model answers once the gate it returns opens.
async fn gated() -> (common::Served, Arc<tokio::sync::Semaphore>) {
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let audit = Arc::new(MemorySink::new());
    let model = Gated { gate: gate.clone(), model: common::test_model() };
    let runtime = Runtime::builder(audit.clone(), Arc::new(model)).roles(common::roles()).build();
    let s = serve_with(Arc::new(DevAuthenticator::enabled()), ServiceLimits::default(), Some((audit, runtime))).await;
    (s, gate)
}

#[tokio::test]
async fn past_the_bound_the_start_answers_as_usual_and_the_run_goes_on() {
    let (s, gate) = gated().await;
    let r = start_waiting(s.base, &alice(), "wait=1", &body("late", "lookup the keyboard")).await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert!(!r.headers.contains_key("preference-applied"), "{}", r.head);
    let started = r.json();
    let run = started["run_id"].as_str().unwrap();
    assert_eq!(started["events"], format!("/v1/runs/{run}/events"), "{started}");
    assert!(started["status"].is_null(), "{started}");
    assert_eq!(get(s.base, &format!("/v1/runs/{run}"), &alice()).await.json()["status"], "running");
    gate.add_permits(1_000);
    let events = open(s.base, run, &alice(), None).await.rest().await;
    assert!(events.iter().any(|e| e.event == "done"), "{events:?}");
    assert_eq!(ended(s.base, &alice(), run).await["text"], "done: 1 call(s)");
}

#[tokio::test]
async fn a_client_gone_mid_wait_leaves_the_run_to_end() {
    let (s, gate) = gated().await;
    let base = s.base;
    let waiting =
        tokio::spawn(
            async move { start_waiting(base, &alice(), "wait=15", &body("gone", "lookup the keyboard")).await },
        );
    // The run started and its starter waits (the model is held at the gate).
    let run = loop {
        let runs = get(s.base, "/v1/runs", &alice()).await.json();
        if let Some(id) = runs["runs"][0]["run_id"].as_str() {
            break id.to_owned();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert!(!waiting.is_finished());
    // The client goes away: its request, connection and wait are dropped.
    waiting.abort();
    assert!(waiting.await.unwrap_err().is_cancelled());
    gate.add_permits(1_000);
    let done = ended(s.base, &alice(), &run).await;
    assert_eq!(
        (done["status"].as_str(), done["text"].as_str()),
        (Some("completed"), Some("done: 1 call(s)")),
        "{done}"
    );
    let events = open(s.base, &run, &alice(), None).await.rest().await;
    assert!(events.iter().any(|e| e.event == "tool_result") && events.iter().any(|e| e.event == "done"), "{events:?}");
    let chain = verify_jsonl_bytes(s.audit.to_jsonl().as_bytes(), None);
    assert!(chain.is_ok(), "{chain:?}");
    assert!(
        s.audit.records().iter().any(|r| *r.run_id == *run && r.status == agents_runtime::audit::AuditStatus::Executed)
    );
}
