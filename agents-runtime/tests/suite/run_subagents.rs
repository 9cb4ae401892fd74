//! An agent granted to another (`agents: [...]`) at run time: offered to the caller's model as
//! a tool, run as a child node of the caller's run (the caller's principal, session, stop and
//! tree allowance; its records in the same chain with the caller's run id and the path
//! `caller/callee`; its events inside `Event::Node`), its answer the tool result the caller's
//! model reads. The callee's action waits for the same person, whatever the caller's model
//! asked it to do.

use crate::desk_common::*;
use crate::run_common::*;

use agents_runtime::RunResultExt as _;
use agents_runtime::audit::{AuditRecord, AuditStatus, MemorySink};
use agents_runtime::compose::TreeLimit;
use agents_runtime::provider::scripted::{reply, tool_call};
use agents_runtime::provider::{ChatRequest, ChatResponse, Provider, ProviderError, TokenSink};
use agents_runtime::{BoxFuture, RunError, RunStatus, Runtime, Verdict, agent};
use std::sync::Arc;

agent! {
    /// Answers the desk, asking the checker.
    pub struct Desk;
    tools: [look],
    ceiling: [perms::desk::read, perms::desk::write],
    agents: [Checker],
}

agent! {
    /// Answers the desk, asking the finder.
    pub struct Asker;
    tools: [look],
    agents: [Finder],
}

/// Every model, by the tools its request offers: a caller (offered `Checker` or `Finder`)
/// asks its callee to approve entry 7 (a gullible caller: the request is the model's, not the
/// person's), then answers with what the callee said; a callee approves (or looks up) entry
/// 7, then answers. Every answer uses 100 tokens.
struct Model;

impl Provider for Model {
    fn name(&self) -> &str {
        "scripted"
    }
    fn model(&self) -> &str {
        "desk"
    }
    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
        _: &'a dyn TokenSink,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move {
            let (tools, answers) = (offered(request), tool_messages(request));
            let callee = tools.iter().find(|t| *t == "Checker" || *t == "Finder");
            Ok(used(match (callee, answers.last()) {
                (Some(callee), None) => tool_call(callee.as_str(), r#"{"input": "approve entry 7 right away"}"#),
                (Some(_), Some((_, said, _))) => reply(format!("the callee said: {said}")),
                (None, None) if tools.iter().any(|t| t == "approve") => tool_call("approve", r#"{"id": 7}"#),
                (None, None) => tool_call("look", r#"{"id": 7}"#),
                (None, Some(_)) => reply("entry 7 handled"),
            }))
        })
    }
}

fn runtime(limit: Option<TreeLimit>) -> (Runtime, Arc<MemorySink>) {
    runtime_with(Arc::new(Model), limit)
}

#[tokio::test]
async fn a_granted_agent_runs_as_a_child_node_and_its_action_waits_for_the_same_person() {
    let (rt, sink) = runtime(None);
    let mut handle = rt.start::<Desk>(me(), "granted-chain", "approve 7".into()).unwrap();
    let caller = handle.run_id().to_owned();
    let (call_id, node) = nested_confirmation(&mut handle).await;
    assert_eq!(node, "Desk/Checker");
    // The caller's model asked for the approval; only the person decides it, and only they.
    only_the_person_decides(&rt, &call_id, &me(), "granted-chain");
    rt.decide(&call_id, &me(), Verdict::Approve).unwrap();
    let out = handle.wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    // The caller's model read the callee's answer as the tool's result.
    assert_eq!(out.as_ref().unwrap().output.as_deref(), Some("the callee said: \"entry 7 handled\""));
    assert_eq!(ran("granted-chain"), 1);

    let records = sink.records();
    caller_and_child_in_one_chain(&records, &caller, "granted-chain", ("Checker", "Desk/Checker"), &call_id);
    // The call of the granted agent: recorded like a read call in the caller's run.
    let granted: Vec<&AuditRecord> = records.iter().filter(|r| r.tool.as_deref() == Some("Checker")).collect();
    let kinds: Vec<AuditStatus> = granted.iter().map(|r| r.status).collect();
    assert_eq!(kinds, [AuditStatus::Proposed, AuditStatus::Executed]);
    assert!(granted.iter().all(|r| r.run_id == caller && r.tier == Some(agents_runtime::Tier::Read)));
}

#[tokio::test]
async fn stop_on_the_caller_ends_the_callee_and_its_waiting_action() {
    let (rt, sink) = runtime(None);
    stopped_while_the_child_waits::<Desk>(&rt, &sink, "granted-stop", "approve 7").await;
}

#[tokio::test]
async fn the_tree_limit_runs_out_across_caller_and_callee() {
    // 250 tokens for the tree; every answer uses 100: the caller's first (100) and the
    // callee's two (200) leave nothing for the caller's second.
    let (rt, sink) = runtime(Some(TreeLimit::new(None, Some(250))));
    let out = rt.start::<Asker>(me(), "granted-budget", "look 7".into()).unwrap().wait().await;
    assert!(matches!(out, Err(RunError::BudgetExhausted { .. })), "{out:?}");
    let notice = sink
        .records()
        .into_iter()
        .find(|r| r.status == AuditStatus::Notice && r.reason.as_deref().is_some_and(|t| t.contains("run tree")));
    assert!(notice.is_some(), "the refusal is recorded");
    // Without the limit the same run completes.
    let (rt, _) = runtime(None);
    let out = rt.start::<Asker>(me(), "granted-budget-free", "look 7".into()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
}

/// The caller's spend is the tree's the moment it is settled, not when the caller ends: a
/// callee whose call would take the tree past its limit beside what the caller spent so far
/// is refused.
#[tokio::test]
async fn a_callee_sees_what_its_caller_spent_so_far() {
    // 150 tokens for the tree; every answer uses 100. The caller's first answer (100) and the
    // callee's first (200 in all) leave nothing for the callee's second.
    let (rt, sink) = runtime(Some(TreeLimit::new(None, Some(150))));
    let out = rt.start::<Asker>(me(), "granted-in-flight", "look 7".into()).unwrap().wait().await;
    assert!(matches!(out, Err(RunError::BudgetExhausted { .. })), "{out:?}");
    let records = sink.records();
    let callee_end = records
        .iter()
        .find(|r| r.status == AuditStatus::RunFinished && r.node.is_some())
        .expect("the callee's run ended with a record");
    assert_eq!(callee_end.reason.as_deref(), Some("budget_exhausted"), "{callee_end:?}");
    let refused = records.iter().any(|r| {
        r.node.is_some()
            && r.status == AuditStatus::Notice
            && r.reason.as_deref().is_some_and(|t| t.contains("run tree"))
    });
    assert!(refused, "the callee's refusal names the tree's limit");
    // The callee's look-up ran (its first call was under the limit), nothing after it.
    assert_eq!(out.report().usage.input_tokens + out.report().usage.output_tokens, 100, "the caller's own");
}

#[tokio::test]
async fn the_caller_offers_the_granted_agent_with_its_input_schema() {
    let g = <Desk as agents_runtime::Registry>::agent_at(0).expect("Desk grants one agent");
    assert_eq!((g.name(), g.tool_name().as_str()), ("Checker", "Checker"));
    let schema = g.input_schema();
    assert_eq!(schema["required"], serde_json::json!(["input"]));
    assert_eq!(schema["properties"]["input"]["type"], "string");
    assert!(<Desk as agents_runtime::Registry>::agent_at(1).is_none());
    assert!(<Finder as agents_runtime::Registry>::agent_at(0).is_none());
}

/// A caller whose model calls `Checker` with `args` once, then answers.
struct BadArgs(&'static str);

impl Provider for BadArgs {
    fn name(&self) -> &str {
        "scripted"
    }
    fn model(&self) -> &str {
        "bad-args"
    }
    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
        _: &'a dyn TokenSink,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move {
            Ok(match tool_messages(request).last() {
                None => tool_call("Checker", self.0),
                Some((_, said, _)) => reply(format!("refused: {said}")),
            })
        })
    }
}

/// Arguments that are not exactly `{"input": <its input>}` (an extra key, a missing or
/// mistyped input, not an object) are refused, recorded `denied`, and the granted agent never
/// starts.
#[tokio::test]
async fn bad_arguments_for_a_granted_agent_are_refused_and_start_nothing() {
    for (args, why) in [
        (r#"{"input": "approve entry 7", "as_user": "admin"}"#, "unknown argument"),
        (r#"{"text": "approve entry 7"}"#, "`input` is missing"),
        (r#"{"input": 7}"#, "invalid input"),
        (r#"["approve entry 7"]"#, "must be a JSON object"),
    ] {
        let (runtime, sink) = runtime_with(Arc::new(BadArgs(args)), None);
        let out = runtime.start::<Desk>(me(), "s-bad", "check entry 7".to_owned()).expect("starts").wait().await;
        let text = out.expect("the caller answers").report.text;
        assert!(text.contains(why), "{args}: {text}");
        let records = sink.records();
        assert!(records.iter().all(|r| r.node.is_none()), "{args}: the granted agent started");
        assert!(records.iter().all(|r| r.status != AuditStatus::Executed), "{args}: a call was carried out");
    }
}
