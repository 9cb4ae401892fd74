//! A composite's run tree outlives the service node that ran it: the tree's nested node proposes
//! an action, the node is killed (none of its tasks runs again, none is dropped, its run slots
//! are no longer renewed), and another service node over the same store lists the proposal,
//! takes the person's decision and, in its upkeep, settles it exactly once and closes the tree's
//! root run, the audit chain verifying. On SQLite (one file, one node at a time) that node is the
//! service started again on the same files; on PostgreSQL (one database, several nodes) it is a
//! second node, up beside the first since before the tree started.

use crate::common::postgres::cluster;
use crate::common::{Desk, alice, audrey, executed, get, listen, perms, post, roles};
use agents_runtime::Runtime;
use agents_runtime::audit::{AuditSink, SqliteSink};
use agents_runtime::provider::ChatRequest;
use agents_runtime::provider::scripted::{RuleProvider, reply, tool_call, tool_outcomes};
use agents_runtime::store::{Store, StoreAuditSink};
use agents_runtime::{agent, composite, tool};
use agents_service::{AuditReader, DevAuthenticator, Service, ServiceLimits, SqliteReader, StoreReader};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::path::PathBuf;
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

/// Where the service nodes keep their state and their audit log.
#[derive(Clone)]
enum Place {
    /// A directory with a SQLite state store and a SQLite audit log: one node at a time.
    Sqlite(PathBuf),
    /// A PostgreSQL database (its connection string) holding the state and the audit stream
    /// every node appends to: several nodes at once.
    Postgres(String),
}

impl Place {
    /// Whether a second node may run over it while the first does.
    fn shared(&self) -> bool {
        matches!(self, Place::Postgres(_))
    }

    /// A node's state store, audit sink and audit reader, opened on the current tokio runtime
    /// (their tasks are that runtime's, and stop with it).
    async fn open(&self) -> (Arc<dyn Store>, Arc<dyn AuditSink>, Arc<dyn AuditReader>) {
        match self {
            Place::Sqlite(dir) => {
                let store = agents_store::SqliteStore::open(dir.join("state.db")).expect("the state store opens");
                let sink = SqliteSink::open(dir.join("audit.db")).expect("the audit log opens");
                (Arc::new(store), Arc::new(sink), Arc::new(SqliteReader::new(dir.join("audit.db"))))
            }
            Place::Postgres(url) => {
                let store: Arc<dyn Store> =
                    Arc::new(agents_store::PostgresStore::connect(url, 8).await.expect("the state store connects"));
                let sink = StoreAuditSink::new(store.clone(), AUDIT_STREAM);
                let reader = StoreReader::new(store.clone(), AUDIT_STREAM);
                (store, Arc::new(sink), Arc::new(reader))
            }
        }
    }
}

/// The audit stream every PostgreSQL node appends to.
const AUDIT_STREAM: &str = "service";

/// One service node: the composite on the store and audit log of `place`, its upkeep every
/// 50 ms, run slots lapsing 300 ms after their last renewal.
async fn service_node(place: &Place) -> SocketAddr {
    let (store, sink, reader) = place.open().await;
    let runtime = Runtime::builder(sink.clone(), Arc::new(model()))
        .roles(roles())
        .server_key([7; 32])
        .store(store)
        .run_slot_lease(Duration::from_millis(300))
        .settle_lease(Duration::from_millis(300))
        .build();
    let mut limits = ServiceLimits::default();
    limits.maintenance_every = Some(Duration::from_millis(50));
    let service = Service::builder(Arc::new(DevAuthenticator::enabled()), sink, reader)
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
    let mut listed = Value::Null;
    for _ in 0..400 {
        listed = get(base, "/v1/decisions", &alice()).await.json();
        // The store lists the proposal as soon as it is stored; its node's path once the
        // service has read the node's event.
        if let Some(d) = listed["decisions"].as_array().unwrap().first()
            && !d["node"].is_null()
        {
            assert_eq!(d["node"], format!("{FLOW}/inner-desk/desk"), "{d}");
            return (tree, d["call_id"].as_str().unwrap().to_owned());
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the nested node's proposal was never listed with its node's path: {listed}");
}

/// The tree started at one node, that node killed, and the decision taken at another over the
/// same `place`, whose upkeep settles it: that node's address.
async fn a_killed_trees_nested_decision_is_settled_at_another_node(place: Place, session: &'static str) -> SocketAddr {
    // Where the store allows it, the node that decides is up beside the one that runs the tree.
    let beside = if place.shared() { Some(service_node(&place).await) } else { None };
    // The first process: its own tokio runtime, with one worker thread.
    let first = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let at = place.clone();
    first.spawn(async move {
        let base = service_node(&at).await;
        let _ = tx.send(start_and_wait(base, session).await);
        std::future::pending::<()>().await
    });
    let (tree, call) = rx.await.expect("the first process started the tree");
    // Killed: its one worker thread blocked for good, so none of its tasks runs again (its run
    // slot is never renewed, its connections are never read) and, as after `kill -9`, no drop
    // guard writes anything: the runtime is never dropped.
    first.spawn(async {
        loop {
            std::thread::park();
        }
    });
    std::mem::forget(first);

    // The other node (else the service restarted on the same store): the proposal is listed and
    // decided there.
    let base = match beside {
        Some(base) => base,
        None => service_node(&place).await,
    };
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
    base
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_service_settles_a_killed_trees_nested_decision_and_closes_its_root() {
    let dir = tempfile::tempdir().unwrap();
    a_killed_trees_nested_decision_is_settled_at_another_node(Place::Sqlite(dir.path().to_owned()), "tree-killed-1")
        .await;
}

/// PostgreSQL in a throwaway cluster: the test fails, saying what to install, without it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_postgresql_node_settles_a_killed_trees_nested_decision_and_closes_its_root() {
    let cluster = cluster();
    let url = cluster.create_database("composite_resume").await.unwrap_or_else(|e| panic!("{e}"));
    let base =
        a_killed_trees_nested_decision_is_settled_at_another_node(Place::Postgres(url.clone()), "tree-killed-pg").await;
    // The verdict read through the nodes is the chain's: a record edited in the database (its
    // append-only trigger disabled, as the table's owner can) fails it.
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    client.batch_execute("ALTER TABLE agents_audit DISABLE TRIGGER agents_audit_append_only").await.unwrap();
    let edit = "UPDATE agents_audit SET line = replace(line, '\"proposed\"', '\"confirmed\"') \
                WHERE strpos(line, '\"status\":\"proposed\"') > 0";
    assert_eq!(client.execute(edit, &[]).await.unwrap(), 1, "the proposal's record is edited");
    let v = get(base, "/v1/audit/verify", &audrey()).await.json();
    assert_eq!(v["ok"], false, "an edited record is found: {v}");
}
