//! A proposal's life in conversational mode: a decision the audit log refuses decides nothing,
//! and concurrent answers to one proposal decide it once.

use crate::run_common;

use agents_runtime::RunResultExt as _;
use agents_runtime::audit::{AuditStatus, MemorySink};
use agents_runtime::classifier::{Classification, ConfirmationClassifier, ProposalSummary};
use agents_runtime::provider::scripted::{reply, tool_call};
use agents_runtime::provider::{ChatMessage, ChatRequest, ChatResponse, Provider, ProviderError, TokenSink};
use agents_runtime::{ConfirmMode, Principal, RoleMap, RunStatus, Runtime, ToolContext, agent, permissions, tool};
use futures::future::BoxFuture;
use run_common::*;
use std::sync::Arc;
use std::time::Duration;

permissions! {
    pub mod perms { leave.write }
}

/// Submits a leave request.
///
/// # Arguments
///
/// * `days` - the days
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

/// Proposes three days when asked; calls the tool when told the user confirmed; else answers.
struct Model;

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
            let wants = asked.as_deref() == Some("three days please") || request.system.contains("confirmed");
            if wants && !after_tools && !request.tools.is_empty() {
                Ok(tool_call("submit_leave", THREE))
            } else {
                Ok(reply("ok"))
            }
        })
    }
}

/// Confirms every reply, slowly (a model-backed classifier).
struct SlowYes;

impl ConfirmationClassifier for SlowYes {
    fn classify<'a>(&'a self, _: &'a ProposalSummary, _: &'a str) -> BoxFuture<'a, Classification> {
        Box::pin(async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            Classification::Confirm
        })
    }
}

fn runtime(audit: Arc<dyn agents_runtime::audit::AuditSink>) -> Runtime {
    Runtime::builder(audit, Arc::new(Model))
        .roles(RoleMap::new().role("employee", ["leave.write"]))
        .confirm_mode(ConfirmMode::Conversational)
        .classifier(Arc::new(SlowYes))
        .build()
}

#[tokio::test(start_paused = true)]
async fn a_confirmation_the_audit_log_refuses_approves_nothing() {
    let sink = Arc::new(RefusingSink::new([AuditStatus::Confirmed]));
    let rt = runtime(sink.clone());
    let out = rt.start::<Desk>(me(), "p-refused", "three days please".into()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::AwaitingConfirmation, "{out:?}");
    let out = rt.start::<Desk>(me(), "p-refused", "yes".into()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::AwaitingConfirmation, "the proposal still waits: {out:?}");
    assert_eq!(ran("p-refused"), 0, "nothing runs on an approval that is not on record");
    assert!(with_status(&sink.inner, AuditStatus::Confirmed).is_empty());
    assert!(with_status(&sink.inner, AuditStatus::Executed).is_empty());
}

#[tokio::test(start_paused = true)]
async fn two_concurrent_yes_messages_decide_the_proposal_once_and_run_it_once() {
    let audit = Arc::new(MemorySink::new());
    let rt = runtime(audit.clone());
    let out = rt.start::<Desk>(me(), "p-twice", "three days please".into()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::AwaitingConfirmation, "{out:?}");
    let proposal = with_status(&audit, AuditStatus::Proposed)[0].call_id.clone().unwrap();
    let first = rt.start::<Desk>(me(), "p-twice", "yes".into()).unwrap();
    let second = rt.start::<Desk>(me(), "p-twice", "yes".into()).unwrap();
    let (a, b) = tokio::join!(first.wait(), second.wait());
    assert_ne!(a.status(), RunStatus::Failed, "{a:?}");
    assert_ne!(b.status(), RunStatus::Failed, "{b:?}");
    assert_eq!(ran("p-twice"), 1, "one approval, one execution");
    let decided: Vec<_> = call_statuses(&audit, &proposal);
    assert_eq!(decided, vec![AuditStatus::Proposed, AuditStatus::Confirmed, AuditStatus::Executed], "{decided:?}");
}
