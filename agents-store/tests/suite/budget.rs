//! The budget in the state store: two runtimes ("nodes") on one SQLite file, and on one real
//! PostgreSQL, run paid calls for one principal at once; the month's spend ends at or above the
//! cap and at most one call per concurrent run beyond it, every hold is settled, and the
//! organisation's cap binds its users together. Bad amounts and caps change nothing.

use agents_runtime::audit::MemorySink;
use agents_runtime::budget::{Admission, BudgetStore, CapUsage};
use agents_runtime::provider::scripted::tool_call;
use agents_runtime::provider::{ChatRequest, ChatResponse, Provider, ProviderError, TokenSink};
use agents_runtime::{Principal, RoleMap, Runtime, agent, permissions, tool};
use agents_store::postgres::TempCluster;
use agents_store::{PostgresStore, SqliteStore};
use futures::future::BoxFuture;
use std::sync::Arc;

permissions! {
    pub mod perms { stock.read }
}

/// Counts the stock.
#[tool(permission = perms::stock::read)]
async fn count_stock() -> Result<u32, String> {
    Ok(7)
}

agent! {
    /// Counts stock, again and again.
    pub struct Counter;
    tools: [count_stock],
}

/// A paid model whose every answer costs `CALL` USD and asks for another tool call, after
/// yielding a few times so that the calls of concurrent runs are in flight together.
struct Paid;

const CALL: f64 = 0.03;
const CAP: f64 = 0.10;
/// Runs per node; two nodes.
const RUNS_PER_NODE: usize = 3;

impl Provider for Paid {
    fn name(&self) -> &str {
        "paid"
    }
    fn model(&self) -> &str {
        "paid"
    }
    fn is_paid(&self) -> bool {
        true
    }
    fn chat<'a>(
        &'a self,
        _: &'a ChatRequest,
        _: &'a dyn TokenSink,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move {
            for _ in 0..20 {
                tokio::task::yield_now().await;
            }
            let mut r = tool_call("count_stock", "{}");
            r.usage.cost_usd = CALL;
            Ok(r)
        })
    }
}

fn me() -> Principal {
    Principal::new("u1", "org1", "clerk")
}

fn node(budget: Arc<dyn BudgetStore>) -> Runtime {
    Runtime::builder(Arc::new(MemorySink::new()), Arc::new(Paid))
        .roles(RoleMap::new().role("clerk", ["stock.read"]))
        .budget(budget)
        .build()
}

/// Runs `RUNS_PER_NODE` runs on each of two nodes at once, each wanting many paid calls, until
/// the budget stops them all.
async fn spend_on_two_nodes(a: Arc<dyn BudgetStore>, b: Arc<dyn BudgetStore>, prefix: &str) {
    let (node_a, node_b) = (node(a), node(b));
    let mut runs = Vec::new();
    for i in 0..RUNS_PER_NODE {
        runs.push(node_a.start::<Counter>(me(), &format!("{prefix}-a-{i}"), "count".into()).unwrap());
        runs.push(node_b.start::<Counter>(me(), &format!("{prefix}-b-{i}"), "count".into()).unwrap());
    }
    for run in runs {
        let _ = run.wait().await;
    }
}

/// The bound of the guarantee: at least the cap (the runs used it), at most one call per
/// concurrent run beyond it, nothing held.
fn assert_within_the_bound(spend: f64, held: f64) {
    let runs = 2 * RUNS_PER_NODE;
    assert!(spend >= CAP - 1e-9, "the runs used the budget: {spend}");
    assert!(spend <= CAP + runs as f64 * CALL + 1e-9, "spent {spend} USD: more than the cap {CAP} plus {runs} calls");
    assert_eq!(held, 0.0, "every reservation was settled");
}

/// The usage a store reports for threshold events: each cap set, with the spend against it.
async fn reports_usage(store: &dyn BudgetStore, spend: f64) {
    let usage = store.usage("org1", "u1").await.unwrap().expect("a durable store says its usage");
    assert_eq!(usage.user, Some(CapUsage { spent_usd: spend, cap_usd: CAP }));
    assert_eq!(usage.organisation, Some(CapUsage { spent_usd: spend, cap_usd: spend }));
    let none = store.usage("org3", "u3").await.unwrap().unwrap();
    assert_eq!((none.user, none.organisation), (None, None), "no cap set, nothing to cross");
}

async fn checks_amounts(store: &dyn BudgetStore) {
    for bad in [-1.0, f64::NAN, f64::INFINITY] {
        assert!(store.record("org9", "u9", bad).await.is_err());
        assert!(store.reserve("org9", "u9", bad).await.is_err());
    }
    assert!(store.reserve("", "u9", 0.0).await.is_err(), "an account needs an organisation");
    assert!(store.reserve("org9", "", 0.0).await.is_err(), "and a user");
    assert_eq!(store.remaining("org9", "u9").await.unwrap(), f64::INFINITY, "no cap, and nothing changed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_on_one_sqlite_file_share_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let (a, b) = (SqliteStore::open(&path).unwrap(), SqliteStore::open(&path).unwrap());
    for bad in [-1.0, f64::NAN] {
        assert!(a.set_budget_cap("org1", Some("u1"), bad).await.is_err(), "a cap of {bad} is refused");
    }
    a.set_budget_cap("org1", Some("u1"), CAP).await.unwrap();
    checks_amounts(&a).await;
    spend_on_two_nodes(Arc::new(a.clone()), Arc::new(b.clone()), "sqlite").await;
    let (spend, held) = b.budget_account("org1", Some("u1")).await.unwrap();
    assert_within_the_bound(spend, held);
    assert_eq!(b.budget_account("org1", None).await.unwrap(), (spend, 0.0), "the organisation's account agrees");
    assert!(matches!(b.reserve("org1", "u1", 0.0).await.unwrap(), Admission::Refused { .. }));
    // The organisation's cap binds another user of it, on the other node.
    a.set_budget_cap("org1", None, spend).await.unwrap();
    assert!(matches!(b.reserve("org1", "u2", 0.0).await.unwrap(), Admission::Refused { .. }));
    assert!(matches!(b.reserve("org2", "u2", 0.0).await.unwrap(), Admission::Granted(_)));
    reports_usage(&b, spend).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_on_one_postgres_share_the_cap() {
    let cluster = TempCluster::start().unwrap_or_else(|e| panic!("{e}"));
    let url = cluster.create_database("budget").await.unwrap_or_else(|e| panic!("{e}"));
    let a = PostgresStore::connect(&url, 8).await.unwrap();
    let b = PostgresStore::connect(&url, 8).await.unwrap();
    assert!(a.set_budget_cap("org1", Some("u1"), f64::NAN).await.is_err());
    a.set_budget_cap("org1", Some("u1"), CAP).await.unwrap();
    checks_amounts(&a).await;
    spend_on_two_nodes(Arc::new(a.clone()), Arc::new(b.clone()), "pg").await;
    let (spend, held) = b.budget_account("org1", Some("u1")).await.unwrap();
    assert_within_the_bound(spend, held);
    assert_eq!(b.budget_account("org1", None).await.unwrap(), (spend, 0.0), "the organisation's account agrees");
    assert!(matches!(b.reserve("org1", "u1", 0.0).await.unwrap(), Admission::Refused { .. }));
    a.set_budget_cap("org1", None, spend).await.unwrap();
    assert!(matches!(b.reserve("org1", "u2", 0.0).await.unwrap(), Admission::Refused { .. }));
    assert!(matches!(b.reserve("org2", "u2", 0.0).await.unwrap(), Admission::Granted(_)));
    reports_usage(&b, spend).await;
}
