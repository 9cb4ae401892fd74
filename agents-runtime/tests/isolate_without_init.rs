//! A process that did not call `isolate::init()` refuses its isolated tools: the call fails
//! with a clear error, audited, and nothing runs (no worker is started, so the application's
//! own `main` is never run in its place).

use agents_runtime::audit::{AuditStatus, MemorySink};
use agents_runtime::provider::ScriptedProvider;
use agents_runtime::{Principal, RoleMap, Runtime, agent, tool};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

static RAN: AtomicUsize = AtomicUsize::new(0);

/// Counts its runs.
#[tool(permission = public, isolated)]
async fn counted() -> Result<usize, String> {
    Ok(RAN.fetch_add(1, Ordering::SeqCst))
}

/// Counts its runs, in-process.
#[tool(permission = public)]
async fn counted_in_process() -> Result<usize, String> {
    Ok(RAN.fetch_add(1, Ordering::SeqCst))
}

agent! {
    /// Counts.
    pub struct Counter;
    tools: [counted, counted_in_process],
}

#[tokio::test]
async fn an_isolated_tool_is_refused_without_init_and_nothing_runs() {
    assert!(agents_runtime::isolate::settings().is_none());
    let audit = Arc::new(MemorySink::new());
    let rt = Runtime::builder(audit.clone(), Arc::new(ScriptedProvider::new(vec![])))
        .roles(RoleMap::new().role("analyst", Vec::<&str>::new()))
        .build();
    let session = rt.direct::<Counter>(Principal::new("u1", "org1", "analyst"), "s", None).await.unwrap();
    let r = session.call("c1", "counted", "{}").await;
    assert!(r.is_error);
    let text = r.content.to_string();
    assert!(text.contains("was refused and nothing ran") && text.contains("isolate::init()"), "{text}");
    assert_eq!(RAN.load(Ordering::SeqCst), 0);
    let records: Vec<_> = audit.records().into_iter().filter(|r| r.call_id.as_deref() == Some("c1")).collect();
    let statuses: Vec<_> = records.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [AuditStatus::Proposed, AuditStatus::Notice, AuditStatus::Failed]);
    assert!(records[1].reason.as_deref().unwrap().starts_with("isolated: refused, nothing ran"));
    // The same body, not isolated, runs in-process.
    let r = session.call("c2", "counted_in_process", "{}").await;
    assert!(!r.is_error, "{:?}", r.content);
    assert_eq!(RAN.load(Ordering::SeqCst), 1);
}
