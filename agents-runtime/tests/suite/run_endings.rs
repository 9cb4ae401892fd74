//! Every way a turn or a session ends resolves its open proposals with one final record, and
//! nothing it left open can run afterwards: an explicit end of the session, its idle expiry,
//! a role change, and a stopped turn, in conversational and dialog mode.

use crate::run_common;

use agents_runtime::RunResultExt as _;
use agents_runtime::audit::{AuditStatus, MemorySink};
use agents_runtime::events::Event;
use agents_runtime::provider::scripted::{reply, tool_call};
use agents_runtime::provider::{ChatMessage, ChatRequest, ChatResponse, Provider, ProviderError, TokenSink};
use agents_runtime::run::DecisionError;
use agents_runtime::{
    ConfirmMode, Principal, RoleMap, RunStatus, Runtime, ToolContext, Verdict, agent, permissions, tool,
};
use futures::future::BoxFuture;
use run_common::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

permissions! {
    pub mod perms { leave.write }
}

/// Submits a leave request.
///
/// # Arguments
///
/// * `days` - the number of working days of leave asked for
#[tool(permission = perms::leave::write, mutating, title = "Submit leave request")]
async fn submit_leave(cx: &ToolContext<'_>, days: u32) -> Result<String, String> {
    bump(cx.session_id());
    Ok(format!("submitted {days} days"))
}

agent! {
    /// Helpdesk assistant.
    pub struct Desk;
    tools: [submit_leave],
}

const THREE: &str = r#"{"days": 3}"#;

fn me() -> Principal {
    Principal::new("emp-1", "acme", "employee")
}

/// Proposes three days when the user says "propose"; calls the tool again when told the user
/// confirmed; hangs (until the run is stopped) while `hang` is set; otherwise answers.
#[derive(Default)]
struct Model {
    hang: AtomicBool,
}

impl Provider for Model {
    fn name(&self) -> &str {
        "model"
    }
    fn model(&self) -> &str {
        "model"
    }
    fn is_paid(&self) -> bool {
        false
    }
    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
        _: &'a dyn TokenSink,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move {
            let after_tools = request.messages.iter().any(|m| matches!(m, ChatMessage::Tool { .. }));
            let asked = request.messages.iter().rev().find_map(|m| match m {
                ChatMessage::User { content } => Some(content.clone()),
                _ => None,
            });
            let tools = !request.tools.is_empty();
            if tools && !after_tools && asked.as_deref() == Some("propose") {
                return Ok(tool_call("submit_leave", THREE));
            }
            if self.hang.load(Ordering::SeqCst) {
                std::future::pending::<()>().await;
            }
            if tools && !after_tools && request.system.contains("confirmed") {
                Ok(tool_call("submit_leave", THREE))
            } else {
                Ok(reply("ok"))
            }
        })
    }
}

fn runtime(mode: ConfirmMode, audit: &Arc<MemorySink>, model: &Arc<Model>) -> Runtime {
    Runtime::builder(audit.clone(), model.clone())
        .roles(RoleMap::new().role("employee", ["leave.write"]).role("manager", ["leave.write"]))
        .confirm_mode(mode)
        .session_idle_timeout(Duration::from_secs(60))
        // Idle sessions are purged by hand here, when a test says so.
        .sweep_every(None)
        .build()
}

/// Starts a conversational turn and waits for its end.
async fn say(rt: &Runtime, who: Principal, session: &str, text: &str) -> RunStatus {
    rt.start::<Desk>(who, session, text.into()).unwrap().wait().await.status()
}

/// The only proposal in the log, and its records' statuses.
fn the_proposal(audit: &MemorySink) -> (String, Vec<AuditStatus>) {
    let proposed = with_status(audit, AuditStatus::Proposed);
    assert_eq!(proposed.len(), 1, "{proposed:?}");
    let id = proposed[0].call_id.clone().unwrap().to_string();
    let statuses = call_statuses(audit, &id);
    (id, statuses)
}

/// The reason of the proposal's last record.
fn last_reason(audit: &MemorySink, call_id: &str) -> String {
    let records = audit.records();
    let last = records.iter().rev().find(|r| r.call_id.as_deref() == Some(call_id)).unwrap();
    last.reason.clone().unwrap_or_default()
}

/// A later "yes" (in the same session, as the same person) runs nothing and changes no record.
async fn a_later_yes_runs_nothing(rt: &Runtime, audit: &MemorySink, session: &str) {
    let (id, before) = the_proposal(audit);
    let _ = say(rt, me(), session, "yes").await;
    rt.records_settled().await;
    assert_eq!(ran(session), 0, "nothing runs after its session or turn ended");
    assert_eq!(call_statuses(audit, &id), before, "a later answer adds nothing to an ended proposal");
}

#[tokio::test]
async fn ending_the_session_cancels_a_proposal_waiting_for_the_answer() {
    let (audit, model) = (Arc::new(MemorySink::new()), Arc::new(Model::default()));
    let rt = runtime(ConfirmMode::Conversational, &audit, &model);
    assert_eq!(say(&rt, me(), "end-conv", "propose").await, RunStatus::AwaitingConfirmation);
    assert!(rt.end_session(&me(), "end-conv").unwrap());
    rt.records_settled().await;
    let (id, statuses) = the_proposal(&audit);
    assert_eq!(statuses, vec![AuditStatus::Proposed, AuditStatus::Skipped]);
    assert!(last_reason(&audit, &id).starts_with("cancelled: the session was ended"), "{}", last_reason(&audit, &id));
    a_later_yes_runs_nothing(&rt, &audit, "end-conv").await;
}

#[tokio::test(start_paused = true)]
async fn an_idle_session_purged_cancels_its_proposal() {
    let (audit, model) = (Arc::new(MemorySink::new()), Arc::new(Model::default()));
    let rt = runtime(ConfirmMode::Conversational, &audit, &model);
    assert_eq!(say(&rt, me(), "idle-purge", "propose").await, RunStatus::AwaitingConfirmation);
    tokio::time::advance(Duration::from_secs(61)).await;
    assert_eq!(rt.purge_expired(), 1);
    rt.records_settled().await;
    let (id, statuses) = the_proposal(&audit);
    assert_eq!(statuses, vec![AuditStatus::Proposed, AuditStatus::Skipped]);
    assert!(last_reason(&audit, &id).contains("expired after its idle time"), "{}", last_reason(&audit, &id));
    a_later_yes_runs_nothing(&rt, &audit, "idle-purge").await;
}

#[tokio::test(start_paused = true)]
async fn an_idle_session_used_again_cancels_its_proposal_before_the_new_turn() {
    let (audit, model) = (Arc::new(MemorySink::new()), Arc::new(Model::default()));
    let rt = runtime(ConfirmMode::Conversational, &audit, &model);
    assert_eq!(say(&rt, me(), "idle-reuse", "propose").await, RunStatus::AwaitingConfirmation);
    tokio::time::advance(Duration::from_secs(61)).await;
    // The "yes" comes after the session expired: it starts a fresh context and answers nothing.
    assert_eq!(say(&rt, me(), "idle-reuse", "yes").await, RunStatus::Completed);
    rt.records_settled().await;
    assert_eq!(ran("idle-reuse"), 0);
    let (id, statuses) = the_proposal(&audit);
    assert_eq!(statuses, vec![AuditStatus::Proposed, AuditStatus::Skipped]);
    assert!(last_reason(&audit, &id).contains("expired after its idle time"), "{}", last_reason(&audit, &id));
}

#[tokio::test]
async fn a_role_change_cancels_the_proposal_made_under_the_old_role() {
    let (audit, model) = (Arc::new(MemorySink::new()), Arc::new(Model::default()));
    let rt = runtime(ConfirmMode::Conversational, &audit, &model);
    assert_eq!(say(&rt, me(), "role", "propose").await, RunStatus::AwaitingConfirmation);
    let manager = Principal::new(me().user_id, me().org_id, "manager");
    // The same person under another role says "yes": a fresh context, and the old proposal ends.
    assert_eq!(say(&rt, manager, "role", "yes").await, RunStatus::Completed);
    rt.records_settled().await;
    assert_eq!(ran("role"), 0, "a decision under another role approves nothing");
    let (id, statuses) = the_proposal(&audit);
    assert_eq!(statuses, vec![AuditStatus::Proposed, AuditStatus::Skipped]);
    assert!(last_reason(&audit, &id).contains("under another role"), "{}", last_reason(&audit, &id));
}

#[tokio::test]
async fn a_stopped_turn_cancels_the_proposal_it_made() {
    let (audit, model) = (Arc::new(MemorySink::new()), Arc::new(Model::default()));
    let rt = runtime(ConfirmMode::Conversational, &audit, &model);
    model.hang.store(true, Ordering::SeqCst);
    let mut run = rt.start::<Desk>(me(), "stop-conv", "propose".into()).unwrap();
    // The proposal is shown; the model's next answer hangs until the stop.
    until(&mut run, |e| matches!(e, Event::ConfirmRequired { .. })).await;
    run.stop();
    assert_eq!(run.wait().await.status(), RunStatus::Cancelled);
    model.hang.store(false, Ordering::SeqCst);
    let (id, statuses) = the_proposal(&audit);
    assert_eq!(statuses, vec![AuditStatus::Proposed, AuditStatus::Skipped]);
    assert!(
        last_reason(&audit, &id).starts_with("cancelled: the turn ended (cancelled)"),
        "{}",
        last_reason(&audit, &id)
    );
    a_later_yes_runs_nothing(&rt, &audit, "stop-conv").await;
}

#[tokio::test]
async fn a_stopped_turn_lets_the_approval_it_granted_expire() {
    let (audit, model) = (Arc::new(MemorySink::new()), Arc::new(Model::default()));
    let rt = runtime(ConfirmMode::Conversational, &audit, &model);
    assert_eq!(say(&rt, me(), "stop-yes", "propose").await, RunStatus::AwaitingConfirmation);
    model.hang.store(true, Ordering::SeqCst);
    let mut run = rt.start::<Desk>(me(), "stop-yes", "yes".into()).unwrap();
    until(
        &mut run,
        |e| matches!(e, Event::Status { status, .. } if *status == agents_runtime::events::RunPhase::Thinking),
    )
    .await;
    run.stop();
    assert_eq!(run.wait().await.status(), RunStatus::Cancelled);
    model.hang.store(false, Ordering::SeqCst);
    let (id, statuses) = the_proposal(&audit);
    assert_eq!(statuses, vec![AuditStatus::Proposed, AuditStatus::Confirmed, AuditStatus::Skipped]);
    assert!(last_reason(&audit, &id).starts_with("expired"), "{}", last_reason(&audit, &id));
    a_later_yes_runs_nothing(&rt, &audit, "stop-yes").await;
}

#[tokio::test(start_paused = true)]
async fn ending_the_session_ends_a_dialog_call_waiting_for_a_decision() {
    let (audit, model) = (Arc::new(MemorySink::new()), Arc::new(Model::default()));
    let rt = runtime(ConfirmMode::Dialog, &audit, &model);
    let mut run = rt.start::<Desk>(me(), "end-dialog", "propose".into()).unwrap();
    let call_id = confirm_required(&mut run).await;
    assert!(rt.end_session(&me(), "end-dialog").unwrap());
    let out = run.wait().await;
    assert_ne!(out.status(), RunStatus::Failed, "{out:?}");
    assert_eq!(rt.decide(&call_id, &me(), Verdict::Approve), Err(DecisionError::NotPending(call_id.clone())));
    rt.records_settled().await;
    assert_eq!(ran("end-dialog"), 0);
    assert_eq!(call_statuses(&audit, &call_id), vec![AuditStatus::Proposed, AuditStatus::Skipped]);
    assert!(last_reason(&audit, &call_id).starts_with("stopped"), "{}", last_reason(&audit, &call_id));
}

/// A session with a run under way is not idle: a dialog call waiting for a decision longer
/// than the idle timeout is not ended by the runtime's own sweep (nor by `purge_expired`), and
/// the decision, when it comes, is carried out once.
#[tokio::test(start_paused = true)]
async fn the_sweep_leaves_a_session_whose_run_waits_for_a_decision() {
    let (audit, model) = (Arc::new(MemorySink::new()), Arc::new(Model::default()));
    let rt = Runtime::builder(audit.clone(), model.clone())
        .roles(RoleMap::new().role("employee", ["leave.write"]))
        .confirm_mode(ConfirmMode::Dialog)
        .session_idle_timeout(Duration::from_secs(60))
        .build();
    let mut run = rt.start::<Desk>(me(), "busy-dialog", "propose".into()).unwrap();
    let call_id = confirm_required(&mut run).await;
    // Three idle timeouts pass, and the sweep runs every minute meanwhile.
    tokio::time::sleep(Duration::from_secs(180)).await;
    assert_eq!(rt.purge_expired(), 0, "a session with a run under way is not idle");
    assert_eq!(rt.session_count(), 1);
    rt.decide(&call_id, &me(), Verdict::Approve).unwrap();
    assert_eq!(run.wait().await.status(), RunStatus::Completed);
    assert_eq!(ran("busy-dialog"), 1);
    assert_eq!(
        call_statuses(&audit, &call_id),
        vec![AuditStatus::Proposed, AuditStatus::Confirmed, AuditStatus::Executed]
    );
}
