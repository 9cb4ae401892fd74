//! Availability (grants ∩ role ∩ enabled, snapshotted at start), the strict argument parse,
//! and handoff tools, each proven through a whole run with the scripted provider.

use crate::run_common;

use agents_runtime::RunResultExt as _;
use agents_runtime::audit::{AuditStatus, MemorySink};
use agents_runtime::events::Event;
use agents_runtime::provider::ScriptedProvider;
use agents_runtime::provider::scripted::{reply, tool_call, tool_calls};
use agents_runtime::run::{DisabledFallback, DisabledTools, StartError};
use agents_runtime::tool::Handler;
use agents_runtime::{Principal, Registry, RoleMap, RunStatus, Runtime, ToolContext, agent, permissions, tool};
use futures::future::BoxFuture;
use run_common::*;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

permissions! {
    pub mod perms { athlete.read, injury.read, vitals.read }
}

/// Lists athletes.
#[tool(permission = perms::athlete::read)]
async fn list_athletes(cx: &ToolContext<'_>) -> Result<Vec<String>, String> {
    bump(cx.session_id());
    Ok(vec!["ath-1".into()])
}

/// Lists injuries.
#[tool(permission = perms::injury::read)]
async fn list_injuries(cx: &ToolContext<'_>) -> Result<Vec<String>, String> {
    bump(cx.session_id());
    Ok(vec!["inj-1".into()])
}

/// Reads vitals; in the snapshot test it also switches `list_athletes` off for later runs.
#[tool(permission = perms::vitals::read)]
async fn get_vitals(cx: &ToolContext<'_>) -> Result<String, String> {
    bump(cx.session_id());
    if cx.session_id() == "snapshot" {
        SWITCHED_OFF.lock().unwrap().insert("list_athletes".to_owned());
    }
    Ok("hr 60".into())
}

/// Logs a training session.
#[tool(permission = perms::athlete::read)]
async fn log_session(cx: &ToolContext<'_>, count: u64, load: f64, note: String) -> Result<String, String> {
    bump(cx.session_id());
    saw(cx.session_id(), format!("{count}/{load}/{note}"));
    Ok("logged".into())
}

/// Resets a password: a person at the service desk does this.
#[tool(permission = public, handoff)]
fn reset_password(user: String);

agent! {
    /// Clinic assistant.
    pub struct Clinic;
    tools: [list_athletes, list_injuries, get_vitals, log_session, reset_password],
}

static SWITCHED_OFF: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

fn roles() -> RoleMap {
    RoleMap::new()
        .role("physio", ["athlete.read", "injury.read", "vitals.read"])
        .role("coach", ["athlete.read", "vitals.read"])
}

fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// A disable list whose store is down.
struct Unreadable;
impl DisabledTools for Unreadable {
    fn disabled(&self) -> BoxFuture<'_, Result<BTreeSet<String>, String>> {
        Box::pin(async { Err("settings table unavailable".to_owned()) })
    }
}

/// A disable list read from shared state, counting reads.
struct Live {
    reads: AtomicUsize,
}
impl DisabledTools for Live {
    fn disabled(&self) -> BoxFuture<'_, Result<BTreeSet<String>, String>> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        let set = SWITCHED_OFF.lock().unwrap().clone();
        Box::pin(async move { Ok(set) })
    }
}

fn denied_reason(audit: &MemorySink, tool: &str) -> String {
    let d = with_status(audit, AuditStatus::Denied);
    let r = d
        .iter()
        .find(|r| r.tool.as_deref() == Some(tool))
        .unwrap_or_else(|| panic!("no denied record for `{tool}`: {d:?}"));
    r.reason.clone().expect("a denied record carries its reason")
}

#[tokio::test]
async fn a_granted_tool_the_role_lacks_is_denied_and_nothing_runs() {
    let audit = Arc::new(MemorySink::new());
    let provider = Arc::new(ScriptedProvider::new([tool_call("list_injuries", "{}"), reply("I cannot see injuries.")]));
    let rt = Runtime::builder(audit.clone(), provider.clone()).roles(roles()).build();
    let run = rt.start::<Clinic>(Principal::new("coach-1", "org1", "coach"), "lacks", "injuries?".into()).unwrap();
    let out = run.wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    assert_eq!(ran("lacks"), 0, "the handler must not run");
    let reason = denied_reason(&audit, "list_injuries");
    assert!(reason.contains("not available to you"), "{reason}");
    assert!(with_status(&audit, AuditStatus::Proposed).is_empty());
    assert!(with_status(&audit, AuditStatus::Executed).is_empty());
    let reqs = provider.requests();
    assert!(!offered(&reqs[0]).contains(&"list_injuries".to_owned()));
    let told = tool_messages(&reqs[1]);
    assert_eq!(told.len(), 1);
    assert!(told[0].2, "the model is told it is an error");
    assert!(told[0].1.contains("not available to you"), "{told:?}");
}

#[tokio::test]
async fn an_unknown_name_is_denied() {
    let audit = Arc::new(MemorySink::new());
    let provider =
        Arc::new(ScriptedProvider::new([tool_call("drop_database", r#"{"really": true}"#), reply("no such tool")]));
    let rt = Runtime::builder(audit.clone(), provider.clone()).roles(roles()).build();
    let mut run = rt.start::<Clinic>(Principal::new("p1", "org1", "physio"), "unknown", "drop it".into()).unwrap();
    let events = events_until_done(&mut run).await;
    let out = run.wait().await;
    assert_eq!(out.status(), RunStatus::Completed);
    let reason = denied_reason(&audit, "drop_database");
    assert_eq!(reason, "unknown tool `drop_database`");
    assert!(events.iter().any(|e| matches!(e, Event::ToolDenied { tool, .. } if tool == "drop_database")));
    assert!(tool_messages(&provider.requests()[1])[0].1.contains("unknown tool"));
}

#[tokio::test]
async fn the_disable_list_only_removes() {
    let audit = Arc::new(MemorySink::new());
    let provider = Arc::new(ScriptedProvider::new([
        tool_calls([("get_vitals", "{}"), ("list_injuries", "{}"), ("list_athletes", "{}")]),
        reply("done"),
    ]));
    // The list names a tool the coach lacks (list_injuries): that must not add it.
    let off: BTreeSet<String> = ["get_vitals", "list_injuries"].iter().map(|s| s.to_string()).collect();
    let rt = Runtime::builder(audit.clone(), provider.clone()).roles(roles()).disabled_tools(Arc::new(off)).build();
    let run = rt.start::<Clinic>(Principal::new("c1", "org1", "coach"), "disable", "go".into()).unwrap();
    let out = run.wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    assert_eq!(offered(&provider.requests()[0]), names(&["list_athletes", "log_session", "reset_password"]));
    assert!(denied_reason(&audit, "get_vitals").contains("not available"));
    assert!(denied_reason(&audit, "list_injuries").contains("not available"));
    assert_eq!(ran("disable"), 1, "only list_athletes ran");
    let executed = with_status(&audit, AuditStatus::Executed);
    assert_eq!(executed.len(), 1);
    assert_eq!(executed[0].tool.as_deref(), Some("list_athletes"));
}

#[tokio::test]
async fn an_unreadable_disable_list_falls_back_to_the_role_only_set_with_a_notice() {
    let audit = Arc::new(MemorySink::new());
    let provider = Arc::new(ScriptedProvider::new([tool_call("get_vitals", "{}"), reply("hr 60")]));
    let rt =
        Runtime::builder(audit.clone(), provider.clone()).roles(roles()).disabled_tools(Arc::new(Unreadable)).build();
    let run = rt.start::<Clinic>(Principal::new("c1", "org1", "coach"), "fallback", "vitals".into()).unwrap();
    let out = run.wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    assert_eq!(
        offered(&provider.requests()[0]),
        names(&["get_vitals", "list_athletes", "log_session", "reset_password"])
    );
    let notices = with_status(&audit, AuditStatus::Notice);
    assert_eq!(notices.len(), 1, "{notices:?}");
    let reason = notices[0].reason.as_deref().unwrap();
    assert!(reason.contains("disable list unreadable") && reason.contains("role-only"), "{reason}");
    assert!(reason.contains("settings table unavailable"), "{reason}");
    assert_eq!(ran("fallback"), 1);
}

#[tokio::test]
async fn fail_closed_offers_no_tools() {
    let audit = Arc::new(MemorySink::new());
    let provider = Arc::new(ScriptedProvider::new([tool_call("list_athletes", "{}"), reply("none")]));
    let rt = Runtime::builder(audit.clone(), provider.clone())
        .roles(roles())
        .disabled_tools(Arc::new(Unreadable))
        .disabled_fallback(DisabledFallback::FailClosed)
        .build();
    let run = rt.start::<Clinic>(Principal::new("p1", "org1", "physio"), "closed", "list".into()).unwrap();
    let out = run.wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    assert!(provider.requests()[0].tools.is_empty());
    assert!(denied_reason(&audit, "list_athletes").contains("not available"));
    assert_eq!(ran("closed"), 0);
    let notices = with_status(&audit, AuditStatus::Notice);
    assert_eq!(notices.len(), 1);
    assert!(notices[0].reason.as_deref().unwrap().contains("no tools"), "{notices:?}");
    let started = &with_status(&audit, AuditStatus::RunStarted)[0];
    assert_eq!(started.result.as_ref().and_then(|r| r.value()).unwrap()["available_tools"], serde_json::json!([]));
}

#[tokio::test]
async fn the_snapshot_is_grants_and_role_and_enabled_taken_at_start() {
    let audit = Arc::new(MemorySink::new());
    let provider = Arc::new(ScriptedProvider::new([
        // get_vitals switches list_athletes off in the settings while this run is going.
        tool_call("get_vitals", "{}"),
        tool_call("list_athletes", "{}"),
        reply("first turn done"),
        tool_call("list_athletes", "{}"),
        reply("second turn done"),
    ]));
    let live = Arc::new(Live { reads: AtomicUsize::new(0) });
    let rt = Runtime::builder(audit.clone(), provider.clone()).roles(roles()).disabled_tools(live.clone()).build();
    let me = Principal::new("c1", "org1", "coach");

    let out = rt.start::<Clinic>(me.clone(), "snapshot", "one".into()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    let reqs = provider.requests();
    // grants ∩ role: the coach lacks injury.read, so list_injuries is not offered.
    let first = names(&["get_vitals", "list_athletes", "log_session", "reset_password"]);
    assert_eq!(offered(&reqs[0]), first);
    assert_eq!(offered(&reqs[2]), first, "the snapshot does not change within a run");
    assert_eq!(ran("snapshot"), 2, "list_athletes still ran in the run that started before the switch");
    assert_eq!(live.reads.load(Ordering::SeqCst), 1, "the disable list is read once, at start");

    let out = rt.start::<Clinic>(me, "snapshot", "two".into()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::Completed);
    let reqs = provider.requests();
    assert_eq!(offered(&reqs[3]), names(&["get_vitals", "log_session", "reset_password"]));
    assert_eq!(ran("snapshot"), 2, "the next run took a new snapshot without it");
    assert!(denied_reason(&audit, "list_athletes").contains("not available"));
    let starts = with_status(&audit, AuditStatus::RunStarted);
    assert_eq!(starts[0].result.as_ref().and_then(|r| r.value()).unwrap()["available_tools"], serde_json::json!(first));
}

#[tokio::test]
async fn strict_parse_refuses_ambiguous_and_ill_typed_arguments() {
    let cases: &[(&str, &str)] = &[
        (r#"{"count": 1, "count": 2, "load": 1.0, "note": "a"}"#, "duplicate key `count`"),
        (r#"{"count": 1, "load": NaN, "note": "a"}"#, "not valid JSON"),
        (r#"{"count": 1, "load": Infinity, "note": "a"}"#, "not valid JSON"),
        (r#"{"count": 1, "load": -Infinity, "note": "a"}"#, "not valid JSON"),
        (r#"{"count": 1, "load": 1e400, "note": "a"}"#, "not a finite 64-bit float"),
        (r#"{"count": 9007199254740993, "load": 1.0, "note": "a"}"#, "beyond ±2^53"),
        (r#"{"count": 1, "load": 1.0, "note": "a", "admin": true}"#, "unknown field `admin`"),
        (r#"{"count": "one", "load": 1.0, "note": "a"}"#, "invalid type"),
        (r#"{"count": 1, "load": 1.0}"#, "missing field `note`"),
        (r#"{"count": 1, "load": 1.0, "note": "a"} {"count": 2}"#, "unexpected characters after"),
    ];
    let mut calls: Vec<(&str, &str)> = cases.iter().map(|(args, _)| ("log_session", *args)).collect();
    calls.push(("log_session", r#"{"count": 9007199254740992, "load": 1.5, "note": "ok"}"#));
    let audit = Arc::new(MemorySink::new());
    let n = calls.len();
    let provider = Arc::new(ScriptedProvider::new([tool_calls(calls), reply("done")]));
    let rt = Runtime::builder(audit.clone(), provider.clone()).roles(roles()).max_tool_calls_per_answer(n).build();
    let out = rt.start::<Clinic>(Principal::new("p1", "org1", "physio"), "strict", "log".into()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");

    assert_eq!(ran("strict"), 1, "only the well-formed call ran");
    assert_eq!(seen_in("strict"), vec!["9007199254740992/1.5/ok".to_owned()]);
    let told = tool_messages(&provider.requests()[1]);
    assert_eq!(told.len(), cases.len() + 1);
    for (i, (args, expected)) in cases.iter().enumerate() {
        let call_id = format!("call_{}", i + 1);
        assert_eq!(call_statuses(&audit, &call_id), vec![AuditStatus::Denied], "{args}");
        let rec = audit.records().into_iter().find(|r| r.call_id.as_deref() == Some(call_id.as_str())).unwrap();
        let reason = rec.reason.unwrap();
        assert!(reason.starts_with("invalid arguments for `log_session`"), "{args}: {reason}");
        assert!(reason.contains(expected), "{args}: expected `{expected}` in `{reason}`");
        assert!(told[i].2 && told[i].1.contains(expected), "the model is told why: {:?}", told[i]);
    }
    let last = format!("call_{}", cases.len() + 1);
    assert_eq!(call_statuses(&audit, &last), vec![AuditStatus::Proposed, AuditStatus::Executed]);
}

#[tokio::test]
async fn a_handoff_becomes_a_record_and_nothing_runs() {
    assert!(matches!(Clinic::entry("reset_password").unwrap().handler(), Handler::Handoff(_)));
    let audit = Arc::new(MemorySink::new());
    let provider = Arc::new(ScriptedProvider::new([
        tool_call("reset_password", r#"{"user": "ann"}"#),
        reply("A person will reset it."),
    ]));
    let rt = Runtime::builder(audit.clone(), provider.clone()).roles(roles()).build();
    let mut run =
        rt.start::<Clinic>(Principal::new("c1", "org1", "coach"), "handoff", "reset my password".into()).unwrap();
    let events = events_until_done(&mut run).await;
    let out = run.wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");

    assert_eq!(call_statuses(&audit, "call_1"), vec![AuditStatus::HandedOff]);
    let rec = &with_status(&audit, AuditStatus::HandedOff)[0];
    assert_eq!(rec.tool.as_deref(), Some("reset_password"));
    // The record names the argument and keeps a keyed digest of its value, not the value.
    assert!(rec.values_omitted(), "{rec:?}");
    assert!(rec.args.as_ref().unwrap()["user"]["hmac_sha256"].is_string());
    assert!(!audit.to_jsonl().contains("ann"));
    let handoff = events.iter().find_map(|e| match e {
        Event::Handoff { record, .. } => Some(record.clone()),
        _ => None,
    });
    let handoff = handoff.expect("a handoff event");
    assert_eq!(
        (handoff.tool.as_str(), handoff.user_id.as_str(), handoff.org_id.as_str()),
        ("reset_password", "c1", "org1")
    );
    assert_eq!(handoff.session_id, "handoff");
    let told = tool_messages(&provider.requests()[1]);
    let result: serde_json::Value = serde_json::from_str(&told[0].1).unwrap();
    assert_eq!(result["status"], "handed_off");
    assert!(result["message"].as_str().unwrap().contains("nothing ran"), "{result}");
    assert!(!told[0].2);
    assert!(!events.iter().any(|e| matches!(e, Event::ConfirmRequired { .. } | Event::ToolResult { .. })));
}

#[tokio::test]
async fn a_session_belongs_to_the_user_who_opened_it() {
    let provider = Arc::new(ScriptedProvider::new([reply("hi")]));
    let rt = Runtime::builder(Arc::new(MemorySink::new()), provider).roles(roles()).build();
    let out = rt.start::<Clinic>(Principal::new("p1", "org1", "physio"), "owned", "hi".into()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::Completed);
    let colleague = Principal::new("p2", "org1", "physio");
    let same_id_other_org = Principal::new("p1", "org2", "physio");
    for other in [colleague, same_id_other_org] {
        let err = rt.start::<Clinic>(other.clone(), "owned", "show me the history".into()).unwrap_err();
        assert_eq!(err, StartError::SessionNotYours("owned".into()));
        assert!(matches!(rt.direct::<Clinic>(other, "owned", None).await, Err(StartError::SessionNotYours(_))));
    }
}
