//! The seed's events beyond the timeline: `budget_threshold` (once per crossing of a
//! configured fraction of the user's or the organisation's cap, with its `notice` record) and
//! `error_occurred` (typed by where the error happened, naming the tool).

use crate::run_common;

use agents_runtime::audit::{AuditStatus, MemorySink};
use agents_runtime::budget::{InMemoryBudget, InvalidThreshold};
use agents_runtime::events::{BudgetScope, ErrorKind, Event};
use agents_runtime::provider::scripted::{reply, tool_call};
use agents_runtime::provider::{ChatResponse, ScriptedProvider};
use agents_runtime::{Principal, RoleMap, Runtime, agent, permissions, tool};
use run_common::*;
use std::sync::Arc;

permissions! {
    pub mod perms { ledger.read }
}

/// Reads the ledger.
#[tool(permission = perms::ledger::read)]
async fn read_ledger() -> Result<String, String> {
    Ok("balanced".into())
}

/// Reads the archive, which is offline.
#[tool(permission = perms::ledger::read)]
async fn read_archive() -> Result<String, String> {
    Err("the archive is offline; try again tomorrow".into())
}

agent! {
    /// Finance assistant.
    pub struct Books;
    tools: [read_ledger, read_archive],
}

fn me() -> Principal {
    Principal::new("fin-1", "bank", "clerk")
}

fn costing(mut r: ChatResponse, usd: f64) -> ChatResponse {
    r.usage.cost_usd = usd;
    r
}

fn builder(audit: Arc<MemorySink>, provider: ScriptedProvider) -> agents_runtime::RuntimeBuilder {
    Runtime::builder(audit, Arc::new(provider)).roles(RoleMap::new().role("clerk", ["ledger.read"]))
}

fn thresholds(events: &[Event]) -> Vec<(BudgetScope, f64, f64)> {
    let mut out = Vec::new();
    for e in events {
        if let Event::BudgetThreshold { scope, fraction, spent_usd, cap_usd, .. } = e {
            out.push((*scope, *fraction, (spent_usd / cap_usd * 100.0).round()));
        }
    }
    out
}

/// Four paid calls of 3 USD against a user cap of 10 and an organisation cap of 20.
fn four_calls() -> ScriptedProvider {
    ScriptedProvider::new([
        costing(tool_call("read_ledger", "{}"), 3.0),
        costing(tool_call("read_ledger", "{}"), 3.0),
        costing(tool_call("read_ledger", "{}"), 3.0),
        costing(reply("done"), 3.0),
    ])
    .with_paid(true)
}

#[tokio::test]
async fn each_fraction_of_each_cap_is_reported_once_by_the_call_that_crosses_it() {
    let audit = Arc::new(MemorySink::new());
    let budget = Arc::new(InMemoryBudget::new().with_user_cap("bank", "fin-1", 10.0).with_org_cap("bank", 20.0));
    let rt = builder(audit.clone(), four_calls()).budget(budget).build();
    let mut run = rt.start::<Books>(me(), "thr-1", "check the ledger".into()).unwrap();
    let events = events_until_done(&mut run).await;
    // User: 3, 6 (50 %), 9 (80 %), 12 (100 %); organisation: 12 of 20 (50 %).
    assert_eq!(
        thresholds(&events),
        [
            (BudgetScope::User, 0.5, 60.0),
            (BudgetScope::User, 0.8, 90.0),
            (BudgetScope::User, 1.0, 120.0),
            (BudgetScope::Organisation, 0.5, 60.0)
        ]
    );
    let notices: Vec<_> = with_status(&audit, AuditStatus::Notice)
        .into_iter()
        .filter(|r| r.reason.as_deref().is_some_and(|t| t.starts_with("budget threshold")))
        .collect();
    assert_eq!(notices.len(), 4, "each crossing is recorded: {notices:?}");
    let facts = notices[2].result.as_ref().and_then(|r| r.value()).unwrap();
    assert_eq!(facts["budget_threshold"]["scope"], "user");
    assert_eq!(facts["budget_threshold"]["fraction"], 1.0);
    assert_eq!(facts["budget_threshold"]["cap_usd"], 10.0);
}

#[tokio::test]
async fn thresholds_are_configurable_and_an_empty_list_reports_none() {
    let budget = || Arc::new(InMemoryBudget::new().with_user_cap("bank", "fin-1", 10.0));
    let audit = Arc::new(MemorySink::new());
    let rt = builder(audit.clone(), four_calls()).budget(budget()).budget_thresholds([0.25]).unwrap().build();
    let mut run = rt.start::<Books>(me(), "thr-2", "check the ledger".into()).unwrap();
    assert_eq!(thresholds(&events_until_done(&mut run).await), [(BudgetScope::User, 0.25, 30.0)]);

    let audit = Arc::new(MemorySink::new());
    let rt = builder(audit.clone(), four_calls()).budget(budget()).budget_thresholds([]).unwrap().build();
    let mut run = rt.start::<Books>(me(), "thr-3", "check the ledger".into()).unwrap();
    assert!(thresholds(&events_until_done(&mut run).await).is_empty());
}

#[test]
fn a_threshold_outside_a_cap_is_refused_naming_it() {
    for bad in [0.0, -0.5, 1.5, f64::NAN, f64::INFINITY] {
        let b = builder(Arc::new(MemorySink::new()), ScriptedProvider::new([]));
        let err = b.budget_thresholds([0.5, bad]).unwrap_err();
        assert!(err.0.to_bits() == bad.to_bits(), "{err:?}");
        assert!(err.to_string().contains("greater than 0 and at most 1"), "{err}");
    }
    let _: Result<_, InvalidThreshold> =
        builder(Arc::new(MemorySink::new()), ScriptedProvider::new([])).budget_thresholds([1.0]);
}

#[tokio::test]
async fn a_tool_that_fails_and_a_provider_that_fails_are_typed_errors() {
    let audit = Arc::new(MemorySink::new());
    // One tool call that fails, then the script runs out: the provider fails.
    let rt = builder(audit.clone(), ScriptedProvider::new([tool_call("read_archive", "{}")])).build();
    let mut run = rt.start::<Books>(me(), "err-1", "read the archive".into()).unwrap();
    let events = events_until_done(&mut run).await;
    let errors: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::ErrorOccurred { kind, tool, message, .. } => Some((*kind, tool.clone(), message.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert_eq!((errors[0].0, errors[0].1.as_deref()), (ErrorKind::Tool, Some("read_archive")));
    assert!(errors[0].2.contains("the archive is offline"), "{errors:?}");
    assert_eq!((errors[1].0, errors[1].1.as_deref()), (ErrorKind::Provider, None));
    // The JSON form the service streams.
    let json = serde_json::to_value(events.iter().find(|e| matches!(e, Event::ErrorOccurred { .. })).unwrap()).unwrap();
    assert_eq!((json["type"].as_str(), json["kind"].as_str()), (Some("error_occurred"), Some("tool")));
    assert_eq!(with_status(&audit, AuditStatus::Failed).len(), 1, "the evidence is the tool's failed record");
}
