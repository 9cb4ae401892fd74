//! The KYC reviewer's typed skill `check_document`: started by its type with a
//! `DocumentRef`, it offers only its tool, refuses a call outside it, and hands back a
//! `DocumentCheck` parsed from the model's answer; offline, with a scripted model.

use agents_runtime::RunResultExt as _;
use agents_runtime::agents_core::manifest::Manifest;
use agents_runtime::agents_core::skill::SkillIo;
use agents_runtime::audit::{AuditResult, AuditStatus, MemorySink};
use agents_runtime::provider::ScriptedProvider;
use agents_runtime::provider::scripted::{reply, tool_call};
use agents_runtime::run::StartError;
use agents_runtime::{RunStatus, Runtime};
use examples::kyc::app::{DemoFiles, analyst};
use examples::kyc::{
    DocumentCheck, DocumentRef, KycReviewer, KycReviewerCheckDocumentSkill, KycReviewerSkill, RawRequest,
};
use serde_json::json;
use std::sync::Arc;

fn runtime(sink: &Arc<MemorySink>, provider: &Arc<ScriptedProvider>) -> Runtime {
    Runtime::builder(sink.clone(), provider.clone()).roles(examples::kyc::roles().clone()).build()
}

#[test]
fn the_manifest_names_the_typed_skill_s_types_and_the_untyped_skill_none() {
    let m = Manifest::parse(KycReviewer::MANIFEST).unwrap();
    let skill = |name: &str| m.agent.skills.iter().find(|s| s.name == name).unwrap().clone();
    assert_eq!(
        skill("check_document").io,
        Some(SkillIo { input: "DocumentRef".into(), output: "DocumentCheck".into() })
    );
    assert_eq!(skill("check_document").tools, vec!["read_customer_file"]);
    assert_eq!(skill("review").io, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_in_the_typed_skill_takes_its_input_and_returns_its_output() {
    let files = DemoFiles::create().unwrap();
    let passport = files.upload("c-1001/passport.txt");
    let answer = json!({"path": passport, "readable": true, "kind": "passport"});
    let provider = Arc::new(ScriptedProvider::new([
        tool_call("read_customer_file", json!({"path": passport}).to_string()),
        reply(answer.to_string()),
    ]));
    let sink = Arc::new(MemorySink::new());
    let rt = runtime(&sink, &provider);
    let document = DocumentRef { path: passport.clone() };
    let out = rt.start_skill::<KycReviewerCheckDocumentSkill>(analyst(), "s", document).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{:?}", out.error_text());
    let check: &DocumentCheck = out.output().unwrap();
    assert_eq!(check, &DocumentCheck { path: passport.clone(), readable: true, kind: "passport".into() });
    let requests = provider.requests();
    let offered: Vec<&str> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(offered, vec!["read_customer_file"], "only the skill's tool, and no skill choice");
    let sent = serde_json::to_string(&requests[0].messages).unwrap();
    assert!(sent.contains(&passport), "the skill's input reached the model: {sent}");
    let chosen: Vec<_> = sink.records().into_iter().filter(|r| r.status == AuditStatus::SkillChosen).collect();
    assert_eq!(chosen.len(), 1);
    assert_eq!(
        chosen[0].result,
        Some(AuditResult::Value(
            json!({"skill": "check_document", "by": "application", "tools": ["read_customer_file"]})
        ))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typed_skill_refuses_a_tool_outside_it_and_an_answer_that_is_not_its_output() {
    let files = DemoFiles::create().unwrap();
    let passport = files.upload("c-1001/passport.txt");
    // The agent's output type, not the skill's: refused, named by the skill's output type.
    let decision = json!({"request_id": "kyc-1", "decision": "approve", "risk_score": 5, "reasons": ["fine"], "documents_reviewed": [passport]});
    let provider = Arc::new(ScriptedProvider::new([
        tool_call("save_review_note", json!({"request_id": "kyc-1", "note": "approved"}).to_string()),
        reply(decision.to_string()),
    ]));
    let sink = Arc::new(MemorySink::new());
    let rt = runtime(&sink, &provider);
    let document = DocumentRef { path: passport.clone() };
    let out = rt.start_skill::<KycReviewerCheckDocumentSkill>(analyst(), "s", document).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::Failed);
    assert!(out.output().is_none());
    let error = out.error_text().unwrap();
    assert!(error.starts_with("the model's final answer does not fit `DocumentCheck`: "), "{error}");
    let denied: Vec<_> = sink.records().into_iter().filter(|r| r.status == AuditStatus::Denied).collect();
    assert_eq!(denied.len(), 1, "{denied:?}");
    assert_eq!(denied[0].tool.as_deref(), Some("save_review_note"));
    assert!(denied[0].reason.as_deref().unwrap().starts_with("outside skill `check_document`"), "{denied:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typed_skill_is_neither_started_through_the_enum_nor_offered_to_the_model_s_choice() {
    let provider = Arc::new(ScriptedProvider::new([reply("no call")]));
    let sink = Arc::new(MemorySink::new());
    let rt = runtime(&sink, &provider);
    let request = RawRequest {
        request_id: "kyc-1".into(),
        customer_id: "c-1001".into(),
        full_name: "Ada Example".into(),
        country: "GB".into(),
        documents: vec![],
    };
    let refused = rt.start_in_skill(analyst(), "s", KycReviewerSkill::CheckDocument, request.clone()).unwrap_err();
    assert!(matches!(refused, StartError::TypedSkill { skill: "check_document", .. }), "{refused:?}");
    assert!(refused.to_string().contains("start_skill"), "{refused}");
    assert!(sink.records().is_empty(), "nothing ran: {:?}", sink.records());
    // Started without a skill, the model chooses among the untyped skills only.
    let _ = rt.start::<KycReviewer>(analyst(), "s2", request).unwrap().wait().await;
    let choice = &provider.requests()[0].tools[0];
    assert_eq!(choice.input_schema["properties"]["skill"]["enum"], json!(["review"]));
}
