//! A composite's run tree outlives the service that ran it: the tree's nested node proposes an
//! action, the service is killed (none of its tasks runs again, none is dropped, its run slots
//! are no longer renewed), and a service started again on the same SQLite store lists the proposal, takes
//! the person's decision and, in its upkeep, settles it exactly once and closes the tree's
//! root run, the audit chain verifying.

use crate::common::{Desk, alice, audrey, executed, get, listen, perms, post, roles};
use agents_runtime::Runtime;
use agents_runtime::audit::SqliteSink;
use agents_runtime::provider::ChatRequest;
use agents_runtime::provider::scripted::{RuleProvider, reply, tool_call, tool_outcomes};
use agents_runtime::{agent, composite, tool};
use agents_service::{DevAuthenticator, Service, ServiceLimits, SqliteReader};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Reads the catalogue.
#[tool(permission = perms::items::read)]
async fn read_shelf() -> Result<String, String> {
    Ok("keyboards".into())
}

agent! {
    /// Restates the person's request, changing nothing.
    pub struct Restate;
    tools: [read_shelf],
}

composite! {
    /// The request restated, then the desk acts on it.
    pub struct InnerDesk: String -> String = then(Restate, Desk);
}

composite! {
    /// The request restated once more, then the inner flow: the desk's node is two levels down.
    pub struct OuterDesk: String -> String = then(Restate, InnerDesk);
}

const FLOW: &str = <OuterDesk as agents_runtime::agents_core::compose::Composite>::GRAPH.name;

fn model() -> RuleProvider {
    RuleProvider::new()
        .when(|req: &ChatRequest| {
            (!req.tools.iter().any(|t| t.name == "submit_item")).then(|| reply("The person asks for a keyboard."))
        })
        .when(|req| tool_outcomes(req).is_empty().then(|| tool_call("submit_item", r#"{"item": "a keyboard"}"#)))
        .fallback("done")
}

/// One service process: the composite on the SQLite store and audit log in `dir`, its upkeep
/// every 50 ms, run slots lapsing 300 ms after their last renewal.
async fn service_node(dir: &Path) -> SocketAddr {
    let store = agents_store::SqliteStore::open(dir.join("state.db")).expect("the state store opens");
    let sink = Arc::new(SqliteSink::open(dir.join("audit.db")).expect("the audit log opens"));
    let runtime = Runtime::builder(sink.clone(), Arc::new(model()))
        .roles(roles())
        .server_key([7; 32])
        .store(Arc::new(store))
        .run_slot_lease(Duration::from_millis(300))
        .settle_lease(Duration::from_millis(300))
        .build();
    let mut limits = ServiceLimits::default();
    limits.maintenance_every = Some(Duration::from_millis(50));
    let service = Service::builder(
        Arc::new(DevAuthenticator::enabled()),
        sink,
        Arc::new(SqliteReader::new(dir.join("audit.db"))),
    )
    .composite::<OuterDesk>(runtime)
    .limits(limits)
    .build();
    let base = listen(&service).await;
    // The service lives as long as the process (its tokio runtime) does.
    tokio::spawn(async move {
        let _service = service;
        std::future::pending::<()>().await
    });
    base
}

/// The statuses of the records `query` selects, read back through the service.
async fn statuses(base: SocketAddr, query: &str) -> Vec<Value> {
    let q = get(base, &format!("/v1/audit?{query}"), &audrey()).await.json();
    q["records"].as_array().unwrap().iter().map(|r| r["status"].clone()).collect()
}

/// Starts the tree in a first service process and waits for its nested proposal: the tree's
/// run id and the proposal's call id.
async fn start_and_wait(base: SocketAddr, session: &str) -> (String, String) {
    let body = json!({"agent": FLOW, "input": "I need a keyboard", "session_id": session}).to_string();
    let r = post(base, "/v1/runs", &alice(), &body).await;
    assert_eq!(r.status, 201, "{}", r.body);
    let tree = r.json()["run_id"].as_str().unwrap().to_owned();
    for _ in 0..400 {
        let listed = get(base, "/v1/decisions", &alice()).await.json();
        if let Some(d) = listed["decisions"].as_array().unwrap().first() {
            assert_eq!(d["node"], format!("{FLOW}/inner-desk/desk"), "{d}");
            return (tree, d["call_id"].as_str().unwrap().to_owned());
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the nested node never proposed its action");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_service_settles_a_killed_trees_nested_decision_and_closes_its_root() {
    let dir = tempfile::tempdir().unwrap();
    let session = "tree-killed-1";
    // The first process: its own tokio runtime, with one worker thread.
    let first = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let path = dir.path().to_owned();
    let (tx, rx) = tokio::sync::oneshot::channel();
    first.spawn(async move {
        let base = service_node(&path).await;
        let _ = tx.send(start_and_wait(base, session).await);
        std::future::pending::<()>().await
    });
    let (tree, call) = rx.await.expect("the first process started the tree");
    // Killed: its one worker thread blocked for good, so none of its tasks runs again (its run
    // slot is never renewed) and, as after `kill -9`, no drop guard writes anything: the
    // runtime is never dropped.
    first.spawn(async {
        loop {
            std::thread::park();
        }
    });
    std::mem::forget(first);

    // The service restarted on the same store: the proposal is listed and decided there.
    let base = service_node(dir.path()).await;
    let listed = get(base, "/v1/decisions", &alice()).await.json();
    assert!(listed["decisions"].as_array().unwrap().iter().any(|d| d["call_id"] == call.as_str()), "{listed}");
    let r = post(base, &format!("/v1/decisions/{call}"), &alice(), r#"{"verdict": "approve"}"#).await;
    assert_eq!(r.status, 200, "{}", r.body);

    // Its upkeep settles the node's proposal and closes the tree, with no application code.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while statuses(base, &format!("run={tree}")).await.len() < 2 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the upkeep never closed the killed tree: call {:?}, tree {:?}",
            statuses(base, &format!("call={call}")).await,
            statuses(base, &format!("run={tree}")).await
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // More rounds write nothing more.
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(
        statuses(base, &format!("call={call}")).await,
        [json!("proposed"), json!("confirmed"), json!("executed")],
        "exactly one final record"
    );
    assert_eq!(executed(session), 1, "the approved action ran once");
    assert_eq!(statuses(base, &format!("run={tree}")).await, [json!("run_started"), json!("run_finished")]);
    let v = get(base, "/v1/audit/verify", &audrey()).await.json();
    assert_eq!(v["ok"], true, "the chain verifies after the kill: {v}");
}
