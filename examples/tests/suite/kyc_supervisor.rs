//! The KYC supervisor runs its second reviewer as a tool, offline: the second reviewer's
//! note waits for the analyst (the supervisor's model asked for it; only the analyst decides),
//! another user cannot decide it, and every record of both agents is in one chain that
//! verifies, the second reviewer's placed under the supervisor's run.

use crate::run_common::nested_confirmation;
use agents_runtime::RunResultExt as _;
use agents_runtime::audit::{AuditStatus, MemorySink};
use agents_runtime::provider::ScriptedProvider;
use agents_runtime::provider::scripted::{reply, tool_call};
use agents_runtime::run::DecisionError;
use agents_runtime::{Principal, RunStatus, Runtime, Verdict};
use examples::kyc::app::{DemoFiles, analyst};
use examples::kyc::supervisor::{KycSecondReviewer, KycSupervisor};
use serde_json::json;
use std::sync::Arc;

#[tokio::test]
async fn the_second_reviewers_note_waits_for_the_analyst_and_lands_in_one_chain() {
    let files = DemoFiles::create().unwrap();
    let (passport, note) = (files.upload("c-1001/passport.txt"), files.note("kyc-1.txt"));
    let provider = Arc::new(ScriptedProvider::new([
        // The supervisor reads the file, then asks the second reviewer to save a note.
        tool_call("read_customer_file", json!({"path": passport}).to_string()),
        tool_call("kyc-second-reviewer", json!({"input": format!("save a note that {passport} matches")}).to_string()),
        // The second reviewer saves the note (it waits for the analyst), then answers.
        tool_call("save_review_note", json!({"path": note, "note": "the passport matches"}).to_string()),
        reply("the passport matches; the note is saved"),
        // The supervisor answers with what it heard.
        reply("second look done: the passport matches"),
    ]));
    let sink = Arc::new(MemorySink::new());
    let rt = Runtime::builder(sink.clone(), provider).roles(examples::kyc::roles().clone()).build();
    let mut handle = rt.start::<KycSupervisor>(analyst(), "kyc-supervisor", "case c-1001".into()).unwrap();
    let supervisor = handle.run_id().to_owned();
    let (call_id, node) = nested_confirmation(&mut handle).await;
    assert_eq!(node, "kyc-supervisor/kyc-second-reviewer");
    let colleague = Principal::new("u-lee", "org-northbank", examples::kyc::ANALYST);
    assert!(matches!(rt.decide(&call_id, &colleague, Verdict::Approve), Err(DecisionError::NotYourRun)));
    assert!(!std::path::Path::new(&note).exists(), "nothing is written before the analyst decides");
    rt.decide(&call_id, &analyst(), Verdict::Approve).unwrap();
    let out = handle.wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    assert_eq!(out.as_ref().unwrap().output.as_deref(), Some("second look done: the passport matches"));
    assert!(std::fs::read_to_string(&note).unwrap().contains("the passport matches"));

    let records = sink.records();
    let text: String = records
        .iter()
        .map(|r| agents_runtime::agents_core::canonical::to_string(&serde_json::to_value(r).unwrap()) + "\n")
        .collect();
    assert_eq!(agents_runtime::agents_core::audit::verify_jsonl(&text, None).unwrap().records, records.len());
    for r in &records {
        assert_eq!(r.user_id, analyst().user_id, "every record acts for the analyst");
        if r.run_id != supervisor {
            let place = r.node.as_ref().expect("the second reviewer's records name their place");
            assert_eq!(place.parent_run_id.as_deref(), Some(supervisor.as_str()));
            assert_eq!(place.path, "kyc-supervisor/kyc-second-reviewer");
            assert_eq!(r.manifest_sha256, KycSecondReviewer::MANIFEST_SHA256);
        }
    }
    let note_call: Vec<AuditStatus> =
        records.iter().filter(|r| r.call_id.as_deref() == Some(call_id.as_str())).map(|r| r.status).collect();
    assert_eq!(note_call, [AuditStatus::Proposed, AuditStatus::Confirmed, AuditStatus::Executed]);
}

#[test]
fn the_supervisors_manifest_pins_the_second_reviewer() {
    let pinned =
        format!(r#""agents":[{{"name":"kyc-second-reviewer","sha256":"{}"}}]"#, KycSecondReviewer::MANIFEST_SHA256);
    assert!(KycSupervisor::MANIFEST.contains(&pinned), "{}", KycSupervisor::MANIFEST);
}
