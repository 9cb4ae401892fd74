//! Limits: iterations per run, the per-call provider timeout, concurrent runs per user, and
//! the budget gates.

use crate::run_common;

use agents_runtime::RunResultExt as _;
use agents_runtime::audit::{AuditStatus, MemorySink};
use agents_runtime::budget::{BudgetStore, InMemoryBudget};
use agents_runtime::provider::scripted::{reply, tool_call, tool_calls};
use agents_runtime::provider::{
    ChatMessage, ChatRequest, ChatResponse, Provider, ProviderError, ScriptedProvider, TokenSink,
};
use agents_runtime::run::StartError;
use agents_runtime::{Agent, Principal, RoleMap, RunStatus, Runtime, ToolContext, agent, permissions, tool};
use futures::future::BoxFuture;
use run_common::*;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Semaphore;

permissions! {
    pub mod perms { athlete.read, injury.write }
}

/// Lists athletes.
#[tool(permission = perms::athlete::read)]
async fn list_athletes(cx: &ToolContext<'_>) -> Result<Vec<String>, String> {
    bump(cx.session_id());
    Ok(vec!["ath-1".into()])
}

/// Fails hard.
#[tool(permission = perms::athlete::read)]
async fn boom(cx: &ToolContext<'_>) -> Result<String, String> {
    bump(cx.session_id());
    panic!("the tool blew up");
}

/// Records an injury.
///
/// # Arguments
///
/// * `athlete_id` - the athlete id
#[tool(permission = perms::injury::write, mutating, title = "Record injury")]
async fn create_injury(cx: &ToolContext<'_>, athlete_id: u64) -> Result<String, String> {
    bump(cx.session_id());
    Ok(format!("recorded for {athlete_id}"))
}

agent! {
    /// Clinic assistant with the default limits.
    pub struct Clinic;
    tools: [list_athletes, boom, create_injury],
}

fn roles() -> RoleMap {
    RoleMap::new().role("physio", ["athlete.read", "injury.write"])
}

fn me() -> Principal {
    Principal::new("u1", "org1", "physio")
}

fn costing(mut r: ChatResponse, usd: f64) -> ChatResponse {
    r.usage.cost_usd = usd;
    r
}

#[tokio::test]
async fn twelve_iterations_by_default_then_the_iteration_limit() {
    assert_eq!(Clinic::SPEC.limits.max_iterations, 12);
    let audit = Arc::new(MemorySink::new());
    let mut script: Vec<ChatResponse> = (0..13).map(|_| tool_call("list_athletes", "{}")).collect();
    script.push(reply("never reached"));
    let provider = Arc::new(ScriptedProvider::new(script));
    let rt = Runtime::builder(audit.clone(), provider.clone()).roles(roles()).build();
    let out = rt.start::<Clinic>(me(), "iter", "loop".into()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::IterationLimit, "{out:?}");
    assert_eq!(out.report().iterations, 12);
    assert_eq!(provider.requests().len(), 12);
    assert_eq!(ran("iter"), 12);
    assert!(out.text().contains("12 steps"), "{}", out.text());
    assert_eq!(with_status(&audit, AuditStatus::RunFinished)[0].reason.as_deref(), Some("iteration_limit"));
}

#[tokio::test]
async fn twelve_iterations_may_end_in_an_answer() {
    let audit = Arc::new(MemorySink::new());
    let mut script: Vec<ChatResponse> = (0..11).map(|_| tool_call("list_athletes", "{}")).collect();
    script.push(reply("the answer"));
    let provider = Arc::new(ScriptedProvider::new(script));
    let rt = Runtime::builder(audit, provider.clone()).roles(roles()).build();
    let out = rt.start::<Clinic>(me(), "iter-ok", "loop".into()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    assert_eq!(out.report().iterations, 12);
}

/// A provider that accepts the request and never answers.
struct Hanging;
impl Provider for Hanging {
    fn name(&self) -> &str {
        "hanging"
    }
    fn model(&self) -> &str {
        "none"
    }
    fn chat<'a>(
        &'a self,
        _: &'a ChatRequest,
        _: &'a dyn TokenSink,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(futures::future::pending())
    }
}

/// A provider that takes `delay` for every answer.
struct Slow {
    delay: Duration,
    inner: ScriptedProvider,
}
impl Provider for Slow {
    fn name(&self) -> &str {
        "slow"
    }
    fn model(&self) -> &str {
        "slow"
    }
    fn is_paid(&self) -> bool {
        false
    }
    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
        tokens: &'a dyn TokenSink,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move {
            tokio::time::sleep(self.delay).await;
            self.inner.chat(request, tokens).await
        })
    }
}

#[tokio::test(start_paused = true)]
async fn a_provider_that_never_answers_fails_the_run_after_90_s() {
    let audit = Arc::new(MemorySink::new());
    let rt = Runtime::builder(audit.clone(), Arc::new(Hanging)).roles(roles()).build();
    let t0 = tokio::time::Instant::now();
    let out = rt.start::<Clinic>(me(), "hang", "hello".into()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::Failed, "{out:?}");
    assert_eq!(out.error_text().as_deref(), Some("the provider did not answer within 90 s"));
    assert!(
        matches!(&out, Err(agents_runtime::RunError::Provider { source: ProviderError::Timeout { secs: 90 }, .. })),
        "{out:?}"
    );
    assert_eq!(t0.elapsed(), Duration::from_secs(90));
    assert_eq!(rt.active_runs(&me()), 0);
}

#[tokio::test(start_paused = true)]
async fn the_provider_timeout_is_per_call_not_per_run() {
    let audit = Arc::new(MemorySink::new());
    let provider = Arc::new(Slow {
        delay: Duration::from_secs(80),
        inner: ScriptedProvider::new([
            tool_call("list_athletes", "{}"),
            tool_call("list_athletes", "{}"),
            reply("done"),
        ]),
    });
    let rt = Runtime::builder(audit, provider).roles(roles()).build();
    let t0 = tokio::time::Instant::now();
    let out = rt.start::<Clinic>(me(), "slow", "hello".into()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    assert_eq!(out.report().iterations, 3);
    assert_eq!(t0.elapsed(), Duration::from_secs(240), "three calls of 80 s each, well past 90 s in total");
}

/// A provider whose answers wait until the test opens the gate named by the turn's input.
#[derive(Default)]
struct Gated {
    gates: Mutex<HashMap<String, Arc<Semaphore>>>,
}
impl Gated {
    fn gate(&self, name: &str) -> Arc<Semaphore> {
        self.gates.lock().unwrap().entry(name.to_owned()).or_insert_with(|| Arc::new(Semaphore::new(0))).clone()
    }
}
impl Provider for Gated {
    fn name(&self) -> &str {
        "gated"
    }
    fn model(&self) -> &str {
        "gated"
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
            let input = request
                .messages
                .iter()
                .rev()
                .find_map(|m| match m {
                    ChatMessage::User { content } => Some(content.clone()),
                    _ => None,
                })
                .unwrap_or_default();
            self.gate(&input).acquire().await.unwrap().forget();
            let after_tools = request.messages.iter().any(|m| matches!(m, ChatMessage::Tool { .. }));
            match input.as_str() {
                "fail" => Err(ProviderError::Other("upstream broke".into())),
                "panic" if !after_tools => Ok(tool_call("boom", "{}")),
                _ => Ok(reply("fine")),
            }
        })
    }
}

#[tokio::test]
async fn three_runs_per_user_the_fourth_is_refused_and_every_exit_frees_its_slot() {
    let audit = Arc::new(MemorySink::new());
    let provider = Arc::new(Gated::default());
    let rt = Runtime::builder(audit, provider.clone()).roles(roles()).build();
    let u1 = me();
    let ok = rt.start::<Clinic>(u1.clone(), "cc-1", "ok".into()).unwrap();
    let fail = rt.start::<Clinic>(u1.clone(), "cc-2", "fail".into()).unwrap();
    let stop = rt.start::<Clinic>(u1.clone(), "cc-3", "stop".into()).unwrap();
    assert_eq!(rt.active_runs(&u1), 3);
    let refused = rt.start::<Clinic>(u1.clone(), "cc-4", "ok".into()).unwrap_err();
    assert_eq!(refused, StartError::TooManyRuns(3));
    assert_eq!(rt.active_runs(&u1), 3, "a refused start takes no slot");

    // Other users are not affected, including one with the same user id in another organisation.
    let u2 = Principal::new("u2", "org1", "physio");
    let u1_elsewhere = Principal::new("u1", "org2", "physio");
    let other = rt.start::<Clinic>(u2.clone(), "cc-u2", "other".into()).unwrap();
    let elsewhere = rt.start::<Clinic>(u1_elsewhere.clone(), "cc-u1-org2", "elsewhere".into()).unwrap();
    assert_eq!(rt.active_runs(&u2), 1);
    assert_eq!(rt.active_runs(&u1_elsewhere), 1);

    provider.gate("ok").add_permits(1);
    assert_eq!(ok.wait().await.status(), RunStatus::Completed);
    assert_eq!(rt.active_runs(&u1), 2, "completed frees the slot");

    provider.gate("fail").add_permits(1);
    let out = fail.wait().await;
    assert_eq!(out.status(), RunStatus::Failed);
    assert_eq!(out.error_text().as_deref(), Some("upstream broke"));
    assert_eq!(rt.active_runs(&u1), 1, "failed frees the slot");

    stop.stop();
    assert_eq!(stop.wait().await.status(), RunStatus::Cancelled);
    assert_eq!(rt.active_runs(&u1), 0, "cancelled frees the slot");

    let panicking = rt.start::<Clinic>(u1.clone(), "cc-5", "panic".into()).unwrap();
    provider.gate("panic").add_permits(2);
    let out = panicking.wait().await;
    // The panic fails the call, not the run: the model is told and answers.
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    assert_eq!(out.error_text(), None);
    assert_eq!(ran("cc-5"), 1);
    assert_eq!(rt.active_runs(&u1), 0, "a panicking tool frees the slot");

    // Three fresh runs fit again.
    let again: Vec<_> =
        (0..3).map(|i| rt.start::<Clinic>(u1.clone(), &format!("cc-again-{i}"), "again".into()).unwrap()).collect();
    assert!(matches!(rt.start::<Clinic>(u1.clone(), "cc-again-x", "again".into()), Err(StartError::TooManyRuns(3))));
    provider.gate("again").add_permits(3);
    for run in again {
        assert_eq!(run.wait().await.status(), RunStatus::Completed);
    }
    provider.gate("other").add_permits(1);
    provider.gate("elsewhere").add_permits(1);
    assert_eq!(other.wait().await.status(), RunStatus::Completed);
    assert_eq!(elsewhere.wait().await.status(), RunStatus::Completed);
    assert_eq!(rt.active_runs(&u1) + rt.active_runs(&u2) + rt.active_runs(&u1_elsewhere), 0);
}

#[tokio::test]
async fn no_headroom_refuses_the_run_before_the_first_paid_call() {
    let budget = Arc::new(InMemoryBudget::new().with_user_cap("org1", "u1", 5.0));
    budget.record("org1", "u1", 5.0).await.unwrap();
    let audit = Arc::new(MemorySink::new());
    let provider = Arc::new(ScriptedProvider::new([costing(reply("hi"), 0.01)]).with_paid(true));
    let rt = Runtime::builder(audit.clone(), provider.clone()).roles(roles()).budget(budget.clone()).build();
    let out = rt.start::<Clinic>(me(), "b-none", "hello".into()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::BudgetExhausted, "{out:?}");
    assert_eq!(out.report().iterations, 0);
    assert!(provider.requests().is_empty(), "no paid call was made");
    assert!(out.text().contains("not started"), "{}", out.text());
    let notice = &with_status(&audit, AuditStatus::Notice)[0];
    assert!(notice.reason.as_deref().unwrap().starts_with("budget gate"), "{notice:?}");
    assert_eq!(budget.user_spend("org1", "u1"), 5.0);

    // The organisation's cap binds every user in it.
    let budget = Arc::new(InMemoryBudget::new().with_org_cap("org1", 0.0));
    let provider = Arc::new(ScriptedProvider::new([costing(reply("hi"), 0.01)]).with_paid(true));
    let rt = Runtime::builder(Arc::new(MemorySink::new()), provider.clone()).roles(roles()).budget(budget).build();
    let out = rt.start::<Clinic>(me(), "b-org", "hello".into()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::BudgetExhausted);
    assert!(provider.requests().is_empty());
}

#[tokio::test]
async fn the_run_halts_before_the_next_paid_call_once_spend_reaches_headroom() {
    let budget = Arc::new(InMemoryBudget::new().with_user_cap("org1", "u1", 0.05));
    let audit = Arc::new(MemorySink::new());
    let provider = Arc::new(
        ScriptedProvider::new([
            costing(tool_call("list_athletes", "{}"), 0.03),
            costing(tool_call("list_athletes", "{}"), 0.03),
            costing(reply("never asked"), 0.03),
        ])
        .with_paid(true),
    );
    let rt = Runtime::builder(audit.clone(), provider.clone()).roles(roles()).budget(budget.clone()).build();
    let out = rt.start::<Clinic>(me(), "b-mid", "hello".into()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::BudgetExhausted, "{out:?}");
    assert_eq!(provider.requests().len(), 2);
    assert_eq!(provider.remaining(), 1);
    assert!((out.report().usage.cost_usd - 0.06).abs() < 1e-9);
    assert!((budget.user_spend("org1", "u1") - 0.06).abs() < 1e-9);
    assert!(out.text().contains("stopped partway"), "{}", out.text());

    // The next run is refused at the start gate.
    provider.push(costing(reply("x"), 0.01));
    let out = rt.start::<Clinic>(me(), "b-mid", "again".into()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::BudgetExhausted);
    assert_eq!(provider.requests().len(), 2);
}

#[tokio::test]
async fn a_complete_answer_is_not_withheld_when_it_crosses_the_cap() {
    let budget = Arc::new(InMemoryBudget::new().with_user_cap("org1", "u1", 0.05));
    let provider = Arc::new(
        ScriptedProvider::new([costing(tool_call("list_athletes", "{}"), 0.03), costing(reply("the answer"), 0.03)])
            .with_paid(true),
    );
    let rt = Runtime::builder(Arc::new(MemorySink::new()), provider).roles(roles()).budget(budget.clone()).build();
    let out = rt.start::<Clinic>(me(), "b-answer", "hello".into()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    assert_eq!(out.output().map(|s| s.as_str()), Some("the answer"));
    assert!((budget.user_spend("org1", "u1") - 0.06).abs() < 1e-9);
}

#[tokio::test]
async fn spend_is_recorded_when_the_user_stops_the_run_mid_confirmation() {
    let budget = Arc::new(InMemoryBudget::new().with_user_cap("org1", "u1", 10.0));
    let audit = Arc::new(MemorySink::new());
    let provider = Arc::new(
        ScriptedProvider::new([
            costing(tool_call("list_athletes", "{}"), 0.02),
            costing(tool_call("create_injury", r#"{"athlete_id": 1}"#), 0.05),
        ])
        .with_paid(true),
    );
    let rt = Runtime::builder(audit.clone(), provider).roles(roles()).budget(budget.clone()).build();
    let mut run = rt.start::<Clinic>(me(), "b-stop", "record".into()).unwrap();
    let _call = confirm_required(&mut run).await;
    run.stop();
    let out = run.wait().await;
    assert_eq!(out.status(), RunStatus::Cancelled, "{out:?}");
    assert!((out.report().usage.cost_usd - 0.07).abs() < 1e-9, "{out:?}");
    assert!((budget.user_spend("org1", "u1") - 0.07).abs() < 1e-9, "spend of a stopped run counts");
    let finished = &with_status(&audit, AuditStatus::RunFinished)[0];
    assert_eq!(finished.reason.as_deref(), Some("cancelled"));
    assert!(
        (finished.result.as_ref().and_then(|r| r.value()).unwrap()["cost_usd"].as_f64().unwrap() - 0.07).abs() < 1e-9
    );
}

#[tokio::test]
async fn parallel_calls_in_one_response_are_one_iteration() {
    let provider =
        Arc::new(ScriptedProvider::new([tool_calls([("list_athletes", "{}"), ("list_athletes", "{}")]), reply("two")]));
    let rt = Runtime::builder(Arc::new(MemorySink::new()), provider).roles(roles()).build();
    let out = rt.start::<Clinic>(me(), "par", "hello".into()).unwrap().wait().await;
    assert_eq!(out.report().iterations, 2);
    assert_eq!(ran("par"), 2);
}

/// A paid provider whose every answer costs `cost` and asks for another tool call, after
/// yielding a few times so that the calls of concurrent runs are in flight together.
struct Lockstep {
    cost: f64,
    calls: std::sync::atomic::AtomicUsize,
}
impl Provider for Lockstep {
    fn name(&self) -> &str {
        "lockstep"
    }
    fn model(&self) -> &str {
        "lockstep"
    }
    fn chat<'a>(
        &'a self,
        _: &'a ChatRequest,
        _: &'a dyn TokenSink,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move {
            self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            for _ in 0..20 {
                tokio::task::yield_now().await;
            }
            let mut r = tool_call("list_athletes", "{}");
            r.usage.cost_usd = self.cost;
            Ok(r)
        })
    }
}

/// Three runs of one user at once, each wanting a dozen paid calls: the budget binds all of
/// them together, and the month's spend ends within the cap plus one call per run.
#[tokio::test]
async fn concurrent_runs_of_one_user_exceed_the_cap_by_at_most_one_call_each() {
    const CAP: f64 = 0.10;
    const CALL: f64 = 0.03;
    let budget = Arc::new(InMemoryBudget::new().with_user_cap("org1", "u1", CAP));
    let provider = Arc::new(Lockstep { cost: CALL, calls: Default::default() });
    let rt =
        Runtime::builder(Arc::new(MemorySink::new()), provider.clone()).roles(roles()).budget(budget.clone()).build();
    let runs: Vec<_> =
        (0..3).map(|i| rt.start::<Clinic>(me(), &format!("b-conc-{i}"), "hello".into()).unwrap()).collect();
    let mut total = 0.0;
    for run in runs {
        let out = run.wait().await;
        assert_eq!(out.status(), RunStatus::BudgetExhausted, "{out:?}");
        total += out.report().usage.cost_usd;
    }
    let spend = budget.user_spend("org1", "u1");
    assert!((spend - total).abs() < 1e-9, "the store and the runs agree: {spend} vs {total}");
    assert!(spend < CAP + 3.0 * CALL + 1e-9, "spent {spend} USD against a cap of {CAP} USD");
    assert!(spend >= CAP, "the runs used the budget: {spend}");
    assert_eq!(budget.user_held("org1", "u1"), 0.0, "every reservation was settled");
}

/// A budget store that cannot answer.
struct BrokenBudget;
impl BudgetStore for BrokenBudget {
    fn remaining<'a>(
        &'a self,
        _: &'a str,
        _: &'a str,
    ) -> BoxFuture<'a, Result<f64, agents_runtime::budget::BudgetError>> {
        Box::pin(async { Err(agents_runtime::budget::BudgetError("database down".into())) })
    }
    fn record<'a>(
        &'a self,
        _: &'a str,
        _: &'a str,
        _: f64,
    ) -> BoxFuture<'a, Result<(), agents_runtime::budget::BudgetError>> {
        Box::pin(async { Err(agents_runtime::budget::BudgetError("database down".into())) })
    }
    fn reserve<'a>(
        &'a self,
        _: &'a str,
        _: &'a str,
        _: f64,
    ) -> BoxFuture<'a, Result<agents_runtime::budget::Admission, agents_runtime::budget::BudgetError>> {
        Box::pin(async { Err(agents_runtime::budget::BudgetError("database down".into())) })
    }
    fn settle(
        &self,
        _: agents_runtime::budget::Reservation,
        _: f64,
    ) -> BoxFuture<'_, Result<(), agents_runtime::budget::BudgetError>> {
        Box::pin(async { Err(agents_runtime::budget::BudgetError("database down".into())) })
    }
}

#[tokio::test]
async fn a_failing_budget_store_fails_closed_by_default_and_open_when_set() {
    use agents_runtime::budget::BudgetFallback;
    let audit = Arc::new(MemorySink::new());
    let provider = Arc::new(ScriptedProvider::new([costing(reply("hi"), 0.01)]).with_paid(true));
    let rt = Runtime::builder(audit.clone(), provider.clone()).roles(roles()).budget(Arc::new(BrokenBudget)).build();
    let out = rt.start::<Clinic>(me(), "b-broken", "hello".into()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::Failed, "{out:?}");
    assert!(out.error_text().as_deref().unwrap().contains("budget could not be checked"), "{out:?}");
    assert!(provider.requests().is_empty(), "no paid call was made");
    let notice = &with_status(&audit, AuditStatus::Notice)[0];
    assert!(notice.reason.as_deref().unwrap().contains("database down"), "{notice:?}");

    let audit = Arc::new(MemorySink::new());
    let rt = Runtime::builder(audit.clone(), provider.clone())
        .roles(roles())
        .budget(Arc::new(BrokenBudget))
        .budget_fallback(BudgetFallback::FailOpen)
        .build();
    let out = rt.start::<Clinic>(me(), "b-open", "hello".into()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    assert_eq!(provider.requests().len(), 1);
    let notices = with_status(&audit, AuditStatus::Notice);
    assert!(notices.iter().any(|n| n.reason.as_deref().unwrap().contains("fail open")), "{notices:?}");
}

/// One answer asking for more tool calls than the cap: the first ones run, the rest do not,
/// are answered to the model as refused and are audited as denied.
#[tokio::test]
async fn tool_calls_beyond_the_per_answer_cap_do_not_run() {
    use agents_runtime::run::DEFAULT_MAX_TOOL_CALLS_PER_ANSWER;
    for (cap, asked, session) in [(Some(2), 5, "cap-2"), (None, DEFAULT_MAX_TOOL_CALLS_PER_ANSWER + 3, "cap-default")] {
        let audit = Arc::new(MemorySink::new());
        let calls: Vec<(&str, &str)> = (0..asked).map(|_| ("list_athletes", "{}")).collect();
        let provider = Arc::new(ScriptedProvider::new([tool_calls(calls), reply("done")]));
        let mut builder = Runtime::builder(audit.clone(), provider.clone()).roles(roles());
        if let Some(cap) = cap {
            builder = builder.max_tool_calls_per_answer(cap);
        }
        let max = cap.unwrap_or(DEFAULT_MAX_TOOL_CALLS_PER_ANSWER);
        let out = builder.build().start::<Clinic>(me(), session, "list".into()).unwrap().wait().await;
        assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
        assert_eq!(ran(session), max, "only the first {max} calls ran");
        let told = tool_messages(&provider.requests()[1]);
        assert_eq!(told.len(), asked, "every call is answered");
        for (i, (_, content, is_error)) in told.iter().enumerate() {
            assert_eq!(*is_error, i >= max, "{i}: {content}");
            if i >= max {
                assert!(content.contains("refused") && content.contains(&format!("at most {max}")), "{content}");
            }
        }
        let denied = with_status(&audit, AuditStatus::Denied);
        assert_eq!(denied.len(), asked - max);
        assert!(denied.iter().all(|d| d.reason.as_deref().unwrap().contains("per answer")), "{denied:?}");
    }
}

/// A run that waits for a person keeps its slot for as long as it waits: the node renews it
/// (here the wait is ten leases long). A slot the store no longer holds (it lapsed, and
/// another node may have taken its place under the cap) stops the run at the next renewal.
#[tokio::test(start_paused = true)]
async fn a_waiting_runs_slot_is_renewed_and_a_slot_the_store_dropped_stops_the_run() {
    use agents_runtime::store::{MemoryStore, SlotId, SlotOwner, Store};
    let store = Arc::new(MemoryStore::new());
    let provider = Arc::new(ScriptedProvider::new([tool_call("create_injury", r#"{"athlete_id": 7}"#)]));
    let rt = Runtime::builder(Arc::new(MemorySink::new()), provider)
        .roles(roles())
        .store(store.clone())
        .run_slot_lease(Duration::from_secs(3))
        .build();
    let u1 = me();
    let owner = SlotOwner { org_id: u1.org_id.clone(), user_id: u1.user_id.clone() };
    let run = rt.start::<Clinic>(u1.clone(), "lease-1", "record it".into()).unwrap();
    let call_id = loop {
        if let Some(p) = rt.pending_decisions(&u1).await.unwrap().first() {
            break p.call_id.clone();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert_eq!(store.active_slots(&owner).await.unwrap(), 1, "renewed while the run waits");
    assert_eq!(rt.active_runs(&u1), 1);

    // The store drops the slot, as when its lease lapsed and another node's start pruned it.
    let stored = store.proposal(&call_id).await.unwrap().expect("the stored proposal");
    let slot = stored.proposal.detail["slot"].as_str().expect("the proposal names its run's slot").to_owned();
    store.release_slot(&SlotId(slot)).await.unwrap();
    let out = tokio::time::timeout(Duration::from_secs(5), run.wait()).await.expect("stopped within two renewals");
    assert_eq!(out.status(), RunStatus::Cancelled, "{out:?}");
    assert_eq!(rt.active_runs(&u1), 0, "the stopped run frees its place on the node");
    assert!(rt.pending_decisions(&u1).await.unwrap().is_empty(), "its proposal ended with it");
}
