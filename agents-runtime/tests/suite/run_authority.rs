//! Who a run acts for, read again: with a principal source, a role revoked between two calls
//! of one run stops the second, a decision on a proposal whose user was deactivated is refused
//! and the proposal ends, and a resumption after a revocation runs nothing. Without one, the
//! run holds the principal it started with.

use crate::run_common;

use agents_runtime::RunResultExt as _;
use agents_runtime::audit::{AuditStatus, MemorySink};
use agents_runtime::authority::PrincipalSource;
use agents_runtime::provider::ScriptedProvider;
use agents_runtime::provider::scripted::{reply, tool_call};
use agents_runtime::run::DecisionError;
use agents_runtime::{
    BoxFuture, ConfirmMode, Principal, RoleMap, RunStatus, Runtime, ToolContext, Verdict, agent, permissions, tool,
};
use run_common::*;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

permissions! {
    pub mod perms { chart.read, chart.sign }
}

/// The roles of the directory, by user id: a user missing from it is deactivated.
static DIRECTORY: LazyLock<Mutex<HashMap<String, String>>> = LazyLock::new(Default::default);
/// What the next read of a user's chart does to their entry in the directory (an administrator
/// acting while the run works): `Some(role)` sets the role, `None` deactivates.
static ON_READ: LazyLock<Mutex<HashMap<String, Option<String>>>> = LazyLock::new(Default::default);

fn set_role(user: &str, role: Option<&str>) {
    let mut directory = DIRECTORY.lock().unwrap();
    match role {
        Some(role) => directory.insert(user.to_owned(), role.to_owned()),
        None => directory.remove(user),
    };
}

/// The application's user directory as the runtime reads it.
struct Directory;

impl PrincipalSource for Directory {
    fn current<'a>(&'a self, held: &'a Principal) -> BoxFuture<'a, Result<Option<Principal>, String>> {
        let role = DIRECTORY.lock().unwrap().get(&held.user_id).cloned();
        Box::pin(async move { Ok(role.map(|role| Principal { role, ..held.clone() })) })
    }
}

/// Reads a chart.
///
/// # Arguments
///
/// * `patient` - the patient id
#[tool(permission = perms::chart::read)]
async fn read_chart(cx: &ToolContext<'_>, patient: u64) -> Result<String, String> {
    bump(cx.session_id());
    let change = ON_READ.lock().unwrap().remove(&cx.principal().user_id);
    if let Some(role) = change {
        set_role(&cx.principal().user_id, role.as_deref());
    }
    Ok(format!("chart {patient}"))
}

/// Signs a chart off.
///
/// # Arguments
///
/// * `patient` - the patient id
#[tool(permission = perms::chart::sign, mutating, title = "Sign the chart off")]
async fn sign_off(cx: &ToolContext<'_>, patient: u64) -> Result<String, String> {
    bump(cx.session_id());
    Ok(format!("signed {patient}"))
}

agent! {
    /// Clinic assistant.
    pub struct Clinic;
    tools: [read_chart, sign_off],
}

fn doctor(user: &str) -> Principal {
    set_role(user, Some("doctor"));
    Principal::new(user, "clinic", "doctor")
}

fn runtime(audit: Arc<MemorySink>, script: Vec<agents_runtime::provider::ChatResponse>, reread: bool) -> Runtime {
    let roles = RoleMap::new().role("doctor", ["chart.read", "chart.sign"]).role("nurse", ["chart.read"]);
    let b = Runtime::builder(audit, Arc::new(ScriptedProvider::new(script))).roles(roles);
    if reread { b.reread_principal(Arc::new(Directory)) } else { b }.build()
}

fn reads_twice() -> Vec<agents_runtime::provider::ChatResponse> {
    vec![tool_call("read_chart", r#"{"patient": 1}"#), tool_call("read_chart", r#"{"patient": 2}"#), reply("done")]
}

#[tokio::test]
async fn a_role_changed_between_two_calls_of_one_run_stops_the_second() {
    let audit = Arc::new(MemorySink::new());
    let rt = runtime(audit.clone(), reads_twice(), true);
    let me = doctor("auth-role-1");
    // The first read runs; the administrator then makes the user a nurse (who may read charts).
    ON_READ.lock().unwrap().insert(me.user_id.clone(), Some("nurse".into()));
    let out = rt.start::<Clinic>(me, "auth-role-1", "read two charts".into()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    assert_eq!(ran("auth-role-1"), 1, "the second call did not run");
    assert_eq!(with_status(&audit, AuditStatus::Executed).len(), 1);
    let denied = with_status(&audit, AuditStatus::Denied);
    assert_eq!(denied.len(), 1, "{denied:?}");
    let reason = denied[0].reason.as_deref().unwrap();
    assert!(reason.starts_with("authority changed: role `doctor` is now `nurse`"), "{reason}");
    assert_eq!(denied[0].tool.as_deref(), Some("read_chart"));
}

#[tokio::test]
async fn a_user_deactivated_between_two_calls_of_one_run_is_refused() {
    let audit = Arc::new(MemorySink::new());
    let rt = runtime(audit.clone(), reads_twice(), true);
    let me = doctor("auth-gone-1");
    ON_READ.lock().unwrap().insert(me.user_id.clone(), None);
    let out = rt.start::<Clinic>(me, "auth-gone-1", "read two charts".into()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    assert_eq!(ran("auth-gone-1"), 1);
    let denied = with_status(&audit, AuditStatus::Denied);
    assert_eq!(denied.len(), 1, "{denied:?}");
    assert!(denied[0].reason.as_deref().unwrap().contains("user `auth-gone-1` is no longer active"), "{denied:?}");
}

#[tokio::test]
async fn without_a_source_a_run_holds_the_principal_it_started_with() {
    let audit = Arc::new(MemorySink::new());
    let rt = runtime(audit.clone(), reads_twice(), false);
    let me = doctor("auth-snapshot-1");
    ON_READ.lock().unwrap().insert(me.user_id.clone(), None);
    let out = rt.start::<Clinic>(me, "auth-snapshot-1", "read two charts".into()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    assert_eq!(ran("auth-snapshot-1"), 2, "the snapshot is the default, documented");
    assert!(with_status(&audit, AuditStatus::Denied).is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_decision_on_a_proposal_whose_user_was_deactivated_is_refused_and_the_proposal_ends() {
    let audit = Arc::new(MemorySink::new());
    let script = vec![tool_call("sign_off", r#"{"patient": 3}"#), reply("done")];
    let rt = runtime(audit.clone(), script, true);
    let me = doctor("auth-wait-1");
    let mut run = rt.start::<Clinic>(me.clone(), "auth-wait-1", "sign it off".into()).unwrap();
    let call_id = confirm_required(&mut run).await;
    set_role(&me.user_id, None);
    let refused = rt.decide_async(&call_id, &me, Verdict::Approve, None).await.unwrap_err();
    let DecisionError::AuthorityChanged(reason) = &refused else { panic!("{refused:?}") };
    assert!(reason.contains("user `auth-wait-1` is no longer active"), "{reason}");
    assert!(refused.to_string().contains("the proposal ended"), "the decider is told why: {refused}");
    run.wait().await.expect("the run goes on after the ended proposal");
    rt.records_settled().await;
    assert_eq!(ran("auth-wait-1"), 0, "nothing ran");
    let statuses = call_statuses(&audit, &call_id);
    assert_eq!(statuses, [AuditStatus::Proposed, AuditStatus::Skipped], "exactly one final record");
    let ended = with_status(&audit, AuditStatus::Skipped);
    assert!(ended[0].reason.as_deref().unwrap().starts_with("authority changed"), "{ended:?}");
    assert!(rt.pending_decisions(&me).await.unwrap().is_empty(), "nothing left to decide");
    // A second attempt finds nothing to decide.
    let again = rt.decide_async(&call_id, &me, Verdict::Approve, None).await.unwrap_err();
    assert!(matches!(again, DecisionError::NotPending(_)), "{again:?}");
}

#[tokio::test(start_paused = true)]
async fn an_approval_heard_by_the_waiting_call_after_a_revocation_runs_nothing() {
    let audit = Arc::new(MemorySink::new());
    let script = vec![tool_call("sign_off", r#"{"patient": 4}"#), reply("done")];
    let rt = runtime(audit.clone(), script, true);
    let me = doctor("auth-wait-2");
    let mut run = rt.start::<Clinic>(me.clone(), "auth-wait-2", "sign it off".into()).unwrap();
    let call_id = confirm_required(&mut run).await;
    set_role(&me.user_id, Some("nurse"));
    // `decide` does not wait for the source: the waiting call reads it before it runs.
    rt.decide(&call_id, &me, Verdict::Approve).unwrap();
    run.wait().await.expect("the run goes on");
    assert_eq!(ran("auth-wait-2"), 0, "nothing ran");
    let statuses = call_statuses(&audit, &call_id);
    assert_eq!(statuses, [AuditStatus::Proposed, AuditStatus::Confirmed, AuditStatus::Failed]);
    let failed = with_status(&audit, AuditStatus::Failed);
    assert!(failed[0].reason.as_deref().unwrap().starts_with("authority changed: role `doctor` is now `nurse`"));
}

#[tokio::test(start_paused = true)]
async fn a_resumption_after_a_revocation_runs_nothing() {
    let audit = Arc::new(MemorySink::new());
    let script = vec![tool_call("sign_off", r#"{"patient": 5}"#), reply("done")];
    let roles = RoleMap::new().role("doctor", ["chart.read", "chart.sign"]);
    let rt = Runtime::builder(audit.clone(), Arc::new(ScriptedProvider::new(script)))
        .roles(roles)
        .confirm_mode(ConfirmMode::Conversational)
        .reread_principal(Arc::new(Directory))
        .build();
    let me = doctor("auth-resume-1");
    let out = rt.start::<Clinic>(me.clone(), "auth-resume-1", "sign it off".into()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::AwaitingConfirmation, "{out:?}");
    let call_id = rt.pending_decisions(&me).await.unwrap()[0].call_id.clone();
    // Approved while the authority held; revoked before anything carried it out.
    rt.decide_async(&call_id, &me, Verdict::Approve, None).await.unwrap();
    set_role(&me.user_id, Some("nurse"));
    let resumed = rt.resume_orphaned::<Clinic>().await.unwrap();
    assert_eq!(resumed.len(), 1, "{resumed:?}");
    assert_eq!(resumed[0].status, AuditStatus::Failed, "{resumed:?}");
    assert_eq!(ran("auth-resume-1"), 0, "nothing ran");
    let statuses = call_statuses(&audit, &call_id);
    assert_eq!(statuses, [AuditStatus::Proposed, AuditStatus::Confirmed, AuditStatus::Failed]);
    let failed = with_status(&audit, AuditStatus::Failed);
    assert!(failed[0].reason.as_deref().unwrap().starts_with("authority changed: role `doctor` is now `nurse`"));
    assert!(rt.resume_orphaned::<Clinic>().await.unwrap().is_empty(), "settled once");
}

#[tokio::test(start_paused = true)]
async fn a_call_refused_for_a_changed_role_ends_the_proposals_waiting_under_the_old_one() {
    let audit = Arc::new(MemorySink::new());
    let script = vec![
        tool_call("sign_off", r#"{"patient": 6}"#),
        tool_call("read_chart", r#"{"patient": 6}"#),
        reply("done"),
        reply("done"),
    ];
    let rt = runtime(audit.clone(), script, true);
    let me = doctor("auth-ends-1");
    let mut waiting = rt.start::<Clinic>(me.clone(), "auth-ends-1a", "sign it off".into()).unwrap();
    let call_id = confirm_required(&mut waiting).await;
    set_role(&me.user_id, Some("nurse"));
    // Another run of the same user, started under the old role, calls a tool.
    let out = rt.start::<Clinic>(me.clone(), "auth-ends-1b", "read it".into()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    waiting.wait().await.expect("the waiting run goes on");
    rt.records_settled().await;
    assert_eq!(ran("auth-ends-1a") + ran("auth-ends-1b"), 0, "nothing ran");
    assert_eq!(call_statuses(&audit, &call_id), [AuditStatus::Proposed, AuditStatus::Skipped]);
    let skipped = with_status(&audit, AuditStatus::Skipped);
    assert!(skipped[0].reason.as_deref().unwrap().starts_with("authority changed: role `doctor` is now `nurse`"));
    assert!(rt.pending_decisions(&me).await.unwrap().is_empty());
    let refused = rt.decide_async(&call_id, &me, Verdict::Approve, None).await.unwrap_err();
    assert!(matches!(refused, DecisionError::NotPending(_)), "{refused:?}");
}

#[tokio::test(start_paused = true)]
async fn a_yes_after_the_role_changed_runs_nothing_and_the_proposal_ends_once() {
    let audit = Arc::new(MemorySink::new());
    let script = vec![
        tool_call("sign_off", r#"{"patient": 7}"#),
        reply("please confirm"),
        tool_call("sign_off", r#"{"patient": 7}"#),
        reply("done"),
    ];
    let roles = RoleMap::new().role("doctor", ["chart.read", "chart.sign"]).role("nurse", ["chart.read"]);
    let rt = Runtime::builder(audit.clone(), Arc::new(ScriptedProvider::new(script)))
        .roles(roles)
        .confirm_mode(ConfirmMode::Conversational)
        .reread_principal(Arc::new(Directory))
        .build();
    let me = doctor("auth-yes-1");
    let out = rt.start::<Clinic>(me.clone(), "auth-yes-1", "sign it off".into()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::AwaitingConfirmation, "{out:?}");
    let call_id = rt.pending_decisions(&me).await.unwrap()[0].call_id.clone();
    set_role(&me.user_id, Some("nurse"));
    let out = rt.start::<Clinic>(me.clone(), "auth-yes-1", "yes".into()).unwrap().wait().await;
    assert_ne!(out.status(), RunStatus::Failed, "{out:?}");
    rt.records_settled().await;
    assert_eq!(ran("auth-yes-1"), 0, "nothing ran");
    let finals: Vec<_> = call_statuses(&audit, &call_id)
        .into_iter()
        .filter(|s| !matches!(s, AuditStatus::Proposed | AuditStatus::Confirmed))
        .collect();
    assert_eq!(finals.len(), 1, "exactly one final record: {:?}", call_statuses(&audit, &call_id));
    let ended: Vec<_> =
        audit.records().into_iter().filter(|r| r.call_id.as_deref() == Some(call_id.as_str())).collect();
    let reason = ended.last().and_then(|r| r.reason.clone()).unwrap_or_default();
    let all: Vec<_> = audit.records().into_iter().map(|r| (r.status, r.tool, r.reason)).collect();
    assert!(reason.starts_with("authority changed: role `doctor` is now `nurse`"), "{all:?}");
    assert!(rt.pending_decisions(&me).await.unwrap().is_empty());
}
