//! The agent's capabilities equal the reviewed manifest, and a refund runs only once a person
//! approves it.

use agents_runtime::agents_core::baseline::assert_baseline;
use agents_runtime::audit::{AuditStatus, MemorySink};
use agents_runtime::events::Event;
use agents_runtime::provider::ScriptedProvider;
use agents_runtime::provider::scripted::{reply, tool_call};
use agents_runtime::{Principal, RoleMap, Runtime, Verdict};
use starter::{Assistant, perms};
use std::sync::Arc;

/// Fails when the agent's tools, permissions or policies change without the reviewed file.
/// When the change is intended: `AGENTS_BLESS=1 cargo test`, and commit the file with it.
#[test]
fn manifest_matches_baseline() {
    assert_baseline(Assistant::MANIFEST, concat!(env!("CARGO_MANIFEST_DIR"), "/manifests/assistant.manifest.json"));
}

/// What the audit log holds after a session in which the person gives `verdict`.
async fn session(verdict: Verdict) -> Vec<AuditStatus> {
    let audit = Arc::new(MemorySink::new());
    let model = Arc::new(ScriptedProvider::new([
        tool_call("refund_order", r#"{"order_id": 1042, "reason": "broken"}"#),
        reply("done"),
    ]));
    let runtime = Runtime::builder(audit.clone(), model)
        .roles(RoleMap::new().role("clerk", [perms::order::refund::NAME]))
        .build();
    let me = Principal::new("u-7", "shop-1", "clerk");
    let mut run = runtime.start::<Assistant>(me.clone(), "s1", "refund 1042".into()).unwrap();
    let mut verdict = Some(verdict);
    while let Some(event) = run.events().recv().await {
        match event {
            Event::ConfirmRequired { call_id, .. } => runtime.decide(&call_id, &me, verdict.take().unwrap()).unwrap(),
            Event::Done { .. } => break,
            _ => {}
        }
    }
    let _ = run.wait().await;
    audit.records().iter().filter(|r| r.tool.as_deref() == Some("refund_order")).map(|r| r.status).collect()
}

#[tokio::test]
async fn an_approved_refund_runs_after_its_proposal_is_recorded() {
    assert_eq!(session(Verdict::Approve).await, [AuditStatus::Proposed, AuditStatus::Confirmed, AuditStatus::Executed]);
}

#[tokio::test]
async fn a_rejected_refund_never_runs() {
    assert_eq!(session(Verdict::Reject).await, [AuditStatus::Proposed, AuditStatus::Rejected]);
}
