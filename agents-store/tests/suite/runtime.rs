//! The runtime on a durable store: confirmation tokens and per-user run slots go through it,
//! so the cap of concurrent runs holds across two runtimes ("nodes") sharing one database.

use agents_runtime::RunResultExt as _;
use agents_runtime::audit::MemorySink;
use agents_runtime::events::Event;
use agents_runtime::provider::ScriptedProvider;
use agents_runtime::provider::scripted::{reply, tool_call};
use agents_runtime::store::{SlotOwner, Store};
use agents_runtime::{
    Principal, RoleMap, RunHandle, RunStatus, Runtime, ToolContext, Verdict, agent, permissions, tool,
};
use agents_store::postgres::TempCluster;
use agents_store::{PostgresStore, SqliteStore};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::Mutex;

permissions! {
    pub mod perms { leave.write }
}

/// Executions of the action, by session.
static EXECUTED: Mutex<BTreeMap<String, usize>> = Mutex::new(BTreeMap::new());

fn executed(session: &str) -> usize {
    EXECUTED.lock().unwrap().get(session).copied().unwrap_or(0)
}

/// Submits a leave request.
///
/// # Arguments
///
/// * `days` - the number of working days of leave asked for
#[tool(permission = perms::leave::write, mutating, title = "Submit leave")]
async fn submit_leave(cx: &ToolContext<'_>, days: u32) -> Result<String, String> {
    *EXECUTED.lock().unwrap().entry(cx.session_id().to_owned()).or_default() += 1;
    Ok(format!("{days} days submitted"))
}

agent! {
    /// HR assistant.
    pub struct Hr;
    tools: [submit_leave],
}

fn me() -> Principal {
    Principal::new("ann", "org-hr", "employee")
}

fn runtime(store: Arc<dyn Store>, script: Vec<agents_runtime::provider::ChatResponse>) -> Runtime {
    Runtime::builder(Arc::new(MemorySink::new()), Arc::new(ScriptedProvider::new(script)))
        .roles(RoleMap::new().role("employee", ["leave.write"]))
        .store(store)
        .build()
}

/// The call waiting for a decision, or `None` when the run ended first.
async fn confirm_required<O>(run: &mut RunHandle<O>) -> Option<String> {
    while let Some(e) = run.events().recv().await {
        match e {
            Event::ConfirmRequired { call_id, .. } => return Some(call_id),
            Event::Done { .. } => return None,
            _ => {}
        }
    }
    None
}

/// An approved action runs once, through a token the store minted and redeemed.
async fn approved_action_uses_the_stores_token(store: Arc<dyn Store>, session: &str) {
    let rt = runtime(store.clone(), vec![tool_call("submit_leave", r#"{"days": 3}"#), reply("done")]);
    let mut run = rt.start::<Hr>(me(), session, "three days off".into()).unwrap();
    let call_id = confirm_required(&mut run).await.expect("the action waits for a decision");
    rt.decide(&call_id, &me(), Verdict::Approve).unwrap();
    let outcome = run.wait().await;
    assert_eq!(outcome.status(), RunStatus::Completed, "{:?}", outcome.error_text());
    assert_eq!(executed(session), 1);
    // The store holds the token the approval minted, used up.
    assert_eq!(store.prune_tokens().await.unwrap(), 1, "one token, redeemed, was kept in the store");
}

/// Two runtimes on one store, four runs of one user that wait for a decision: three hold a
/// slot, the fourth is refused. Stopping them gives the slots back.
async fn the_cap_holds_across_two_runtimes(a: Arc<dyn Store>, b: Arc<dyn Store>, prefix: &str) {
    let script = || vec![tool_call("submit_leave", r#"{"days": 1}"#); 4];
    let (node_a, node_b) = (runtime(a.clone(), script()), runtime(b, script()));
    let mut runs = Vec::new();
    for i in 0..4 {
        let node = if i % 2 == 0 { &node_a } else { &node_b };
        runs.push(node.start::<Hr>(me(), &format!("{prefix}-cap-{i}"), "a day off".into()).unwrap());
    }
    let mut waiting = Vec::new();
    let mut refused = 0;
    for mut run in runs {
        if confirm_required(&mut run).await.is_some() {
            waiting.push(run);
        } else {
            let outcome = run.wait().await;
            assert_eq!(outcome.status(), RunStatus::Failed);
            assert!(outcome.error_text().as_deref().unwrap_or_default().contains("3 runs in progress"), "{outcome:?}");
            refused += 1;
        }
    }
    assert_eq!((waiting.len(), refused), (3, 1), "three runs hold a slot, the fourth is refused");
    assert!((0..4).all(|i| executed(&format!("{prefix}-cap-{i}")) == 0), "nothing was approved");
    let owner = SlotOwner { org_id: "org-hr".into(), user_id: "ann".into() };
    assert_eq!(a.active_slots(&owner).await.unwrap(), 3);
    for run in waiting {
        run.stop();
        assert_eq!(run.wait().await.status(), RunStatus::Cancelled);
    }
    // Released in the background as each run's task ended.
    for _ in 0..200 {
        if a.active_slots(&owner).await.unwrap() == 0 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    panic!("the stopped runs' slots were not released");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runtime_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let a: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).unwrap());
    approved_action_uses_the_stores_token(a.clone(), "sqlite-leave").await;
    let b: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).unwrap());
    the_cap_holds_across_two_runtimes(a, b, "sqlite").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runtime_on_postgres() {
    let cluster = TempCluster::start().unwrap_or_else(|e| panic!("{e}"));
    let url = cluster.create_database("runtime").await.unwrap_or_else(|e| panic!("{e}"));
    let a: Arc<dyn Store> = Arc::new(PostgresStore::connect(&url, 8).await.unwrap());
    approved_action_uses_the_stores_token(a.clone(), "pg-leave").await;
    let b: Arc<dyn Store> = Arc::new(PostgresStore::connect(&url, 8).await.unwrap());
    the_cap_holds_across_two_runtimes(a, b, "pg").await;
}
