//! The service on SQLite: the audit log read back through `SqliteReader`, and two service
//! nodes over one state store (a proposal made through node A is listed and decided through
//! node B, and runs once).

use crate::common;

use agents_runtime::Runtime;
use agents_runtime::audit::SqliteSink;
use agents_service::{DevAuthenticator, Service, ServiceLimits, SqliteReader};
use common::*;
use std::sync::Arc;

async fn node(dir: &std::path::Path, sink: Arc<SqliteSink>) -> (std::net::SocketAddr, Runtime) {
    let store = agents_store::SqliteStore::open(dir.join("state.db")).expect("the state store opens");
    // Nodes that decide each other's proposals share the server key: an approval is sealed under
    // it, and the node that runs the call checks the seal.
    let runtime = Runtime::builder(sink.clone(), Arc::new(test_model()))
        .roles(roles())
        .server_key([9; 32])
        .store(Arc::new(store))
        .build();
    let service = Service::builder(
        Arc::new(DevAuthenticator::enabled()),
        sink,
        Arc::new(SqliteReader::new(dir.join("audit.db"))),
    )
    .agent::<Desk>(runtime.clone())
    .limits(ServiceLimits::default())
    .build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = listener.local_addr().unwrap();
    let router = service.router();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    (base, runtime)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proposal_made_through_one_node_is_listed_and_decided_through_another() {
    let dir = tempfile::tempdir().unwrap();
    let sink = Arc::new(SqliteSink::open(dir.path().join("audit.db")).unwrap());
    let (a, _rt_a) = node(dir.path(), sink.clone()).await;
    let (b, _rt_b) = node(dir.path(), sink.clone()).await;
    let run = start(a, &alice(), "nodes-1", "submit a request").await;
    let call = pending_call(a, &alice()).await;
    // Node B never saw the run, yet lists the proposal from the store, for Alice only.
    assert_eq!(pending_call(b, &alice()).await, call);
    assert!(get(b, "/v1/decisions", &bob()).await.json()["decisions"].as_array().unwrap().is_empty());
    let r = post(b, &format!("/v1/decisions/{call}"), &bob(), r#"{"verdict": "approve"}"#).await;
    assert_eq!((r.status, r.code().as_str()), (404, "not_found"));
    let r = post(b, &format!("/v1/decisions/{call}"), &alice(), r#"{"verdict": "approve"}"#).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(ended(a, &alice(), &run).await["status"], "completed");
    assert_eq!(executed("nodes-1"), 1);
    // The records, read back from SQLite through either node.
    let q = get(b, &format!("/v1/audit?call={call}"), &alice()).await.json();
    let statuses: Vec<&str> = q["records"].as_array().unwrap().iter().map(|r| r["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["proposed", "confirmed", "executed"]);
    let v = get(a, "/v1/audit/verify", &audrey()).await.json();
    assert_eq!(v["ok"], true, "{v}");
    // Node B's stream of the run is its durable records; Bob's attempt is audited there.
    let events = open(b, &run, &alice(), None).await.rest().await;
    assert_eq!(events.last().unwrap().json()["code"], "run_not_live");
    assert!(events.iter().any(|e| e.event == "record" && e.json()["status"] == "executed"));
    let q = get(a, "/v1/audit?status=denied&user=bob", &audrey()).await.json();
    assert_eq!(q["records"].as_array().unwrap().len(), 1, "{q}");
}

/// A proposal as a node that then died left it in the state store: its run's slot is gone.
fn orphaned(call_id: &str, session: &str) -> agents_runtime::store::ProposalRecord {
    agents_runtime::store::ProposalRecord {
        call_id: call_id.into(),
        run_id: format!("run-{call_id}"),
        session_id: session.into(),
        org_id: "acme".into(),
        user_id: "alice".into(),
        tool: "submit_item".into(),
        title: "Submit an item request".into(),
        args: serde_json::json!({"item": "chair"}),
        args_mac: "0".repeat(64),
        detail: serde_json::json!({
            "role": "employee",
            "agent": AGENT,
            "manifest_sha256": Desk::MANIFEST_SHA256,
            "risk": "medium",
            "proposed_at": "2026-01-01T00:00:00Z",
            "subject": null,
            "arguments": {"item": "chair"},
            "slot": format!("slot-of-a-dead-run-{call_id}"),
            "request_id": format!("req-{call_id}"),
        }),
        // Written without the server key: it can be rejected or end, never run.
        seal: String::new(),
    }
}

/// A service node whose upkeep runs every 50 ms, with a confirmation window of one second,
/// sessions idle after 200 ms and proposals kept 500 ms once over.
async fn upkeeping_node(dir: &std::path::Path, sink: Arc<SqliteSink>) -> std::net::SocketAddr {
    let store = agents_store::SqliteStore::open(dir.join("state.db")).expect("the state store opens");
    let limits = agents_runtime::Limits { confirm_timeout_secs: 1, ..agents_runtime::Limits::default() };
    let runtime = Runtime::builder(sink.clone(), Arc::new(test_model()))
        .roles(roles())
        .store(Arc::new(store))
        .limits(limits)
        .session_idle_timeout(std::time::Duration::from_millis(200))
        .proposal_retention(std::time::Duration::from_millis(500))
        .build();
    let mut limits = ServiceLimits::default();
    limits.maintenance_every = Some(std::time::Duration::from_millis(50));
    let service = Service::builder(
        Arc::new(DevAuthenticator::enabled()),
        sink,
        Arc::new(SqliteReader::new(dir.join("audit.db"))),
    )
    .agent::<Desk>(runtime)
    .limits(limits)
    .build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = listener.local_addr().unwrap();
    let router = service.router();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    base
}

/// The statuses and reasons of a call's records, read back through the service.
async fn records_through(base: std::net::SocketAddr, call: &str) -> Vec<(String, String)> {
    let q = get(base, &format!("/v1/audit?call={call}"), &alice()).await.json();
    q["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["status"].as_str().unwrap().to_owned(), r["reason"].as_str().unwrap_or_default().to_owned()))
        .collect()
}

/// The node that proposed two actions died. Alice rejects one through the service, with a
/// reason; nobody decides the other. Without application code, the service's upkeep (on two
/// nodes at once) gives each exactly one final record: `rejected` with her reason, and
/// `skipped` (timeout) once its window passed. The chain verifies. The same upkeep prunes the
/// store: the settled proposals after their retention, a stale session, a used-up token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_service_settles_the_proposals_of_a_node_that_died() {
    use agents_runtime::store::Store;
    let dir = tempfile::tempdir().unwrap();
    let sink = Arc::new(SqliteSink::open(dir.path().join("audit.db")).unwrap());
    let store = agents_store::SqliteStore::open(dir.path().join("state.db")).unwrap();
    store.put_proposal(&orphaned("call-rejected", "dead-1")).await.unwrap();
    store.put_proposal(&orphaned("call-undecided", "dead-1")).await.unwrap();
    let stale = agents_runtime::store::SessionRecord {
        session_id: "stale-1".into(),
        org_id: "acme".into(),
        user_id: "alice".into(),
        role: "clerk".into(),
        history: serde_json::json!([]),
        digest: serde_json::json!([]),
        pending: serde_json::Value::Null,
        version: 0,
    };
    store.save_session(&stale, std::time::Duration::from_secs(60)).await.unwrap();
    let grant = agents_runtime::store::TokenGrant {
        id: "used-up".into(),
        session_id: "stale-1".into(),
        tool: "submit_item".into(),
        args_mac: "0".repeat(64),
    };
    store.mint_token(&grant, std::time::Duration::from_secs(600)).await.unwrap();
    assert!(matches!(store.redeem_token("used-up").await.unwrap(), agents_runtime::store::Redeemed::Taken { .. }));
    let long = std::time::Duration::from_secs(3600);
    let a = upkeeping_node(dir.path(), sink.clone()).await;
    let b = upkeeping_node(dir.path(), sink.clone()).await;
    let body = r#"{"verdict": "reject", "reason": "wrong week"}"#;
    let r = post(b, "/v1/decisions/call-rejected", &alice(), body).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    while records_through(a, "call-rejected").await.is_empty() || records_through(a, "call-undecided").await.is_empty()
    {
        assert!(tokio::time::Instant::now() < deadline, "the upkeep never settled the dead node's proposals");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    // More rounds on both nodes write nothing more.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(
        records_through(a, "call-rejected").await,
        [("rejected".to_owned(), "the user declined: wrong week".to_owned())],
        "exactly one final record, with the reason given"
    );
    let undecided = records_through(b, "call-undecided").await;
    assert_eq!(undecided.len(), 1, "{undecided:?}");
    assert_eq!(undecided[0].0, "skipped");
    assert!(undecided[0].1.starts_with("timeout: "), "{undecided:?}");
    let r = post(a, "/v1/decisions/call-undecided", &alice(), r#"{"verdict": "approve"}"#).await;
    assert_eq!(r.status, 404, "an expired proposal is no longer decidable");
    let v = get(a, "/v1/audit/verify", &audrey()).await.json();
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(executed("dead-1"), 0);
    // Pruned by the upkeep: the proposals once over for longer than their retention, the
    // session idle past its timeout, the redeemed token.
    while store.proposal("call-rejected").await.unwrap().is_some()
        || store.proposal("call-undecided").await.unwrap().is_some()
    {
        assert!(tokio::time::Instant::now() < deadline, "the settled proposals were never pruned");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(store.load_session("stale-1", long).await.unwrap(), None, "the stale session was pruned");
    assert_eq!(store.prune_tokens().await.unwrap(), 0, "the used-up token was pruned already");
    assert_eq!(records_through(a, "call-rejected").await.len(), 1, "the record stays in the audit log");
}

/// A service node whose agent proposes in conversation (the user's next message answers),
/// with its upkeep every 50 ms when `upkeep`, and a confirmation window of one second.
async fn conversational_node(dir: &std::path::Path, sink: Arc<SqliteSink>, upkeep: bool) -> std::net::SocketAddr {
    let store = agents_store::SqliteStore::open(dir.join("state.db")).expect("the state store opens");
    let limits = agents_runtime::Limits { confirm_timeout_secs: 1, ..agents_runtime::Limits::default() };
    let runtime = Runtime::builder(sink.clone(), Arc::new(test_model()))
        .roles(roles())
        .store(Arc::new(store))
        .limits(limits)
        .confirm_mode(agents_runtime::ConfirmMode::Conversational)
        // Every node carries out what another proposed: they share the server key.
        .server_key([9; 32])
        .build();
    let mut limits = ServiceLimits::default();
    limits.maintenance_every = upkeep.then_some(std::time::Duration::from_millis(50));
    let service = Service::builder(
        Arc::new(DevAuthenticator::enabled()),
        sink,
        Arc::new(SqliteReader::new(dir.join("audit.db"))),
    )
    .agent::<Desk>(runtime)
    .limits(limits)
    .build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = listener.local_addr().unwrap();
    let router = service.router();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    base
}

/// A proposal made in conversation on node A (waiting for Alice's next message) is listed for
/// her through `GET /v1/decisions` by two service nodes started afterwards on the same files (a
/// restart), past its confirmation window (her session still holds it), and for nobody else;
/// approved through one of them, the upkeep of both carries it out exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversational_proposal_is_listed_after_a_restart_and_runs_once() {
    let dir = tempfile::tempdir().unwrap();
    let sink = Arc::new(SqliteSink::open(dir.path().join("audit.db")).unwrap());
    let a = conversational_node(dir.path(), sink.clone(), false).await;
    let run = start(a, &alice(), "conv-1", "submit a keyboard").await;
    assert_eq!(ended(a, &alice(), &run).await["status"], "awaiting_confirmation");
    let b = conversational_node(dir.path(), sink.clone(), true).await;
    let c = conversational_node(dir.path(), sink.clone(), true).await;
    let call = pending_call(b, &alice()).await;
    // Past the confirmation window, with both nodes' upkeep running: still waiting for her.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert_eq!(pending_call(c, &alice()).await, call);
    assert!(get(c, "/v1/decisions", &bob()).await.json()["decisions"].as_array().unwrap().is_empty());
    let r = post(c, &format!("/v1/decisions/{call}"), &alice(), r#"{"verdict": "approve"}"#).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    while executed("conv-1") == 0 {
        assert!(tokio::time::Instant::now() < deadline, "the approved proposal was never carried out");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(executed("conv-1"), 1, "exactly once");
    let statuses: Vec<String> = records_through(b, &call).await.into_iter().map(|(s, _)| s).collect();
    assert_eq!(statuses, ["proposed", "confirmed", "executed"]);
    assert!(get(b, "/v1/decisions", &alice()).await.json()["decisions"].as_array().unwrap().is_empty());
    let v = get(a, "/v1/audit/verify", &audrey()).await.json();
    assert_eq!(v["ok"], true, "{v}");
}
