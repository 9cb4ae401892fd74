//! A handoff tool that names its target (`#[tool(handoff = Target)]`) at run time: the call is
//! recorded `handed_off` naming the target, and the target starts as a child node of the
//! caller's run (the caller's principal, session, stop and tree allowance; its records in the
//! same chain with the caller's run id and the path `caller/target`; its events inside
//! `Event::Node`); the caller's turn ends with the target's answer as its output. The target's
//! action waits for the same person, whatever the caller's model asked.

use crate::desk_common::*;
use crate::run_common::*;

use agents_runtime::RunResultExt as _;
use agents_runtime::audit::{AuditRecord, AuditResult, AuditStatus, MemorySink};
use agents_runtime::compose::TreeLimit;
use agents_runtime::events::Event;
use agents_runtime::provider::scripted::{reply, tool_call, tool_calls};
use agents_runtime::provider::{ChatRequest, ChatResponse, Provider, ProviderError, TokenSink};
use agents_runtime::{BoxFuture, RunError, RunStatus, Runtime, Verdict, agent, tool};
use std::sync::Arc;

/// Hands the request to the checker, who answers it.
///
/// # Arguments
///
/// * `request` - the request
#[tool(permission = perms::desk::read, handoff = Checker)]
fn to_checker(request: String);

/// Hands the request to the finder, who answers it.
///
/// # Arguments
///
/// * `request` - the request
#[tool(permission = perms::desk::read, handoff = Finder)]
fn to_finder(request: String);

agent! {
    /// Answers the desk, handing approvals to the checker.
    pub struct Front;
    tools: [look, to_checker],
    ceiling: [perms::desk::read, perms::desk::write],
}

agent! {
    /// Answers the desk, handing look-ups to the finder.
    pub struct Asker;
    tools: [look, to_finder],
}

/// Every model, by the tools its request offers: a caller (offered a handoff tool) looks
/// entry 7 up, then copies what the result says into the handoff (a gullible caller: the
/// request is a tool result's, not the person's); a target approves (or looks up) entry 7,
/// then answers. A caller that reads a handoff's result speaks for itself (it must not: the
/// turn ends with the target's answer). Every answer uses 100 tokens.
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
            let handoff = tools.iter().find(|t| t.starts_with("to_"));
            Ok(used(match (handoff, answers.last()) {
                (Some(_), None) => tool_call("look", r#"{"id": 7}"#),
                (Some(h), Some((name, said, _))) if name == "look" => {
                    tool_call(h.as_str(), serde_json::json!({ "request": said }).to_string())
                }
                (Some(_), Some(_)) => reply("the caller speaks after the handoff"),
                (None, None) if tools.iter().any(|t| t == "approve") => tool_call("approve", r#"{"id": 7}"#),
                (None, None) => tool_call("look", r#"{"id": 8}"#),
                (None, Some(_)) => reply("entry 7 handled"),
            }))
        })
    }
}

fn runtime(limit: Option<TreeLimit>) -> (Runtime, Arc<MemorySink>) {
    runtime_with(Arc::new(Model), limit)
}

#[tokio::test]
async fn a_handoff_starts_its_target_as_a_child_whose_action_waits_for_the_same_person() {
    let (rt, sink) = runtime(None);
    let mut handle = rt.start::<Front>(me(), "handoff-chain", "check 7".into()).unwrap();
    let caller = handle.run_id().to_owned();
    let (call_id, node) = nested_confirmation(&mut handle).await;
    assert_eq!(node, "Front/Checker");
    // The caller's model copied "approve it" from a tool result; only the person decides.
    only_the_person_decides(&rt, &call_id, &me(), "handoff-chain");
    rt.decide(&call_id, &me(), Verdict::Approve).unwrap();
    let out = handle.wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    // The run's output is the target's answer; the caller's model did not speak again.
    assert_eq!(out.as_ref().unwrap().output.as_deref(), Some("entry 7 handled"));
    assert_eq!(ran("handoff-chain"), 1);

    let records = sink.records();
    caller_and_child_in_one_chain(&records, &caller, "handoff-chain", ("Checker", "Front/Checker"), &call_id);
    // The handoff: `handed_off` in the caller's run, naming the target by name and hash.
    let handed: Vec<&AuditRecord> = records.iter().filter(|r| r.status == AuditStatus::HandedOff).collect();
    assert_eq!(handed.len(), 1);
    assert_eq!((handed[0].run_id.as_str(), handed[0].tool.as_deref()), (caller.as_str(), Some("to_checker")));
    let Some(AuditResult::Value(target)) = &handed[0].result else { panic!("no target: {:?}", handed[0]) };
    assert_eq!(target["target"], serde_json::json!({ "name": "Checker", "sha256": Checker::MANIFEST_SHA256 }));
}

#[tokio::test]
async fn the_handoff_event_names_the_target_and_the_targets_events_come_inside_node() {
    let (rt, _) = runtime(None);
    let mut handle = rt.start::<Asker>(me(), "handoff-events", "look 7".into()).unwrap();
    let events = events_until_done(&mut handle).await;
    let target = events.iter().find_map(|e| match e {
        Event::Handoff { record, .. } => Some(record.target.clone()),
        _ => None,
    });
    assert_eq!(target, Some(Some("Finder".to_owned())));
    let done_inside = events.iter().position(|e| {
        matches!(e, Event::Node { node, event, .. } if node == "Asker/Finder" && matches!(**event, Event::Done { .. }))
    });
    let done = events.iter().position(|e| matches!(e, Event::Done { .. }));
    assert!(done_inside.expect("the target's done, forwarded") < done.expect("the caller's done"));
    let out = handle.wait().await;
    assert_eq!(out.unwrap().output.as_deref(), Some("entry 7 handled"));
}

#[tokio::test]
async fn stop_on_the_caller_ends_the_target_and_its_waiting_action() {
    let (rt, sink) = runtime(None);
    stopped_while_the_child_waits::<Front>(&rt, &sink, "handoff-stop", "check 7").await;
}

/// Caller and target share the tree's limit: with 250 tokens, the caller's two answers (200)
/// and the target's first (300 in all) leave the target nothing for its second, and the
/// refusal ends the caller's run, naming the node. Were the caller's spend before the handoff
/// not counted, the target would have 250 of its own and the run would complete.
#[tokio::test]
async fn the_tree_limit_bounds_the_target_and_its_refusal_ends_the_run() {
    let (rt, sink) = runtime(Some(TreeLimit::new(None, Some(250))));
    let out = rt.start::<Asker>(me(), "handoff-budget", "look 7".into()).unwrap().wait().await;
    match &out {
        Err(RunError::Node { path, message, .. }) => {
            assert_eq!(path, "Asker/Finder");
            assert!(message.contains("ended without an answer"), "{message}");
        }
        other => panic!("the target's refusal ends the run: {other:?}"),
    }
    let notice = sink
        .records()
        .into_iter()
        .find(|r| r.status == AuditStatus::Notice && r.reason.as_deref().is_some_and(|t| t.contains("run tree")));
    assert!(notice.expect("the refusal is recorded").node.is_some(), "inside the target");
    // Without the limit the same run completes.
    let (rt, _) = runtime(None);
    let out = rt.start::<Asker>(me(), "handoff-budget-free", "look 7".into()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
}

/// A caller whose model answers with `calls` at once, then speaks.
struct Calls(Vec<(&'static str, &'static str)>);

impl Provider for Calls {
    fn name(&self) -> &str {
        "scripted"
    }
    fn model(&self) -> &str {
        "calls"
    }
    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
        _: &'a dyn TokenSink,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move {
            let offered = offered(request);
            Ok(match tool_messages(request).last() {
                None if offered.iter().any(|t| t == "to_finder") => tool_calls(self.0.clone()),
                None => tool_call("look", r#"{"id": 8}"#),
                Some((_, said, _)) if offered.iter().any(|t| t == "to_finder") => reply(format!("refused: {said}")),
                Some(_) => reply("entry 8 found"),
            })
        })
    }
}

/// An argument that is not the target's input (mistyped, an extra key, another key, not an
/// object) is refused, recorded `denied`, and the target never starts.
#[tokio::test]
async fn a_bad_argument_starts_nothing() {
    for args in [r#"{"request": 7}"#, r#"{"request": "x", "as_user": "admin"}"#, r#"{"input": "x"}"#, r#"["x"]"#] {
        let (rt, sink) = runtime_with(Arc::new(Calls(vec![("to_finder", args)])), None);
        let out = rt.start::<Asker>(me(), "handoff-bad", "look 8".to_owned()).unwrap().wait().await;
        let text = out.expect("the caller answers").report.text;
        assert!(text.starts_with("refused:"), "{args}: {text}");
        let records = sink.records();
        assert!(records.iter().all(|r| r.node.is_none()), "{args}: the target started");
        assert!(records.iter().all(|r| r.status != AuditStatus::HandedOff), "{args}: handed off");
        assert!(records.iter().any(|r| r.status == AuditStatus::Denied), "{args}: not denied");
    }
}

/// Calls after a handoff in the same answer (another handoff, a read) are refused and run
/// nothing; the turn ends with the target's answer. Calls before it ran.
#[tokio::test]
async fn calls_after_a_handoff_in_the_same_answer_are_refused() {
    let calls = vec![
        ("look", r#"{"id": 1}"#),
        ("to_finder", r#"{"request": "find 8"}"#),
        ("to_finder", r#"{"request": "find 9"}"#),
        ("look", r#"{"id": 2}"#),
    ];
    let (rt, sink) = runtime_with(Arc::new(Calls(calls)), None);
    let out = rt.start::<Asker>(me(), "handoff-twice", "look 8".to_owned()).unwrap().wait().await;
    assert_eq!(out.unwrap().output.as_deref(), Some("entry 8 found"));
    let records = sink.records();
    let caller: Vec<(Option<&str>, AuditStatus)> = records
        .iter()
        .filter(|r| r.node.is_none() && r.tool.is_some())
        .map(|r| (r.tool.as_deref(), r.status))
        .collect();
    assert_eq!(
        caller,
        [
            (Some("look"), AuditStatus::Proposed),
            (Some("look"), AuditStatus::Executed),
            (Some("to_finder"), AuditStatus::HandedOff),
            (Some("to_finder"), AuditStatus::Denied),
            (Some("look"), AuditStatus::Denied),
        ]
    );
    let denied = records.iter().filter(|r| r.status == AuditStatus::Denied);
    assert!(denied.into_iter().all(|r| r.reason.as_deref().is_some_and(|t| t.contains("handed the run"))));
    let started = records.iter().filter(|r| r.status == AuditStatus::RunStarted && r.node.is_some()).count();
    assert_eq!(started, 1, "one target started");
}

#[test]
fn the_manifest_names_the_target_and_the_registry_starts_it() {
    let m: serde_json::Value = serde_json::from_str(Front::MANIFEST).unwrap();
    let tool = m["tools"].as_array().unwrap().iter().find(|t| t["name"] == "to_checker").unwrap();
    assert_eq!(tool["handoff"], serde_json::json!({ "name": "Checker", "sha256": Checker::MANIFEST_SHA256 }));
    assert_eq!(tool["tier"], "handoff");
    let look = m["tools"].as_array().unwrap().iter().find(|t| t["name"] == "look").unwrap();
    assert!(look.get("handoff").is_none(), "absent for other tools");
    let g = <Front as agents_runtime::Registry>::handoff_to("to_checker").expect("Front hands to_checker to Checker");
    assert_eq!(g.name(), "Checker");
    assert!(<Front as agents_runtime::Registry>::handoff_to("look").is_none());
    agents_runtime::tool::verify_registry::<Front>().unwrap();
}
