//! One run with a read call (with a secret argument), an approved action and a handoff,
//! shared by the span, OTLP and redaction tests.
#![allow(dead_code, unreachable_pub)]

use agents_runtime::RunResultExt as _;
use agents_runtime::audit::MemorySink;
use agents_runtime::events::Event;
use agents_runtime::provider::scripted::{reply, tool_call};
use agents_runtime::provider::{ChatResponse, ScriptedProvider, Usage};
use agents_runtime::{Principal, RoleMap, RunStatus, Runtime, Secret, Verdict, agent, permissions, tool};
use std::sync::Arc;
use std::time::Duration;

/// A value that must never reach a span, an event or a metric.
pub const SECRET: &str = "PIN-7c1e5a0f-never-exported";
/// An ordinary argument value (a patient's name): not secret, and still never exported.
pub const ARG_VALUE: &str = "Ada-Lovelace-argument";
/// What the read tool returns: result values are never exported either.
pub const RESULT_VALUE: &str = "allergic-to-penicillin-result";
/// What the action is asked to write.
pub const NOTE_VALUE: &str = "left-ankle-note-argument";
/// The model's own text.
pub const MODEL_TEXT: &str = "final-answer-model-text";

/// The model the scripted provider claims to be.
pub const MODEL: &str = "scripted-clinic-1";

permissions! {
    pub mod perms { patient.read, visit.write, referral.create }
}

/// Looks a patient up.
#[tool(permission = perms::patient::read, risk = low)]
async fn lookup_patient(name: String, pin: Secret<String>) -> Result<String, String> {
    assert_eq!(pin.expose(), SECRET, "the handler receives the real value");
    Ok(format!("{name}: {RESULT_VALUE}"))
}

/// Books a visit.
///
/// # Arguments
///
/// * `name` - the patient
/// * `note` - why
#[tool(permission = perms::visit::write, mutating, title = "Book a visit", risk = high)]
async fn book_visit(name: String, note: String) -> Result<String, String> {
    Ok(format!("booked {name}: {note}"))
}

/// Refers the patient to a specialist (a person does it).
#[tool(permission = perms::referral::create, handoff)]
fn refer_to_specialist(name: String);

agent! {
    /// Clinic front desk.
    pub struct FrontDesk;
    tools: [lookup_patient, book_visit, refer_to_specialist],
}

fn with_usage(mut r: ChatResponse, input: u64, output: u64) -> ChatResponse {
    r.usage = Usage { input_tokens: input, output_tokens: output, ..Usage::default() };
    r
}

/// The principal of the run.
pub fn me() -> Principal {
    Principal::new("u-17", "org-3", "nurse")
}

/// What the run came to: its id and the call ids of its three calls, in order.
pub struct Ran {
    pub run_id: String,
    pub status: RunStatus,
}

/// Runs the scenario to its end on the current thread's tokio runtime: the model reads a
/// patient (secret PIN), proposes a visit (approved), hands a referral off, and answers.
/// Token usage per model call: (10, 1), (20, 2), (30, 3), (40, 4).
pub async fn run_scenario() -> Ran {
    let lookup = format!(r#"{{"name": "{ARG_VALUE}", "pin": "{SECRET}"}}"#);
    let book = format!(r#"{{"name": "{ARG_VALUE}", "note": "{NOTE_VALUE}"}}"#);
    let refer = format!(r#"{{"name": "{ARG_VALUE}"}}"#);
    let script = vec![
        with_usage(tool_call("lookup_patient", lookup), 10, 1),
        with_usage(tool_call("book_visit", book), 20, 2),
        with_usage(tool_call("refer_to_specialist", refer), 30, 3),
        with_usage(reply(MODEL_TEXT), 40, 4),
    ];
    let provider = Arc::new(ScriptedProvider::new(script).with_model(MODEL));
    let roles = RoleMap::new().role("nurse", ["patient.read", "visit.write", "referral.create"]);
    let rt = Runtime::builder(Arc::new(MemorySink::new()), provider).roles(roles).build();
    let mut run = rt.start::<FrontDesk>(me(), "session-telemetry", "book Ada in".into()).unwrap();
    let run_id = run.run_id().to_owned();
    let wait = async {
        loop {
            match run.events().recv().await {
                Some(Event::ConfirmRequired { call_id, .. }) => {
                    rt.decide(&call_id, &me(), Verdict::Approve).unwrap();
                }
                Some(Event::Done { .. }) | None => break,
                Some(_) => {}
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(60), wait).await.expect("the run finished");
    let out = run.wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    Ran { run_id, status: out.status() }
}
