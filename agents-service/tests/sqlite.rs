//! The service on SQLite: the audit log read back through `SqliteReader`, and two service
//! nodes over one state store (a proposal made through node A is listed and decided through
//! node B, and runs once).

mod common;

use agents_runtime::Runtime;
use agents_runtime::audit::SqliteSink;
use agents_service::{DevAuthenticator, Service, ServiceLimits, SqliteReader};
use common::*;
use std::sync::Arc;

async fn node(dir: &std::path::Path, sink: Arc<SqliteSink>) -> (std::net::SocketAddr, Runtime) {
    let store = agents_store::SqliteStore::open(dir.join("state.db")).expect("the state store opens");
    let runtime = Runtime::builder(sink.clone(), Arc::new(test_model())).roles(roles()).store(Arc::new(store)).build();
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
