//! The second confirmation over HTTP: a proposal the application's policy asks a second
//! confirmation of (a value copied from a tool result) is not approved by one `approve`; the
//! answer is 409 with the warning and the digest, and only an approval that carries that
//! digest back as `acknowledge` runs it. A wrong digest, another user's request and an
//! acknowledgement sent with a rejection change nothing.

use crate::common;

use agents_runtime::Runtime;
use agents_runtime::audit::{AuditStatus, MemorySink};
use agents_runtime::untrusted::UntrustedPolicy;
use agents_service::{DevAuthenticator, ServiceLimits};
use common::*;
use std::sync::Arc;

async fn served() -> Served {
    let audit = Arc::new(MemorySink::new());
    let runtime = Runtime::builder(audit.clone(), Arc::new(test_model()))
        .roles(roles())
        .untrusted_policy("share_note", UntrustedPolicy::SecondConfirmation)
        .build();
    serve_with(Arc::new(DevAuthenticator::enabled()), ServiceLimits::default(), Some((audit, runtime))).await
}

/// The statuses of the call's records, beside the egress check's notice.
fn statuses(s: &Served, call: &str) -> Vec<AuditStatus> {
    records_of(&s.audit, call).iter().map(|r| r.status).filter(|s| *s != AuditStatus::Notice).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_approve_is_answered_409_with_the_warning_and_only_the_acknowledged_one_runs() {
    let s = served().await;
    let run = start(s.base, &alice(), "ack-1", "share the stock note").await;
    let call = pending_call(s.base, &alice()).await;
    let path = format!("/v1/decisions/{call}");
    let listed = get(s.base, "/v1/decisions", &alice()).await.json();
    let warning = listed["decisions"][0]["acknowledge"].as_str().expect("the listing says a second step is needed");
    assert!(warning.contains("`note`") && warning.contains("`lookup_item`"), "{warning}");
    // The first approval: 409, nothing ran, the warning and its digest in the answer.
    let first = post(s.base, &path, &alice(), r#"{"verdict": "approve"}"#).await;
    assert_eq!((first.status, first.code().as_str()), (409, "acknowledgement_required"), "{}", first.body);
    let ack = first.json()["acknowledgement"].clone();
    assert_eq!(ack["warning"], warning);
    assert_eq!(ack["phrase"], format!("I checked: {warning}"));
    let digest = ack["digest"].as_str().unwrap().to_owned();
    assert_eq!(statuses(&s, &call), [AuditStatus::Proposed, AuditStatus::FirstApproval], "nothing confirmed");
    // A wrong digest, the warning's text instead, an acknowledgement with a rejection, another
    // user with the right digest: refused, nothing changes.
    for wrong in ["0".repeat(64), warning.to_owned()] {
        let body = serde_json::json!({"verdict": "approve", "acknowledge": wrong}).to_string();
        let r = post(s.base, &path, &alice(), &body).await;
        assert_eq!((r.status, r.code().as_str()), (409, "acknowledgement_mismatch"), "{}", r.body);
        assert!(r.json()["error"]["message"].as_str().unwrap().contains("nothing was decided"), "{}", r.body);
    }
    let with_reject = serde_json::json!({"verdict": "reject", "acknowledge": digest}).to_string();
    assert_eq!(post(s.base, &path, &alice(), &with_reject).await.status, 400);
    let with_digest = serde_json::json!({"verdict": "approve", "acknowledge": digest}).to_string();
    let intruder = post(s.base, &path, &bob(), &with_digest).await;
    assert_eq!((intruder.status, intruder.code().as_str()), (404, "not_found"));
    // The intruder's attempt is audited (`denied`); nothing was decided.
    let audited = [AuditStatus::Proposed, AuditStatus::FirstApproval, AuditStatus::Denied];
    assert_eq!(statuses(&s, &call), audited, "nothing decided");
    // The acknowledged second approval runs it.
    let second = post(s.base, &path, &alice(), &with_digest).await;
    assert_eq!(second.status, 200, "{}", second.body);
    assert_eq!(ended(s.base, &alice(), &run).await["status"], "completed");
    let ran = [audited.as_slice(), &[AuditStatus::Confirmed, AuditStatus::Executed]].concat();
    assert_eq!(statuses(&s, &call), ran);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decline_after_the_first_approval_rejects_it() {
    let s = served().await;
    let run = start(s.base, &alice(), "ack-2", "share the stock note").await;
    let call = pending_call(s.base, &alice()).await;
    let path = format!("/v1/decisions/{call}");
    assert_eq!(post(s.base, &path, &alice(), r#"{"verdict": "approve"}"#).await.status, 409);
    assert_eq!(post(s.base, &path, &alice(), r#"{"verdict": "reject"}"#).await.status, 200);
    assert_eq!(ended(s.base, &alice(), &run).await["status"], "completed");
    assert_eq!(statuses(&s, &call), [AuditStatus::Proposed, AuditStatus::FirstApproval, AuditStatus::Rejected]);
}
