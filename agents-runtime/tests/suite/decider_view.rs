//! The person asked to approve an action sees the arguments they will be bound by, secret
//! values included (the decider's view), on every channel that asks them: a model run's
//! confirmer, the pending decisions listed for them, a direct session's confirmer. The audit
//! records and the run's broadcast events keep the masked copy.

use agents_runtime::agents_core::redact::MASK;
use agents_runtime::audit::MemorySink;
use agents_runtime::events::Event;
use agents_runtime::provider::ScriptedProvider;
use agents_runtime::provider::scripted::{reply, tool_call};
use agents_runtime::run::{ConfirmAnswer, ConfirmRequest, Confirmer};
use agents_runtime::{Principal, RoleMap, RunResultExt, RunStatus, Runtime, Verdict, agent, permissions, tool};
use std::sync::{Arc, Mutex};

permissions! {
    pub mod perms { account.write }
}

/// The password the user typed.
const TYPED: &str = "correct-horse-battery-staple";

/// Passwords set, as the tool received them.
static SET: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Changes the user's password.
///
/// # Arguments
///
/// * `account` - the account
/// * `new_password` - the new password
#[tool(permission = perms::account::write, mutating, title = "Change password", risk = high)]
async fn change_password(account: String, #[secret] new_password: String) -> Result<String, String> {
    SET.lock().unwrap().push(new_password);
    Ok(format!("password of {account} changed"))
}

agent! {
    /// Changes passwords.
    pub struct Accounts;
    tools: [change_password],
}

fn args() -> String {
    format!(r#"{{"account": "ann", "new_password": "{TYPED}"}}"#)
}

fn roles() -> RoleMap {
    RoleMap::new().role("member", ["account.write"])
}

fn ann() -> Principal {
    Principal::new("ann", "acme", "member")
}

/// Asks by recording the request, then approves.
#[derive(Default)]
struct Records(Mutex<Vec<ConfirmRequest>>);

impl Confirmer for Records {
    fn confirm(&self, request: ConfirmRequest) -> agents_runtime::BoxFuture<'static, ConfirmAnswer> {
        self.0.lock().unwrap().push(request);
        Box::pin(async { ConfirmAnswer::Decided(Verdict::Approve) })
    }
}

#[tokio::test]
async fn a_model_runs_confirmer_sees_the_typed_value_while_events_and_records_are_masked() {
    let audit = Arc::new(MemorySink::new());
    let asked = Arc::new(Records::default());
    let provider = Arc::new(ScriptedProvider::new([tool_call("change_password", args()), reply("done")]));
    let rt = Runtime::builder(audit.clone(), provider).roles(roles()).confirmer(asked.clone()).build();
    let mut run = rt.start::<Accounts>(ann(), "s-confirmer", "change my password".to_owned()).unwrap();
    let mut events = Vec::new();
    while let Some(e) = run.events().recv().await {
        events.push(serde_json::to_string(&e).unwrap());
        if matches!(e, Event::Done { .. }) {
            break;
        }
    }
    assert_eq!(run.wait().await.status(), RunStatus::Completed);
    let requests = asked.0.lock().unwrap().clone();
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    // The card: the value the person typed, which is what the tool receives.
    assert_eq!(r.decider_args.as_value()["new_password"], TYPED);
    assert_eq!(r.decider_args.as_value()["account"], "ann");
    assert!(SET.lock().unwrap().contains(&TYPED.to_owned()));
    // Everything else: masked.
    assert_eq!(r.args["new_password"], MASK);
    assert!(!r.description.contains(TYPED), "{}", r.description);
    assert!(!format!("{r:?}").contains(TYPED), "Debug prints no decider value");
    assert!(!serde_json::to_string(r).unwrap().contains(TYPED), "the request serializes masked only");
    let confirm = events.iter().find(|e| e.contains("confirm_required")).expect("a confirm_required event");
    assert!(confirm.contains(MASK), "{confirm}");
    for e in &events {
        assert!(!e.contains(TYPED), "an event carries the secret: {e}");
    }
    assert!(!audit.to_jsonl().contains(TYPED), "the audit log carries the secret");
}

#[tokio::test]
async fn the_pending_decision_shows_its_decider_the_typed_value_and_nobody_else_anything() {
    let audit = Arc::new(MemorySink::new());
    let provider = Arc::new(ScriptedProvider::new([tool_call("change_password", args()), reply("done")]));
    let rt = Runtime::builder(audit.clone(), provider).roles(roles()).build();
    let mut run = rt.start::<Accounts>(ann(), "s-pending", "change my password".to_owned()).unwrap();
    let call_id = loop {
        match run.events().recv().await.expect("a confirm_required event") {
            Event::ConfirmRequired { call_id, args, .. } => {
                assert_eq!(args["new_password"], MASK, "the broadcast event is masked");
                break call_id;
            }
            _ => continue,
        }
    };
    let listed = rt.pending_decisions(&ann()).await.unwrap();
    assert_eq!(listed.len(), 1);
    let p = &listed[0];
    assert_eq!(p.call_id, call_id);
    assert_eq!(p.decider_arguments.as_value()["new_password"], TYPED);
    assert_eq!(p.arguments["new_password"], MASK);
    assert!(!serde_json::to_string(p).unwrap().contains(TYPED), "a serialized listing is masked");
    // Another user of the organisation, the same user in another role, another organisation.
    for other in [
        Principal::new("bob", "acme", "member"),
        Principal::new("ann", "acme", "admin"),
        Principal::new("ann", "globex", "member"),
    ] {
        assert!(rt.pending_decisions(&other).await.unwrap().is_empty(), "{other:?} sees a proposal");
    }
    rt.decide_async(&call_id, &ann(), Verdict::Approve, None).await.unwrap();
    assert_eq!(run.wait().await.status(), RunStatus::Completed);
    assert!(!audit.to_jsonl().contains(TYPED), "the audit log carries the secret");
}

#[tokio::test]
async fn a_direct_sessions_confirmer_sees_the_typed_value_and_the_records_do_not() {
    let audit = Arc::new(MemorySink::new());
    let asked = Arc::new(Records::default());
    let rt = Runtime::builder(audit.clone(), Arc::new(ScriptedProvider::new([]))).roles(roles()).build();
    let direct = rt.direct::<Accounts>(ann(), "s-direct", Some(asked.clone())).await.unwrap();
    let out = direct.call("c1", "change_password", &args()).await;
    assert!(!out.is_error, "{:?}", out.content);
    let requests = asked.0.lock().unwrap().clone();
    assert_eq!(requests[0].decider_args.as_value()["new_password"], TYPED);
    assert_eq!(requests[0].args["new_password"], MASK);
    assert!(!audit.to_jsonl().contains(TYPED), "the audit log carries the secret");
}
