//! What a run hands back: the answer with the calls that ran and the tokens used, or a typed
//! error that keeps the same report; and the application's state as the tools read it.

use agents_runtime::audit::MemorySink;
use agents_runtime::provider::scripted::{reply, tool_call, tool_calls};
use agents_runtime::provider::{ChatResponse, ProviderError, ScriptedProvider};
use agents_runtime::{
    CallStatus, ConfirmMode, Limits, Principal, RoleMap, RunError, RunStatus, Runtime, Tier, ToolContext, agent,
    permissions, tool,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

permissions! {
    pub mod perms { ledger.read, ledger.write }
}

/// What the application hands its tools: a ledger with a balance.
struct Ledger {
    balance: AtomicU64,
}

/// Another value of the application's, of another type.
struct Currency(&'static str);

/// Reads the balance from the application's ledger.
#[tool(permission = perms::ledger::read)]
async fn read_balance(cx: &ToolContext<'_>) -> Result<String, String> {
    let ledger = cx.state::<Ledger>().ok_or("no ledger was handed to the runtime")?;
    let currency = cx.state::<Currency>().map_or("?", |c| c.0);
    Ok(format!("{} {currency}", ledger.balance.load(Ordering::SeqCst)))
}

/// Adds to the balance.
///
/// # Arguments
///
/// * `amount` - what to add
#[tool(permission = perms::ledger::write, mutating, title = "Add to the balance")]
async fn add(cx: &ToolContext<'_>, amount: u64) -> Result<u64, String> {
    let ledger = cx.state::<Ledger>().ok_or("no ledger was handed to the runtime")?;
    Ok(ledger.balance.fetch_add(amount, Ordering::SeqCst) + amount)
}

agent! {
    /// Keeps the books.
    pub struct Books;
    tools: [read_balance, add],
}

/// A figure the model answers with.
#[derive(Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
pub struct Figure {
    /// How much.
    pub amount: u64,
}

agent! {
    /// Answers with a figure.
    pub struct Figures;
    tools: [read_balance],
    output: Figure,
}

fn me() -> Principal {
    Principal::new("u1", "org1", "clerk")
}

fn roles() -> RoleMap {
    RoleMap::new().role("clerk", ["ledger.read", "ledger.write"])
}

fn tokens(mut r: ChatResponse, input: u64, output: u64) -> ChatResponse {
    r.usage.input_tokens = input;
    r.usage.output_tokens = output;
    r
}

fn runtime(provider: ScriptedProvider) -> Runtime {
    Runtime::builder(Arc::new(MemorySink::new()), Arc::new(provider))
        .roles(roles())
        .state(Ledger { balance: AtomicU64::new(40) })
        .state(Currency("EUR"))
        .build()
}

#[tokio::test]
async fn the_answer_lists_the_calls_that_ran_with_their_statuses_and_the_tokens_used() {
    let provider = ScriptedProvider::new([
        tokens(tool_calls([("read_balance", "{}"), ("no_such_tool", "{}")]), 100, 7),
        tokens(reply("You have 40 EUR."), 130, 5),
    ]);
    let rt = runtime(provider);
    let out = rt.start::<Books>(me(), "s1", "balance?".into()).unwrap().wait().await.expect("the run answered");
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(out.output.as_deref(), Some("You have 40 EUR."));
    assert_eq!(out.text(), "You have 40 EUR.");
    let calls: Vec<_> = out.calls().iter().map(|c| (c.tool.as_str(), c.tier, c.status)).collect();
    assert_eq!(
        calls,
        vec![("read_balance", Some(Tier::Read), CallStatus::Executed), ("no_such_tool", None, CallStatus::Denied)]
    );
    assert!(out.calls().iter().all(|c| !c.call_id.is_empty()));
    assert_eq!((out.usage().input_tokens, out.usage().output_tokens), (230, 12));
    assert_eq!(out.report.iterations, 2);
    assert!(!out.run_id().is_empty());
}

#[tokio::test]
async fn tools_read_the_application_state_by_type_and_see_none_without_it() {
    let rt = runtime(ScriptedProvider::new([tool_call("read_balance", "{}"), reply("done")]));
    let provider = Arc::new(ScriptedProvider::new([tool_call("read_balance", "{}"), reply("done")]));
    let _ = rt.start::<Books>(me(), "with", "balance?".into()).unwrap().wait().await.unwrap();
    let bare = Runtime::builder(Arc::new(MemorySink::new()), provider.clone()).roles(roles()).build();
    let out = bare.start::<Books>(me(), "without", "balance?".into()).unwrap().wait().await.unwrap();
    assert_eq!(out.calls()[0].status, CallStatus::Failed, "the tool found no ledger: {out:?}");
    let told = agents_runtime::provider::scripted::tool_outcomes(&provider.requests()[1])
        .into_iter()
        .map(|o| o.content.to_string())
        .collect::<Vec<_>>();
    assert!(told.iter().any(|t| t.contains("no ledger was handed to the runtime")), "{told:?}");

    // With the state, the tool reads both values the application handed over.
    let provider = Arc::new(ScriptedProvider::new([tool_call("read_balance", "{}"), reply("done")]));
    let rt = Runtime::builder(Arc::new(MemorySink::new()), provider.clone())
        .roles(roles())
        .shared_state(Arc::new(Ledger { balance: AtomicU64::new(7) }))
        .state(Currency("CHF"))
        .build();
    let out = rt.start::<Books>(me(), "shared", "balance?".into()).unwrap().wait().await.unwrap();
    assert_eq!(out.calls()[0].status, CallStatus::Executed);
    let told = agents_runtime::provider::scripted::tool_outcomes(&provider.requests()[1])
        .into_iter()
        .map(|o| o.content.to_string())
        .collect::<Vec<_>>();
    assert!(told.iter().any(|t| t.contains("7 CHF")), "{told:?}");
}

#[tokio::test]
async fn the_iteration_limit_is_an_error_that_keeps_the_calls_and_the_spend() {
    let limits = Limits { max_iterations: 2, ..Limits::DEFAULT };
    let provider = ScriptedProvider::new([
        tokens(tool_call("read_balance", "{}"), 10, 1),
        tokens(tool_call("read_balance", "{}"), 20, 2),
        reply("never reached"),
    ]);
    let rt = Runtime::builder(Arc::new(MemorySink::new()), Arc::new(provider))
        .roles(roles())
        .state(Ledger { balance: AtomicU64::new(1) })
        .limits(limits)
        .build();
    let err = rt.start::<Books>(me(), "iter", "loop".into()).unwrap().wait().await.unwrap_err();
    assert!(matches!(err, RunError::IterationLimit { limit: 2, .. }), "{err:?}");
    assert_eq!(err.status(), RunStatus::IterationLimit);
    let report = err.report();
    assert_eq!(report.iterations, 2);
    assert_eq!(report.calls.len(), 2);
    assert!(report.calls.iter().all(|c| c.status == CallStatus::Executed));
    assert_eq!((report.usage.input_tokens, report.usage.output_tokens), (30, 3));
}

#[tokio::test]
async fn a_provider_failure_is_an_error_with_its_typed_source() {
    let rt = runtime(ScriptedProvider::new([]));
    let err = rt.start::<Books>(me(), "empty", "hi".into()).unwrap().wait().await.unwrap_err();
    match &err {
        RunError::Provider { source, .. } => assert!(matches!(source, ProviderError::Other(_)), "{source:?}"),
        other => panic!("expected a provider error, got {other:?}"),
    }
    assert_eq!(err.status(), RunStatus::Failed);
    assert_eq!(
        std::error::Error::source(&err).map(|s| s.to_string()),
        Some(match &err {
            RunError::Provider { source, .. } => source.to_string(),
            _ => unreachable!(),
        })
    );
}

#[tokio::test]
async fn an_answer_that_does_not_fit_the_output_type_is_an_output_error_with_the_text() {
    let rt = runtime(ScriptedProvider::new([reply("about forty")]));
    let err = rt.start::<Figures>(me(), "fig", "how much?".into()).unwrap().wait().await.unwrap_err();
    assert!(matches!(&err, RunError::Output { output_type, .. } if output_type.contains("Figure")), "{err:?}");
    assert_eq!(err.report().text, "about forty");
    let rt = runtime(ScriptedProvider::new([reply(r#"{"amount": 40}"#)]));
    let out = rt.start::<Figures>(me(), "fig2", "how much?".into()).unwrap().wait().await.unwrap();
    assert_eq!(out.output, Some(Figure { amount: 40 }));
}

#[tokio::test(start_paused = true)]
async fn a_confirmation_timeout_and_a_stop_are_told_apart() {
    let limits = Limits { confirm_timeout_secs: 5, ..Limits::DEFAULT };
    let provider = ScriptedProvider::new([tool_call("add", r#"{"amount": 2}"#), reply("not confirmed")]);
    let rt = Runtime::builder(Arc::new(MemorySink::new()), Arc::new(provider))
        .roles(roles())
        .confirm_mode(ConfirmMode::Dialog)
        .state(Ledger { balance: AtomicU64::new(1) })
        .limits(limits)
        .build();
    let err = rt.start::<Books>(me(), "timeout", "add two".into()).unwrap().wait().await.unwrap_err();
    assert!(matches!(err, RunError::ConfirmationTimedOut { .. }), "{err:?}");
    assert_eq!(err.status(), RunStatus::Cancelled);
    let call = &err.report().calls[0];
    assert_eq!((call.tool.as_str(), call.status), ("add", CallStatus::Skipped));
    assert!(call.call_id.starts_with("call-"), "the runtime's id: {}", call.call_id);

    let provider = ScriptedProvider::new([tool_call("add", r#"{"amount": 2}"#), reply("stopped")]);
    let rt = Runtime::builder(Arc::new(MemorySink::new()), Arc::new(provider))
        .roles(roles())
        .confirm_mode(ConfirmMode::Dialog)
        .state(Ledger { balance: AtomicU64::new(1) })
        .build();
    let mut run = rt.start::<Books>(me(), "stop", "add two".into()).unwrap();
    while let Some(e) = run.events().recv().await {
        if matches!(e, agents_runtime::events::Event::ConfirmRequired { .. }) {
            break;
        }
    }
    run.stop();
    let err = run.wait().await.unwrap_err();
    assert!(matches!(err, RunError::Stopped { .. }), "{err:?}");
    assert_eq!(err.report().calls[0].status, CallStatus::Skipped);
}
