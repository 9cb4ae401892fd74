//! What a run's records keep of a call's values: by default each argument's name with a keyed
//! digest of its value, no value; `masked` and `full` when the runtime opts in; the person
//! deciding still sees the values on the card.

use crate::run_common;

use agents_runtime::RunResultExt as _;
use agents_runtime::agents_core::audit::{AuditValues, omit_args};
use agents_runtime::audit::{AuditRecord, AuditStatus, MemorySink};
use agents_runtime::provider::ScriptedProvider;
use agents_runtime::provider::scripted::{reply, tool_call};
use agents_runtime::run::Verdict;
use agents_runtime::token::TokenStore;
use agents_runtime::{Principal, RoleMap, RunStatus, Runtime, ToolContext, agent, permissions, tool};
use run_common::*;
use serde_json::json;
use std::sync::Arc;

permissions! {
    pub mod perms { chart.read, chart.write }
}

/// Finds a patient by id and date of birth.
#[tool(permission = perms::chart::read)]
async fn find_patient(cx: &ToolContext<'_>, patient: String, dob: String) -> Result<String, String> {
    bump(cx.session_id());
    if patient == "pt-missing" {
        return Err(format!("no patient {patient} born {dob}"));
    }
    Ok(format!("Jane Roe, born {dob}, diagnosis: tendinopathy"))
}

/// Adds a note to a patient's chart.
///
/// # Arguments
/// * `patient` - the patient's id
/// * `note` - the note's text
#[tool(permission = perms::chart::write, mutating, title = "Add a chart note")]
async fn add_note(cx: &ToolContext<'_>, patient: String, note: String) -> Result<String, String> {
    saw(cx.session_id(), format!("{patient}: {note}"));
    Ok("noted".into())
}

agent! {
    /// Keeps charts.
    pub struct Charts;
    audit: { values: full },
    tools: [find_patient, add_note],
}

const KEY: [u8; 32] = [9; 32];
const FIND: &str = r#"{"patient": "pt-4417", "dob": "1990-04-01"}"#;
const MISSING: &str = r#"{"patient": "pt-missing", "dob": "1971-12-24"}"#;
const NOTE: &str = r#"{"patient": "pt-4417", "note": "left knee swelling after the match"}"#;
/// Every value the calls above carry or their results return, at least four bytes long.
const VALUES: &[&str] =
    &["pt-4417", "1990-04-01", "pt-missing", "1971-12-24", "left knee swelling", "Jane Roe", "tendinopathy"];

fn me() -> Principal {
    Principal::new("dr-1", "clinic", "doctor")
}

/// A run of the three calls, the note approved, under `values` (`None`: the default).
async fn session(values: Option<AuditValues>) -> (Arc<MemorySink>, Runtime) {
    let audit = Arc::new(MemorySink::new());
    let provider = Arc::new(ScriptedProvider::new([
        tool_call("find_patient", FIND),
        tool_call("find_patient", MISSING),
        tool_call("add_note", NOTE),
        reply("done"),
    ]));
    let mut b = Runtime::builder(audit.clone(), provider)
        .roles(RoleMap::new().role("doctor", ["chart.read", "chart.write"]))
        .server_key(KEY);
    if let Some(v) = values {
        b = b.audit_values(v);
    }
    let rt = b.build();
    let session = format!("values-{values:?}");
    let mut run = rt.start::<Charts>(me(), &session, "go".into()).unwrap();
    let call_id = confirm_required(&mut run).await;
    // The person deciding sees the values they decide on, whatever the log keeps.
    let pending = rt.pending_decisions(&me()).await.unwrap();
    assert_eq!(pending[0].decider_arguments.as_value()["note"], "left knee swelling after the match");
    rt.decide(&call_id, &me(), Verdict::Approve).unwrap();
    let out = run.wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    assert_eq!(seen_in(&session), ["pt-4417: left knee swelling after the match"]);
    (audit, rt)
}

fn calls(audit: &MemorySink) -> Vec<AuditRecord> {
    audit.records().into_iter().filter(|r| r.args.is_some()).collect()
}

#[tokio::test]
async fn by_default_the_log_holds_no_value_of_a_call_only_names_and_keyed_digests() {
    let (audit, _rt) = session(None).await;
    let log = audit.to_jsonl();
    for value in VALUES {
        assert!(!log.contains(value), "`{value}` is in the log:\n{log}");
    }
    let records = calls(&audit);
    assert!(records.len() >= 6, "{records:?}");
    assert!(records.iter().all(AuditRecord::values_omitted), "{records:?}");
    // An auditor holding the key and a value can check it against the record.
    let key = TokenStore::new(KEY);
    let expected = omit_args(&json!({"patient": "pt-4417", "dob": "1990-04-01"}), |t| key.value_mac(t));
    assert_eq!(records[0].args.as_ref().unwrap().as_value(), &expected);
    // Without the key, a guess cannot be confirmed: the plain digest of the value is not there.
    let guess = omit_args(&json!({"patient": "pt-4417", "dob": "1990-04-01"}), |t| {
        use sha2::Digest;
        sha2::Sha256::digest(t).into()
    });
    assert_ne!(records[0].args.as_ref().unwrap().as_value(), &guess);
    // The tool's error names the call's values: the reason keeps its words, not them.
    let failed = &with_status(&audit, AuditStatus::Failed)[0];
    assert_eq!(failed.reason.as_deref(), Some("no patient [omitted] born [omitted]"));
    // The records of one call still join: the same digest on each.
    let note: Vec<_> = records.iter().filter(|r| r.tool.as_deref() == Some("add_note")).collect();
    assert_eq!(note.len(), 3, "{note:?}");
    assert!(note.iter().all(|r| r.args == note[0].args && r.args_hash == note[0].args_hash));
    agents_runtime::agents_core::audit::verify_jsonl(&log, None).unwrap();
}

#[tokio::test]
async fn masked_keeps_the_argument_values_and_digests_the_results() {
    let (audit, _rt) = session(Some(AuditValues::Masked)).await;
    let log = audit.to_jsonl();
    for value in ["pt-4417", "1990-04-01", "left knee swelling"] {
        assert!(log.contains(value), "`{value}` is not in the log");
    }
    for value in ["Jane Roe", "tendinopathy"] {
        assert!(!log.contains(value), "the result `{value}` is in the log");
    }
    assert!(calls(&audit).iter().all(|r| !r.values_omitted()));
    assert_eq!(
        with_status(&audit, AuditStatus::Failed)[0].reason.as_deref(),
        Some("no patient pt-missing born 1971-12-24")
    );
}

#[tokio::test]
async fn full_keeps_the_results_too_and_raw_results_false_never_widens_the_default() {
    let (audit, _rt) = session(Some(AuditValues::Full)).await;
    assert!(audit.to_jsonl().contains("tendinopathy"));
    // `record_raw_results(false)` narrows `full`; it does not widen `omitted`.
    let audit = Arc::new(MemorySink::new());
    let provider = Arc::new(ScriptedProvider::new([tool_call("find_patient", FIND), reply("done")]));
    let rt = Runtime::builder(audit.clone(), provider)
        .roles(RoleMap::new().role("doctor", ["chart.read"]))
        .record_raw_results(false)
        .build();
    let out = rt.start::<Charts>(me(), "values-raw-false", "go".into()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    assert!(!audit.to_jsonl().contains("pt-4417"));
    assert!(calls(&audit).iter().all(AuditRecord::values_omitted));
}
