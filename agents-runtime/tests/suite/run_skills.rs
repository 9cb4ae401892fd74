//! Skills that scope: a run works within one skill, chosen by the application (typed) or by
//! the model in a choice step that fails closed; only the skill's tools are offered, and a
//! call of any other granted tool is denied before anything runs, and audited.

use crate::run_common;

use agents_runtime::audit::{AuditResult, AuditStatus, MemorySink};
use agents_runtime::events::Event;
use agents_runtime::provider::ScriptedProvider;
use agents_runtime::provider::scripted::{reply, tool_call};
use agents_runtime::run::{CHOICE_TOOL, StartError};
use agents_runtime::{
    Principal, RoleMap, RunError, Runtime, Skill, SkillChooser, ToolContext, agent, permissions, tool,
};
use run_common::*;
use std::sync::Arc;

permissions! {
    pub mod perms { case.read, case.write }
}

/// Looks a case up.
#[tool(permission = perms::case::read)]
async fn lookup(cx: &ToolContext<'_>) -> Result<String, String> {
    bump(cx.session_id());
    Ok("case 7: open".into())
}

/// Approves a case.
#[tool(permission = perms::case::write, mutating, title = "Approve case")]
async fn approve(cx: &ToolContext<'_>) -> Result<String, String> {
    bump(cx.session_id());
    Ok("approved".into())
}

/// Notes something on a case; listed by no skill.
#[tool(permission = perms::case::read)]
async fn note(cx: &ToolContext<'_>) -> Result<String, String> {
    bump(cx.session_id());
    Ok("noted".into())
}

agent! {
    /// Reviews cases.
    pub struct Desk;
    tools: [lookup, approve, note],
    skills: { triage: [lookup], decide: [lookup, approve] },
}

agent! {
    /// Reviews cases; tools no skill lists serve every skill.
    pub struct SharedDesk;
    tools: [lookup, approve, note],
    skills: { triage: [lookup], decide: [lookup, approve] },
    unskilled: shared,
}

agent! {
    /// Reviews cases, without skills.
    pub struct PlainDesk;
    tools: [lookup, approve, note],
}

fn runtime(audit: &Arc<MemorySink>, provider: &Arc<ScriptedProvider>) -> Runtime {
    Runtime::builder(audit.clone(), provider.clone())
        .roles(RoleMap::new().role("reviewer", ["case.read", "case.write"]))
        .build()
}

fn reviewer() -> Principal {
    Principal::new("rev-1", "org1", "reviewer")
}

fn chosen(audit: &MemorySink) -> Vec<serde_json::Value> {
    with_status(audit, AuditStatus::SkillChosen)
        .into_iter()
        .map(|r| match r.result {
            Some(AuditResult::Value(v)) => v,
            other => panic!("a skill_chosen record keeps its choice in `result`: {other:?}"),
        })
        .collect()
}

#[tokio::test]
async fn the_application_s_skill_offers_its_tools_only_and_a_call_outside_it_is_denied_and_audited() {
    let audit = Arc::new(MemorySink::new());
    let provider = Arc::new(ScriptedProvider::new([tool_call("approve", "{}"), reply("done")]));
    let rt = runtime(&audit, &provider);
    let mut run = rt.start_in_skill(reviewer(), "app-triage", DeskSkill::Triage, "approve case 7".into()).unwrap();
    let run_id = run.run_id().to_owned();
    let events = events_until_done(&mut run).await;
    let out = run.wait().await;
    assert!(out.is_ok(), "{out:?}");
    assert_eq!(ran("app-triage"), 0, "a tool outside the skill must not run");
    let requests = provider.requests();
    assert_eq!(offered(&requests[0]), vec!["lookup"], "only the skill's tools are offered");
    let denied = with_status(&audit, AuditStatus::Denied);
    assert_eq!(denied.len(), 1, "{denied:?}");
    assert_eq!(denied[0].tool.as_deref(), Some("approve"));
    let reason = denied[0].reason.clone().unwrap();
    assert!(reason.starts_with("outside skill `triage`"), "{reason}");
    assert!(with_status(&audit, AuditStatus::Proposed).is_empty());
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::ToolDenied { reason, .. } if reason.starts_with("outside skill `triage`")))
    );
    assert!(events.contains(&Event::SkillChosen { run_id, skill: "triage".into(), by: SkillChooser::Application }));
    let c = chosen(&audit);
    assert_eq!(c, vec![serde_json::json!({"skill": "triage", "by": "application", "tools": ["lookup"]})]);
    // `skill_chosen` comes after `run_started` and before any call's record.
    let order = statuses(&audit);
    assert_eq!(&order[..2], &[AuditStatus::RunStarted, AuditStatus::SkillChosen], "{order:?}");
}

#[tokio::test]
async fn the_model_chooses_a_skill_first_and_then_sees_its_tools() {
    let audit = Arc::new(MemorySink::new());
    let provider = Arc::new(ScriptedProvider::new([
        tool_call(CHOICE_TOOL, r#"{"skill":"decide"}"#),
        tool_call("lookup", "{}"),
        reply("case 7 is open"),
    ]));
    let rt = runtime(&audit, &provider);
    let mut run = rt.start::<Desk>(reviewer(), "model-decide", "look at case 7".into()).unwrap();
    let events = events_until_done(&mut run).await;
    let out = run.wait().await;
    assert!(out.is_ok(), "{out:?}");
    assert_eq!(ran("model-decide"), 1);
    let requests = provider.requests();
    assert_eq!(offered(&requests[0]), vec![CHOICE_TOOL], "the choice step offers the choice only");
    let schema = &requests[0].tools[0].input_schema;
    assert_eq!(schema["properties"]["skill"]["enum"], serde_json::json!(["decide", "triage"]));
    assert_eq!(offered(&requests[1]), vec!["approve", "lookup"], "then the chosen skill's tools");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::SkillChosen { skill, by: SkillChooser::Model, .. } if skill == "decide"))
    );
    assert_eq!(
        chosen(&audit),
        vec![serde_json::json!({"skill": "decide", "by": "model", "tools": ["approve", "lookup"]})]
    );
}

/// The model's answer to the choice step, refused: the run ends before any tool is offered.
async fn refused_choice(session: &str, answer: agents_runtime::provider::ChatResponse) -> String {
    let audit = Arc::new(MemorySink::new());
    let provider = Arc::new(ScriptedProvider::new([answer, tool_call("approve", "{}"), reply("done")]));
    let rt = runtime(&audit, &provider);
    let out = rt.start::<Desk>(reviewer(), session, "approve case 7".into()).unwrap().wait().await;
    let message = match out {
        Err(RunError::SkillChoice { message, .. }) => message,
        other => panic!("a refused skill choice ends the run: {other:?}"),
    };
    assert_eq!(provider.requests().len(), 1, "no model call after a refused choice");
    assert_eq!(ran(session), 0);
    assert!(chosen(&audit).is_empty());
    let notices = with_status(&audit, AuditStatus::Notice);
    assert!(
        notices.iter().any(|r| r.reason.as_deref().is_some_and(|r| r.starts_with("skill choice refused"))),
        "{notices:?}"
    );
    message
}

#[tokio::test]
async fn a_model_s_choice_that_names_no_skill_fails_closed() {
    let m = refused_choice("choice-unknown", tool_call(CHOICE_TOOL, r#"{"skill":"admin"}"#)).await;
    assert!(m.contains(r#"named "admin", which is none of the skills (`decide`, `triage`)"#), "{m}");
    let m = refused_choice("choice-tool", tool_call("approve", "{}")).await;
    assert!(m.contains(r#"called "approve", not `choose_skill`"#), "{m}");
    let m = refused_choice("choice-text", reply("I will approve it.")).await;
    assert!(m.contains("holds 0 tool calls"), "{m}");
    let m = refused_choice("choice-extra", tool_call(CHOICE_TOOL, r#"{"skill":"decide","also":"approve"}"#)).await;
    assert!(m.contains("exactly one argument"), "{m}");
    let m = refused_choice("choice-dup", tool_call(CHOICE_TOOL, r#"{"skill":"triage","skill":"decide"}"#)).await;
    assert!(m.contains("were refused"), "{m}");
}

#[tokio::test]
async fn tools_no_skill_lists_serve_no_skill_unless_the_agent_shares_them() {
    let audit = Arc::new(MemorySink::new());
    let provider = Arc::new(ScriptedProvider::new([tool_call("note", "{}"), reply("done")]));
    let rt = runtime(&audit, &provider);
    let out =
        rt.start_in_skill(reviewer(), "unskilled-none", DeskSkill::Decide, "note it".into()).unwrap().wait().await;
    assert!(out.is_ok(), "{out:?}");
    assert_eq!(ran("unskilled-none"), 0);
    assert_eq!(offered(&provider.requests()[0]), vec!["approve", "lookup"]);
    let reason = with_status(&audit, AuditStatus::Denied)[0].reason.clone().unwrap();
    assert!(reason.starts_with("outside skill `decide`"), "{reason}");

    let audit = Arc::new(MemorySink::new());
    let provider = Arc::new(ScriptedProvider::new([tool_call("note", "{}"), reply("done")]));
    let rt = runtime(&audit, &provider);
    let out = rt
        .start_in_skill(reviewer(), "unskilled-shared", SharedDeskSkill::Triage, "note it".into())
        .unwrap()
        .wait()
        .await;
    assert!(out.is_ok(), "{out:?}");
    assert_eq!(ran("unskilled-shared"), 1);
    assert_eq!(offered(&provider.requests()[0]), vec!["lookup", "note"]);
    assert!(with_status(&audit, AuditStatus::Denied).is_empty());
}

#[tokio::test]
async fn an_agent_without_skills_offers_every_tool_and_chooses_nothing() {
    let audit = Arc::new(MemorySink::new());
    let provider = Arc::new(ScriptedProvider::new([tool_call("note", "{}"), reply("done")]));
    let rt = runtime(&audit, &provider);
    let out = rt.start::<PlainDesk>(reviewer(), "plain", "note it".into()).unwrap().wait().await;
    assert!(out.is_ok(), "{out:?}");
    assert_eq!(ran("plain"), 1);
    assert_eq!(offered(&provider.requests()[0]), vec!["approve", "lookup", "note"]);
    assert!(chosen(&audit).is_empty());
}

/// A hand-written `Skill` naming a skill the agent does not declare.
#[derive(Clone, Copy)]
struct Forged;
impl Skill for Forged {
    type Agent = Desk;
    fn name(self) -> &'static str {
        "admin"
    }
}

#[tokio::test]
async fn a_skill_the_agent_does_not_declare_is_refused_at_start() {
    let audit = Arc::new(MemorySink::new());
    let provider = Arc::new(ScriptedProvider::new([reply("done")]));
    let rt = runtime(&audit, &provider);
    let err = rt.start_in_skill(reviewer(), "forged", Forged, "hi".into()).err().unwrap();
    assert_eq!(err, StartError::UnknownSkill { agent: "Desk", skill: "admin" });
    assert!(err.to_string().contains("declares no skill `admin`"), "{err}");
    assert!(audit.records().is_empty(), "nothing is recorded: nothing started");
    assert!(provider.requests().is_empty());
}
