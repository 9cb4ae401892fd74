//! A resumption settles every proposal it can, however many others wait: 150 conversational
//! proposals whose sessions still hold them for their users' answers (more than
//! `RESUME_BATCH`, the page a resumption reads at once), stored before one that was approved
//! through the decisions API after its turn ended. One pass of `Runtime::resume_orphaned`
//! carries the approved one out, exactly once, and leaves the waiting ones waiting. On the
//! in-memory store, SQLite and a real PostgreSQL.

use agents_runtime::provider::scripted::{reply, tool_call};
use agents_runtime::provider::{ChatResponse, ScriptedProvider};
use agents_runtime::run::RESUME_BATCH;
use agents_runtime::store::{MemoryStore, Store, StoreAuditSink};
use agents_runtime::{ConfirmMode, Limits, RunResultExt as _, RunStatus, Runtime, Verdict};
use agents_store::postgres::TempCluster;
use agents_store::testing::leave::{Hr, SERVER_KEY, employee, executions, roles};
use agents_store::{PostgresStore, SqliteStore};
use std::sync::Arc;
use std::time::Duration;

/// How many proposals wait for their users' answers.
const WAITING: usize = 150;

/// A conversational node whose confirmation window is one second.
fn node(store: Arc<dyn Store>, script: Vec<ChatResponse>) -> Runtime {
    Runtime::builder(Arc::new(StoreAuditSink::new(store.clone(), "audit")), Arc::new(ScriptedProvider::new(script)))
        .roles(roles())
        .server_key(SERVER_KEY)
        .confirm_mode(ConfirmMode::Conversational)
        .limits(Limits { confirm_timeout_secs: 1, ..Limits::default() })
        .store(store)
        .build()
}

fn session(prefix: &str, i: usize) -> String {
    format!("{prefix}-{i}-{}", uuid::Uuid::new_v4().simple())
}

async fn one_pass_settles_what_it_can(store: Arc<dyn Store>, prefix: &str) {
    assert!(WAITING > RESUME_BATCH as usize, "more waiting proposals than one page holds");
    let script = (0..=WAITING)
        .flat_map(|i| [tool_call("submit_leave", format!(r#"{{"days": {}}}"#, i % 20 + 1)), reply("Submit it?")])
        .collect();
    let a = node(store.clone(), script);
    let sessions: Vec<String> = (0..=WAITING).map(|i| session(prefix, i)).collect();
    for s in &sessions {
        let out = a.start::<Hr>(employee(), s, "leave please".into()).unwrap().wait().await;
        assert_eq!(out.status(), RunStatus::AwaitingConfirmation, "{:?}", out.error_text());
    }
    // The last one, stored after every waiting one, is approved through the decisions API.
    let b = node(store.clone(), vec![]);
    let listed = b.pending_decisions(&employee()).await.unwrap();
    let mine = |s: &String| listed.iter().find(|p| p.session_id.as_ref() == Some(s)).map(|p| p.call_id.clone());
    let approved = mine(&sessions[WAITING]).expect("listed");
    assert!(sessions[..WAITING].iter().all(|s| mine(s).is_some()), "every waiting proposal is listed");
    b.decide_async(&approved, &employee(), Verdict::Approve, None).await.unwrap();
    // Every waiting proposal is past its confirmation window: a resumption reads them all, and
    // leaves them to their sessions.
    tokio::time::sleep(Duration::from_millis(1200)).await;

    let resumed = b.resume_orphaned::<Hr>().await.unwrap();
    assert_eq!(resumed.len(), 1, "one pass carried out the approved proposal, and only it: {resumed:?}");
    assert_eq!(resumed[0].call_id, approved);
    assert_eq!(resumed[0].status, agents_runtime::audit::AuditStatus::Executed, "{resumed:?}");
    assert_eq!(executions(&sessions[WAITING]), 1, "executed once");
    assert!(sessions[..WAITING].iter().all(|s| executions(s) == 0), "nothing waiting ran");
    let still = b.pending_decisions(&employee()).await.unwrap();
    let waiting = sessions[..WAITING].iter().filter(|s| still.iter().any(|p| p.session_id.as_ref() == Some(*s)));
    assert_eq!(waiting.count(), WAITING, "the waiting proposals still wait");
    assert!(b.resume_orphaned::<Hr>().await.unwrap().is_empty(), "nothing more to do");
    store.verify_audit("audit").await.expect("the chain verifies");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_one_pass_settles_past_the_waiting() {
    one_pass_settles_what_it_can(Arc::new(MemoryStore::new()), "mem-fair").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_one_pass_settles_past_the_waiting() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(dir.path().join("state.db")).unwrap());
    one_pass_settles_what_it_can(store, "sqlite-fair").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_one_pass_settles_past_the_waiting() {
    let cluster = TempCluster::start().unwrap_or_else(|e| panic!("{e}"));
    let url = cluster.create_database("fairness").await.unwrap_or_else(|e| panic!("{e}"));
    let store = Arc::new(PostgresStore::connect(&url, 8).await.unwrap());
    one_pass_settles_what_it_can(store, "pg-fair").await;
}
