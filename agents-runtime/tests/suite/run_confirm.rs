//! The action tier in dialog mode (propose, ask, wait, token, run), the audit log failing
//! closed, and redaction of nested secrets.

use crate::run_common;

use agents_runtime::RunResultExt as _;
use agents_runtime::audit::{AuditStatus, MemorySink};
use agents_runtime::events::Event;
use agents_runtime::provider::ScriptedProvider;
use agents_runtime::provider::scripted::{reply, tool_call};
use agents_runtime::run::{DecisionError, REJECTED_MESSAGE};
use agents_runtime::{Principal, RoleMap, RunStatus, Runtime, Secret, ToolContext, Verdict, agent, permissions, tool};
use run_common::*;
use std::sync::Arc;
use std::time::Duration;

permissions! {
    pub mod perms { athlete.read, injury.write, account.write }
}

/// Lists athletes.
#[tool(permission = perms::athlete::read)]
async fn list_athletes(cx: &ToolContext<'_>) -> Result<Vec<String>, String> {
    bump(cx.session_id());
    Ok(vec!["ath-7".into()])
}

/// Records an injury.
///
/// # Arguments
///
/// * `athlete_id` - the athlete id
/// * `note` - the note
#[tool(permission = perms::injury::write, mutating, title = "Record injury")]
async fn create_injury(cx: &ToolContext<'_>, athlete_id: u64, note: String) -> Result<String, String> {
    // The `proposed` record must be in the log before any handler runs.
    if let Some(sink) = sink_of(cx.session_id()) {
        let records = sink.records();
        let mine = |s: AuditStatus| records.iter().any(|r| r.status == s && r.call_id.as_deref() == Some(cx.call_id()));
        saw(
            cx.session_id(),
            format!(
                "proposed={} confirmed={} executed={}",
                mine(AuditStatus::Proposed),
                mine(AuditStatus::Confirmed),
                mine(AuditStatus::Executed)
            ),
        );
    }
    bump(cx.session_id());
    Ok(format!("injury {athlete_id}: {note}"))
}

/// A login with a PIN.
#[derive(Debug, Clone, serde::Deserialize, schemars::JsonSchema)]
pub struct Login {
    user: String,
    pin: Secret<String>,
}

/// A profile with nested secrets.
#[derive(Debug, Clone, serde::Deserialize, schemars::JsonSchema)]
pub struct Profile {
    name: String,
    login: Login,
    recovery: Vec<Secret<String>>,
    memo: Option<Secret<String>>,
}

/// Enrols a user (a read-tier tool so it runs without a dialog).
#[tool(permission = perms::account::write)]
async fn enrol(cx: &ToolContext<'_>, profile: Profile) -> Result<String, String> {
    bump(cx.session_id());
    let codes: Vec<&str> = profile.recovery.iter().map(|s| s.expose().as_str()).collect();
    let memo = profile.memo.as_ref().map(|m| m.expose().as_str()).unwrap_or("-");
    saw(
        cx.session_id(),
        format!("{}|{}|{}|{}|{memo}", profile.name, profile.login.user, profile.login.pin.expose(), codes.join(",")),
    );
    Ok(format!("enrolled {}", profile.name))
}

/// Creates an account.
///
/// # Arguments
///
/// * `profile` - the profile
#[tool(permission = perms::account::write, mutating, title = "Create account")]
async fn create_account(cx: &ToolContext<'_>, profile: Profile) -> Result<String, String> {
    bump(cx.session_id());
    saw(cx.session_id(), profile.login.pin.expose().clone());
    Ok("created".into())
}

agent! {
    /// Clinic assistant.
    pub struct Clinic;
    audit: { values: masked },
    tools: [list_athletes, create_injury, enrol, create_account],
}

fn roles() -> RoleMap {
    RoleMap::new().role("physio", ["athlete.read", "injury.write", "account.write"])
}

fn me() -> Principal {
    Principal::new("u1", "org1", "physio")
}

const INJURY: &str = r#"{"athlete_id": 7, "note": "left ankle"}"#;

fn setup(
    session: &str,
    script: Vec<agents_runtime::provider::ChatResponse>,
) -> (Runtime, Arc<MemorySink>, Arc<ScriptedProvider>) {
    let audit = Arc::new(MemorySink::new());
    register_sink(session, audit.clone());
    let provider = Arc::new(ScriptedProvider::new(script));
    // Masked values: these tests read what a record keeps of the arguments, secrets masked.
    let rt = Runtime::builder(audit.clone(), provider.clone())
        .roles(roles())
        .audit_values(agents_runtime::agents_core::audit::AuditValues::Masked)
        .build();
    (rt, audit, provider)
}

#[tokio::test]
async fn approve_records_proposed_confirmed_executed_and_proposed_is_durable_first() {
    let (rt, audit, provider) = setup("approve", vec![tool_call("create_injury", INJURY), reply("recorded")]);
    let mut run = rt.start::<Clinic>(me(), "approve", "record it".into()).unwrap();
    let call_id = confirm_required(&mut run).await;
    assert_eq!(ran("approve"), 0, "nothing runs before the decision");
    assert_eq!(call_statuses(&audit, &call_id), vec![AuditStatus::Proposed]);
    let proposed = &with_status(&audit, AuditStatus::Proposed)[0];
    assert_eq!(proposed.title.as_deref(), Some("Record injury"));
    rt.decide(&call_id, &me(), Verdict::Approve).unwrap();
    let out = run.wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    assert_eq!(ran("approve"), 1);
    assert_eq!(seen_in("approve"), vec!["proposed=true confirmed=true executed=false".to_owned()]);
    assert_eq!(
        call_statuses(&audit, &call_id),
        vec![AuditStatus::Proposed, AuditStatus::Confirmed, AuditStatus::Executed]
    );
    // The token never reaches the model.
    let confirmed = &with_status(&audit, AuditStatus::Confirmed)[0];
    let token_id = confirmed.reason.as_deref().unwrap().rsplit(' ').next().unwrap().to_owned();
    assert_eq!(token_id.len(), 32, "{confirmed:?}");
    let seen_by_model = serde_json::to_string(&provider.requests()).unwrap();
    assert!(!seen_by_model.contains(&token_id));
    // A second decision for the same call finds nothing.
    assert_eq!(rt.decide(&call_id, &me(), Verdict::Approve), Err(DecisionError::NotPending(call_id.clone())));
}

#[tokio::test]
async fn reject_is_recorded_and_the_model_is_told_not_to_retry() {
    let (rt, audit, provider) =
        setup("reject", vec![tool_call("create_injury", INJURY), reply("Understood, I will not record it.")]);
    let mut run = rt.start::<Clinic>(me(), "reject", "record it".into()).unwrap();
    let call_id = confirm_required(&mut run).await;
    rt.decide(&call_id, &me(), Verdict::Reject).unwrap();
    let out = run.wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    assert_eq!(ran("reject"), 0);
    assert_eq!(call_statuses(&audit, &call_id), vec![AuditStatus::Proposed, AuditStatus::Rejected]);
    let told = tool_messages(&provider.requests()[1]);
    assert!(told[0].2);
    assert!(told[0].1.contains("Do not retry it"), "{told:?}");
    assert!(told[0].1.contains(REJECTED_MESSAGE));
}

#[tokio::test(start_paused = true)]
async fn no_decision_within_the_timeout_skips_and_cancels_the_run() {
    let (rt, audit, provider) = setup("timeout", vec![tool_call("create_injury", INJURY), reply("never asked")]);
    let started = tokio::time::Instant::now();
    let mut run = rt.start::<Clinic>(me(), "timeout", "record it".into()).unwrap();
    let call_id = confirm_required(&mut run).await;

    tokio::time::advance(Duration::from_secs(599)).await;
    assert_eq!(call_statuses(&audit, &call_id), vec![AuditStatus::Proposed], "not yet timed out after 599 s");
    assert_eq!(rt.active_runs(&me()), 1);

    tokio::time::advance(Duration::from_secs(2)).await;
    let out = run.wait().await;
    assert_eq!(out.status(), RunStatus::Cancelled, "{out:?}");
    let waited = started.elapsed();
    assert!(waited >= Duration::from_secs(600) && waited < Duration::from_secs(602), "{waited:?}");
    assert_eq!(ran("timeout"), 0);
    assert_eq!(call_statuses(&audit, &call_id), vec![AuditStatus::Proposed, AuditStatus::Skipped]);
    let skipped = &with_status(&audit, AuditStatus::Skipped)[0];
    assert!(skipped.reason.as_deref().unwrap().contains("timeout"), "{skipped:?}");
    assert_eq!(provider.requests().len(), 1, "a cancelled run asks the model nothing more");
    let finished = with_status(&audit, AuditStatus::RunFinished);
    assert_eq!(finished[0].reason.as_deref(), Some("cancelled"));
    // A late decision finds nothing to decide.
    assert_eq!(rt.decide(&call_id, &me(), Verdict::Approve), Err(DecisionError::NotPending(call_id.clone())));
    assert_eq!(ran("timeout"), 0);
    assert_eq!(rt.active_runs(&me()), 0);
}

#[tokio::test(start_paused = true)]
async fn stop_while_waiting_skips_the_action() {
    let (rt, audit, _provider) = setup("stop", vec![tool_call("create_injury", INJURY), reply("never asked")]);
    let mut run = rt.start::<Clinic>(me(), "stop", "record it".into()).unwrap();
    let call_id = confirm_required(&mut run).await;
    run.stop();
    let out = run.wait().await;
    assert_eq!(out.status(), RunStatus::Cancelled, "{out:?}");
    assert_eq!(ran("stop"), 0);
    assert_eq!(call_statuses(&audit, &call_id), vec![AuditStatus::Proposed, AuditStatus::Skipped]);
    assert!(with_status(&audit, AuditStatus::Skipped)[0].reason.as_deref().unwrap().contains("stopped"));
    assert_eq!(rt.decide(&call_id, &me(), Verdict::Approve), Err(DecisionError::NotPending(call_id.clone())));
    assert_eq!(ran("stop"), 0);
}

#[tokio::test]
async fn a_decision_from_another_user_organisation_or_role_is_refused() {
    let (rt, audit, _provider) = setup("others", vec![tool_call("create_injury", INJURY), reply("ok")]);
    let mut run = rt.start::<Clinic>(me(), "others", "record it".into()).unwrap();
    let call_id = confirm_required(&mut run).await;
    let colleague = Principal::new("u2", "org1", "physio");
    let same_id_other_org = Principal::new("u1", "org2", "physio");
    let same_user_other_role = Principal::new(me().user_id, me().org_id, "admin");
    assert_eq!(rt.decide(&call_id, &colleague, Verdict::Approve), Err(DecisionError::NotYourRun));
    assert_eq!(rt.decide(&call_id, &same_id_other_org, Verdict::Approve), Err(DecisionError::NotYourRun));
    assert_eq!(rt.decide(&call_id, &same_user_other_role, Verdict::Approve), Err(DecisionError::NotYourRun));
    tokio::task::yield_now().await;
    assert_eq!(ran("others"), 0, "a refused decision runs nothing");
    assert_eq!(call_statuses(&audit, &call_id), vec![AuditStatus::Proposed]);
    // The call still waits for its own user.
    rt.decide(&call_id, &me(), Verdict::Reject).unwrap();
    let out = run.wait().await;
    assert_eq!(out.status(), RunStatus::Completed);
    assert_eq!(ran("others"), 0);
    assert_eq!(call_statuses(&audit, &call_id), vec![AuditStatus::Proposed, AuditStatus::Rejected]);
}

#[tokio::test]
async fn a_failed_proposed_write_stops_the_call() {
    let audit = Arc::new(RefusingSink::new([AuditStatus::Proposed]));
    let provider = Arc::new(ScriptedProvider::new([
        tool_call("list_athletes", "{}"),
        tool_call("create_injury", INJURY),
        reply("could not"),
    ]));
    let rt = Runtime::builder(audit.clone(), provider.clone()).roles(roles()).build();
    let mut run = rt.start::<Clinic>(me(), "audit-down", "go".into()).unwrap();
    let events = events_until_done(&mut run).await;
    let out = run.wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    assert_eq!(ran("audit-down"), 0, "neither the read nor the action ran");
    assert!(
        !events.iter().any(|e| matches!(e, Event::ConfirmRequired { .. })),
        "no one is asked to approve an unrecorded action"
    );
    let reqs = provider.requests();
    for (i, req) in reqs[1..].iter().enumerate() {
        let told = tool_messages(req);
        assert!(told[i].2 && told[i].1.contains("audit log is unavailable"), "{told:?}");
    }
    assert!(audit.inner.records().iter().all(|r| r.status != AuditStatus::Executed));
}

#[tokio::test]
async fn a_failed_confirmed_write_stops_the_approved_action() {
    let audit = Arc::new(RefusingSink::new([AuditStatus::Confirmed]));
    let provider = Arc::new(ScriptedProvider::new([tool_call("create_injury", INJURY), reply("could not")]));
    let rt = Runtime::builder(audit.clone(), provider.clone()).roles(roles()).build();
    let mut run = rt.start::<Clinic>(me(), "audit-confirm", "go".into()).unwrap();
    let call_id = confirm_required(&mut run).await;
    rt.decide(&call_id, &me(), Verdict::Approve).unwrap();
    let out = run.wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    assert_eq!(ran("audit-confirm"), 0, "an approval that could not be recorded runs nothing");
    // The proposal still ends, and says why.
    assert_eq!(call_statuses(&audit.inner, &call_id), vec![AuditStatus::Proposed, AuditStatus::Skipped]);
    let skipped = &with_status(&audit.inner, AuditStatus::Skipped)[0];
    assert!(skipped.reason.as_deref().unwrap().contains("approval could not be recorded"), "{skipped:?}");
    let told = tool_messages(&provider.requests()[1]);
    assert!(told[0].2 && told[0].1.contains("audit log is unavailable"), "{told:?}");
}

#[tokio::test]
async fn a_failed_run_started_write_fails_the_run_before_the_model_is_asked() {
    let audit = Arc::new(RefusingSink::new([AuditStatus::RunStarted]));
    let provider = Arc::new(ScriptedProvider::new([tool_call("list_athletes", "{}"), reply("x")]));
    let rt = Runtime::builder(audit.clone(), provider.clone()).roles(roles()).build();
    let out = rt.start::<Clinic>(me(), "audit-start", "go".into()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::Failed, "{out:?}");
    assert!(out.error_text().as_deref().unwrap().contains("audit log is unavailable"));
    assert!(provider.requests().is_empty());
    assert_eq!(ran("audit-start"), 0);
}

const PROFILE: &str = r#"{"profile": {"name": "Ann", "login": {"user": "ann", "pin": "pin-4711"}, "recovery": ["code-alpha", "code-bravo"], "memo": "memo-zulu"}}"#;
const SECRETS: &[&str] = &["pin-4711", "code-alpha", "code-bravo", "memo-zulu"];

#[tokio::test]
async fn nested_secrets_never_reach_the_audit_log_or_the_events() {
    let (rt, audit, _provider) =
        setup("redact", vec![tool_call("enrol", PROFILE), tool_call("create_account", PROFILE), reply("done")]);
    let mut run = rt.start::<Clinic>(me(), "redact", "enrol ann".into()).unwrap();
    let mut events = Vec::new();
    loop {
        let e = run.events().recv().await.unwrap();
        if let Event::ConfirmRequired { call_id, args, .. } = &e {
            assert_eq!(args["profile"]["login"]["pin"], "•••");
            assert_eq!(args["profile"]["login"]["user"], "ann");
            rt.decide(call_id, &me(), Verdict::Approve).unwrap();
        }
        let done = matches!(e, Event::Done { .. });
        events.push(e);
        if done {
            break;
        }
    }
    let out = run.wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    // The handlers received the real values.
    assert_eq!(
        seen_in("redact"),
        vec!["Ann|ann|pin-4711|code-alpha,code-bravo|memo-zulu".to_owned(), "pin-4711".to_owned()]
    );
    let jsonl = audit.to_jsonl();
    let events_text = serde_json::to_string(&events).unwrap();
    for s in SECRETS {
        assert!(!jsonl.contains(s), "`{s}` leaked into the audit log");
        assert!(!events_text.contains(s), "`{s}` leaked into the events");
    }
    let proposed = &with_status(&audit, AuditStatus::Proposed)[0];
    let args = proposed.args.as_ref().unwrap();
    assert_eq!(args["profile"]["login"]["pin"], "•••");
    assert_eq!(args["profile"]["recovery"], serde_json::json!(["•••", "•••"]));
    assert_eq!(args["profile"]["memo"], "•••");
    assert_eq!(args["profile"]["name"], "Ann", "only secrets are masked");
    agents_runtime::agents_core::audit::verify_jsonl(&jsonl, Some(Clinic::MANIFEST_SHA256)).unwrap();
}
