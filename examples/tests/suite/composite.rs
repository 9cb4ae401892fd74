//! The examples' composites run offline as one run tree each: the KYC pipeline (intake, the
//! reviewer, then a clear decision or a person), the two-reviewer panel and the helpdesk's
//! triage (whose nested action waits for the same person), with their records in one chain
//! that verifies, each placed in the tree.

use crate::run_common::{nested_card, statuses_of, verify_chain};
use agents_runtime::RunResultExt as _;
use agents_runtime::audit::{AuditRecord, AuditStatus, MemorySink};
use agents_runtime::provider::scripted::{RuleProvider, reply, tool_call, tool_outcomes};
use agents_runtime::provider::{ChatRequest, ScriptedProvider};
use agents_runtime::{Provider, RunStatus, Runtime};
use examples::kyc::app::{DemoFiles, analyst};
use examples::kyc::pipeline::{KycPanel, KycPipeline};
use examples::kyc::{ApprovalDecision, DecisionKind, RawRequest};
use serde_json::json;
use std::sync::Arc;

fn request(documents: Vec<String>) -> RawRequest {
    RawRequest {
        request_id: "kyc-1".into(),
        customer_id: "c-1001".into(),
        full_name: "Astrid Lindgren".into(),
        country: "SE".into(),
        documents,
    }
}

fn decision(kind: &str, risk: u8, passport: &str) -> String {
    json!({"request_id": "kyc-1", "decision": kind, "risk_score": risk, "reasons": ["the passport matches"], "documents_reviewed": [passport]}).to_string()
}

fn runtime(provider: Arc<dyn Provider>) -> (Runtime, Arc<MemorySink>) {
    let sink = Arc::new(MemorySink::new());
    (Runtime::builder(sink.clone(), provider).roles(examples::kyc::roles().clone()).build(), sink)
}

/// The helpdesk's runtime on `provider`: its roles, its seeded store and its knowledge.
fn helpdesk_runtime(provider: Arc<dyn Provider>) -> (Runtime, Arc<MemorySink>) {
    use examples::helpdesk::knowledge::knowledge_settings;
    use examples::helpdesk::store::Store;
    let sink = Arc::new(MemorySink::new());
    let rt = Runtime::builder(sink.clone(), provider)
        .roles(examples::helpdesk::roles().clone())
        .shared_state(Arc::new(Store::seeded()))
        .knowledge(knowledge_settings())
        .build();
    (rt, sink)
}

/// The records verify as one chain, and every one names the tree's run and its node.
fn one_tree(records: &[AuditRecord], tree: &str, user: &str) -> Vec<String> {
    assert_eq!(verify_chain(records), records.len());
    let mut paths: Vec<String> = Vec::new();
    for r in records {
        let node = r.node.as_ref().expect("every record names its place in the tree");
        assert!(r.run_id == tree || node.parent_run_id.as_deref() == Some(tree), "{r:?}");
        assert_eq!(r.user_id, user, "every node acts for the caller");
        if paths.last() != Some(&node.path) {
            paths.push(node.path.clone());
        }
    }
    paths
}

/// The clear arm's model script: intake echoes, the reviewer reads the passport and approves
/// at risk 10, the decision node records that decision at `record` and returns it.
fn clear_script(request: &RawRequest, passport: &str, record: &str) -> Arc<ScriptedProvider> {
    let args = json!({"path": record, "request_id": "kyc-1", "decision": "approve", "risk_score": 10});
    Arc::new(ScriptedProvider::new([
        reply(serde_json::to_string(request).unwrap()),
        tool_call(agents_runtime::run::CHOICE_TOOL, r#"{"skill": "review"}"#),
        tool_call("read_customer_file", json!({"path": passport}).to_string()),
        reply(decision("approve", 10, passport)),
        tool_call("record_kyc_decision", args.to_string()),
        reply(decision("approve", 10, passport)),
    ]))
}

#[tokio::test]
async fn the_kyc_pipeline_records_a_clear_decision_once_the_person_confirms_it() {
    use agents_runtime::Verdict;
    let files = DemoFiles::create().unwrap();
    let (passport, record) = (files.upload("c-1001/passport.txt"), files.note("kyc-1.decision.json"));
    let request = request(vec![passport.clone()]);
    let (rt, sink) = runtime(clear_script(&request, &passport, &record));
    let mut handle = rt.start_composite::<KycPipeline>(analyst(), "kyc-tree", request).unwrap();
    let tree = handle.run_id().to_owned();
    let (call_id, node, shown) = nested_card(&mut handle).await;
    assert_eq!(node, "kyc-pipeline/kyc-decision");
    // The card shows what would stand: the request, the decision and the risk score.
    assert_eq!(
        (&shown["request_id"], &shown["decision"], &shown["risk_score"]),
        (&json!("kyc-1"), &json!("approve"), &json!(10))
    );
    assert!(!std::path::Path::new(&record).exists(), "nothing is recorded before the person decides");
    rt.decide(&call_id, &analyst(), Verdict::Approve).unwrap();
    let out = handle.wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    let decided: &ApprovalDecision = out.output().unwrap();
    assert_eq!((decided.decision, decided.risk_score), (DecisionKind::Approve, 10));
    let kept: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();
    assert_eq!(kept, json!({"request_id": "kyc-1", "decision": "approve", "risk_score": 10, "recorded_by": "u-kim"}));
    let records = sink.records();
    assert_eq!(
        one_tree(&records, &tree, analyst().user_id.as_str()),
        [
            "kyc-pipeline",
            "kyc-pipeline/kyc-intake",
            "kyc-pipeline/kyc-reviewer",
            "kyc-pipeline",
            "kyc-pipeline/kyc-decision",
            "kyc-pipeline"
        ]
    );
    let chose = records.iter().find(|r| r.status == AuditStatus::Notice && r.run_id == tree).unwrap();
    assert!(chose.reason.as_deref().unwrap().contains("takes arm `kyc-decision`"), "{chose:?}");
    assert_eq!(statuses_of(&records, &call_id), [AuditStatus::Proposed, AuditStatus::Confirmed, AuditStatus::Executed]);
}

#[tokio::test]
async fn a_clear_decision_the_person_refuses_is_not_recorded() {
    use agents_runtime::Verdict;
    let files = DemoFiles::create().unwrap();
    let (passport, record) = (files.upload("c-1001/passport.txt"), files.note("kyc-1.decision.json"));
    let request = request(vec![passport.clone()]);
    let (rt, sink) = runtime(clear_script(&request, &passport, &record));
    let mut handle = rt.start_composite::<KycPipeline>(analyst(), "kyc-tree", request).unwrap();
    let (call_id, _, _) = nested_card(&mut handle).await;
    rt.decide(&call_id, &analyst(), Verdict::Reject).unwrap();
    let out = handle.wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    assert!(!std::path::Path::new(&record).exists(), "a refused decision leaves no record");
    assert_eq!(statuses_of(&sink.records(), &call_id), [AuditStatus::Proposed, AuditStatus::Rejected]);
}

#[tokio::test]
async fn the_kyc_pipeline_sends_a_referral_to_a_person() {
    let files = DemoFiles::create().unwrap();
    let passport = files.upload("c-1001/passport.txt");
    let request = request(vec![passport.clone()]);
    let provider = Arc::new(ScriptedProvider::new([
        reply(serde_json::to_string(&request).unwrap()),
        tool_call(agents_runtime::run::CHOICE_TOOL, r#"{"skill": "review"}"#),
        reply(decision("refer", 80, &passport)),
        tool_call("refer_to_analyst", r#"{"request_id": "kyc-1", "reason": "the risk is high"}"#),
        reply(decision("refer", 80, &passport)),
    ]));
    let (rt, sink) = runtime(provider);
    let handle = rt.start_composite::<KycPipeline>(analyst(), "kyc-refer", request).unwrap();
    let tree = handle.run_id().to_owned();
    let out = handle.wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    assert_eq!(out.output().unwrap().decision, DecisionKind::Refer);
    let records = sink.records();
    assert!(
        one_tree(&records, &tree, analyst().user_id.as_str()).contains(&"kyc-pipeline/kyc-human-review".to_owned())
    );
    let handed = records.iter().find(|r| r.status == AuditStatus::HandedOff).expect("the referral is recorded");
    assert_eq!(handed.node.as_ref().unwrap().path, "kyc-pipeline/kyc-human-review");
}

/// The panel's model: a reviewer chooses its skill, reads the passport once, then approves;
/// the moderator approves.
fn panel_model(passport: String) -> RuleProvider {
    RuleProvider::new().when(move |request: &ChatRequest| {
        let offered: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
        let read = tool_outcomes(request).iter().any(|o| o.name == "read_customer_file");
        Some(if offered.contains(&agents_runtime::run::CHOICE_TOOL) {
            tool_call(agents_runtime::run::CHOICE_TOOL, r#"{"skill": "review"}"#)
        } else if offered.contains(&"read_customer_file") && !read {
            tool_call("read_customer_file", json!({"path": passport}).to_string())
        } else {
            reply(decision("approve", 12, &passport))
        })
    })
}

#[tokio::test]
async fn the_kyc_panel_hears_both_reviewers_then_its_moderator() {
    let files = DemoFiles::create().unwrap();
    let passport = files.upload("c-1001/passport.txt");
    let (rt, sink) = runtime(Arc::new(panel_model(passport.clone())));
    let handle = rt.start_composite::<KycPanel>(analyst(), "kyc-panel", request(vec![passport])).unwrap();
    let tree = handle.run_id().to_owned();
    let out = handle.wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    assert_eq!(out.output().unwrap().risk_score, 12);
    let records = sink.records();
    let paths = one_tree(&records, &tree, analyst().user_id.as_str());
    for node in ["kyc-panel/kyc-reviewer", "kyc-panel/kyc-second-reviewer", "kyc-panel/kyc-moderator"] {
        assert!(paths.iter().any(|p| p == node), "{node} in {paths:?}");
    }
    let moderator = records.iter().position(|r| r.node.as_ref().unwrap().path == "kyc-panel/kyc-moderator").unwrap();
    let last_member = records.iter().rposition(|r| r.node.as_ref().unwrap().path.contains("reviewer")).unwrap();
    assert!(last_member < moderator, "the moderator decides after both members answered");
}

#[tokio::test]
async fn the_helpdesk_triage_routes_by_the_model_and_a_nested_action_waits_for_the_same_person() {
    use agents_runtime::Verdict;
    use agents_runtime::run::DecisionError;
    use examples::helpdesk::app::alex;
    use examples::helpdesk::triage::HelpdeskTriage;
    let provider = Arc::new(ScriptedProvider::new([
        reply("The user's laptop screen is broken; they need a support ticket."),
        tool_call("choose_arm", r#"{"arm": "it-specialist"}"#),
        tool_call("open_ticket", r#"{"summary": "laptop screen broken", "severity": 3}"#),
        reply("I opened the ticket."),
    ]));
    let (rt, sink) = helpdesk_runtime(provider);
    let mut handle =
        rt.start_composite::<HelpdeskTriage>(alex(), "desk-tree", "My laptop screen is broken".into()).unwrap();
    let tree = handle.run_id().to_owned();
    let (call_id, node, _) = nested_card(&mut handle).await;
    assert_eq!(node, "helpdesk-triage/it-specialist");
    let stranger = agents_runtime::Principal::new("u-sam", "org-deskloop", alex().role.as_str());
    assert_eq!(rt.decide(&call_id, &stranger, Verdict::Approve), Err(DecisionError::NotYourRun));
    rt.decide(&call_id, &alex(), Verdict::Approve).unwrap();
    let out = handle.wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    let records = sink.records();
    let paths = one_tree(&records, &tree, alex().user_id.as_str());
    assert!(paths.contains(&"helpdesk-triage/desk-triage".to_owned()), "{paths:?}");
    assert_eq!(statuses_of(&records, &call_id), [AuditStatus::Proposed, AuditStatus::Confirmed, AuditStatus::Executed]);
    let chose = records.iter().find(|r| r.status == AuditStatus::Notice && r.run_id == tree).unwrap();
    assert!(chose.reason.as_deref().unwrap().contains("takes arm `it-specialist`"), "{chose:?}");
    assert_eq!(chose.node.as_ref().map(|n| n.path.as_str()), Some("helpdesk-triage/branch"));
}

/// A leave question that the triage routes to the IT specialist: IT hands it to HR through its
/// handoff tool, HR's leave request waits for the same person, and the tree's output is HR's
/// answer.
#[tokio::test]
async fn the_it_specialist_hands_a_leave_question_to_hr_whose_action_waits_for_the_same_person() {
    use agents_runtime::Verdict;
    use agents_runtime::run::DecisionError;
    use examples::helpdesk::app::alex;
    use examples::helpdesk::triage::HelpdeskTriage;
    let provider = Arc::new(ScriptedProvider::new([
        reply("The user wants two days of annual leave from 2026-03-02."),
        tool_call("choose_arm", r#"{"arm": "it-specialist"}"#),
        tool_call("hand_to_hr", r#"{"request": "two days of annual leave from 2026-03-02"}"#),
        tool_call("submit_leave_request", r#"{"start_date": "2026-03-02", "days": 2, "kind": "annual"}"#),
        reply("HR submitted your leave request."),
    ]));
    let (rt, sink) = helpdesk_runtime(provider);
    let mut handle =
        rt.start_composite::<HelpdeskTriage>(alex(), "desk-handoff", "Two days off please".into()).unwrap();
    let tree = handle.run_id().to_owned();
    let (call_id, node, _) = nested_card(&mut handle).await;
    assert_eq!(node, "helpdesk-triage/it-specialist/hr-specialist");
    let stranger = agents_runtime::Principal::new("u-sam", "org-deskloop", alex().role.as_str());
    assert_eq!(rt.decide(&call_id, &stranger, Verdict::Approve), Err(DecisionError::NotYourRun));
    rt.decide(&call_id, &alex(), Verdict::Approve).unwrap();
    let out = handle.wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    assert_eq!(out.output().map(String::as_str), Some("HR submitted your leave request."));
    let records = sink.records();
    let paths = one_tree(&records, &tree, alex().user_id.as_str());
    assert!(paths.contains(&"helpdesk-triage/it-specialist/hr-specialist".to_owned()), "{paths:?}");
    let handed = records.iter().find(|r| r.status == AuditStatus::HandedOff).expect("the handoff is recorded");
    assert_eq!(handed.node.as_ref().map(|n| n.path.as_str()), Some("helpdesk-triage/it-specialist"));
    assert_eq!(statuses_of(&records, &call_id), [AuditStatus::Proposed, AuditStatus::Confirmed, AuditStatus::Executed]);
}
