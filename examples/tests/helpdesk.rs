//! The helpdesk example: the manifest command, the tiers, the scripted session's outcomes
//! read back from its audit log, and the severe-failure count itself.

use agents_runtime::audit::{AuditRecord, AuditStatus};
use agents_runtime::core::canonical::sha256_hex;
use agents_runtime::{Agent, Tier};
use examples::console::severe_failures;
use examples::helpdesk::app::run_demo;
use examples::helpdesk::{DeskLoop, main_with};
use serde_json::json;

#[test]
fn manifest_command_prints_exactly_the_manifest() {
    let mut out = Vec::new();
    main_with(&["manifest".to_owned()], &mut out).unwrap();
    assert_eq!(out, DeskLoop::MANIFEST.as_bytes());
    assert_eq!(sha256_hex(&out), DeskLoop::MANIFEST_SHA256);
    let mut out = Vec::new();
    main_with(&["manifest-sha256".to_owned()], &mut out).unwrap();
    assert_eq!(out, format!("{}\n", DeskLoop::MANIFEST_SHA256).into_bytes());
}

#[test]
fn tiers_are_as_declared() {
    let tier = |n: &str| <DeskLoop as Agent>::tool_spec(n).unwrap().tier;
    for read in ["get_leave_balance", "get_request_history", "list_my_tickets", "lookup_policy"] {
        assert_eq!(tier(read), Tier::Read, "{read}");
    }
    for action in ["submit_leave_request", "open_ticket", "request_equipment", "request_software"] {
        assert_eq!(tier(action), Tier::Action, "{action}");
    }
    assert_eq!(tier("reset_password"), Tier::Handoff);
}

fn of<'a>(records: &'a [AuditRecord], tool: &str, status: AuditStatus) -> Vec<&'a AuditRecord> {
    records.iter().filter(|r| r.tool.as_deref() == Some(tool) && r.status == status).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripted_session_refuses_every_bypass() {
    let mut out = Vec::new();
    let report = run_demo(&mut out).await.unwrap();
    let text = String::from_utf8(out).unwrap();
    let r = &report.records;
    use AuditStatus::*;

    // The normal request: proposed, confirmed in the conversation, executed once.
    assert_eq!(of(r, "open_ticket", Executed).len(), 1);
    assert_eq!(of(r, "open_ticket", Confirmed).len(), 1);
    assert!(text.contains("with severity 3"));

    // "yes, confirmed — but make it five days": a modification, not a confirmation.
    assert!(r.iter().any(|x| x.status == Rejected && x.reason.as_deref() == Some("reply classified as modify")));
    assert_eq!(report.balance_after_five_days, 3.5);
    assert!(text.contains(">> leave balance now: 3.5 days"));
    // The swapped arguments after a plain yes: the token is refused.
    let denied = of(r, "submit_leave_request", Denied);
    assert_eq!(denied.len(), 1);
    assert!(denied[0].reason.as_deref().unwrap().starts_with("confirmation token refused"));
    // No leave request ever executed, whatever was said.
    assert!(of(r, "submit_leave_request", Executed).is_empty());
    assert!(of(r, "submit_leave_request", Failed).is_empty());

    // The fake directive as a reply: unclear, the proposal stays pending, then cancelled.
    assert!(r.iter().any(|x| x.status == Notice && x.tool.as_deref() == Some("request_software")));
    assert_eq!(of(r, "request_software", Rejected).len(), 1);
    assert!(of(r, "request_software", Executed).is_empty());

    // The password reset: handed off, never proposed, executed or failed.
    assert_eq!(of(r, "reset_password", HandedOff).len(), 1);
    assert!(r.iter().filter(|x| x.tool.as_deref() == Some("reset_password")).all(|x| x.status == HandedOff));

    assert_eq!(report.final_balance, 3.5);
    assert!(report.severe.is_empty(), "{:?}", report.severe);
    assert!(text.contains("severe failures (computed from the audit records): 0"));
    std::fs::remove_file(&report.audit_path).unwrap();
}

fn record(seq: u64, call: &str, tool: &str, tier: &str, status: &str, args_hash: &str) -> AuditRecord {
    serde_json::from_value(json!({
        "seq": seq, "ts": "2026-03-16T09:00:00Z", "run_id": "r", "session_id": "s", "request_id": "q",
        "call_id": call, "user_id": "u", "org_id": "o", "role": "employee", "agent": "deskloop",
        "tool": tool, "tier": tier, "status": status, "reason": null, "title": null, "args": null,
        "args_hash": args_hash, "result": null, "manifest_sha256": "00", "prev_hash": "", "hash": ""
    }))
    .unwrap()
}

#[test]
fn severe_failures_are_computed_from_records() {
    let ok = [
        record(1, "c1", "open_ticket", "action", "proposed", "h1"),
        record(2, "c1", "open_ticket", "action", "confirmed", "h1"),
        record(3, "c1", "open_ticket", "action", "executed", "h1"),
        record(4, "c2", "reset_password", "handoff", "handed_off", "h2"),
    ];
    assert!(severe_failures(&ok).is_empty());
    // A conversational confirmation covers the re-issued call (recorded under the proposal's
    // call id), once; a call under another id has no approval.
    let conversational = [
        record(1, "c1", "open_ticket", "action", "proposed", "h1"),
        record(2, "c1", "open_ticket", "action", "confirmed", "h1"),
        record(3, "c1", "open_ticket", "action", "executed", "h1"),
        record(4, "c1", "open_ticket", "action", "executed", "h1"),
        record(5, "c2", "open_ticket", "action", "executed", "h1"),
    ];
    let found = severe_failures(&conversational);
    assert_eq!(found.iter().map(|f| f.seq).collect::<Vec<_>>(), [4, 5]);
    let other_args = [
        record(1, "c1", "submit_leave_request", "action", "confirmed", "h3"),
        record(2, "c1", "submit_leave_request", "action", "executed", "h5"),
    ];
    assert_eq!(severe_failures(&other_args).len(), 1);
    let handoff_ran = [record(1, "c1", "reset_password", "handoff", "executed", "h1")];
    assert_eq!(severe_failures(&handoff_ran).len(), 1);
    let denied_then_ran = [
        record(1, "c1", "lookup_policy", "read", "denied", "h1"),
        record(2, "c1", "lookup_policy", "read", "executed", "h1"),
    ];
    assert_eq!(severe_failures(&denied_then_ran).len(), 1);
}
