//! Tool failures are contained: a panicking tool fails its call (its message withheld) and the
//! run ends normally; a tool that never returns is ended by `stop()` and by the per-call
//! deadline, and its run slot is released; a result larger than the bound is cut with a notice.

use crate::run_common;

use agents_runtime::RunResultExt as _;
use agents_runtime::audit::{AuditStatus, MemorySink};
use agents_runtime::events::Event;
use agents_runtime::provider::ScriptedProvider;
use agents_runtime::provider::scripted::{reply, tool_call};
use agents_runtime::{Principal, RoleMap, RunStatus, Runtime, Secret, ToolContext, agent, permissions, tool};
use run_common::*;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

permissions! {
    pub mod perms { data.read }
}

const PIN: &str = "PIN-4401-zq";

/// Panics with its argument in the message.
#[tool(permission = perms::data::read)]
async fn explode(cx: &ToolContext<'_>, pin: Secret<String>) -> Result<String, String> {
    bump(cx.session_id());
    panic!("could not use {}", pin.expose());
}

fn started() -> &'static Mutex<HashMap<String, Arc<tokio::sync::Notify>>> {
    static S: OnceLock<Mutex<HashMap<String, Arc<tokio::sync::Notify>>>> = OnceLock::new();
    S.get_or_init(Default::default)
}

fn started_in(session: &str) -> Arc<tokio::sync::Notify> {
    started().lock().unwrap().entry(session.to_owned()).or_default().clone()
}

/// Never returns.
#[tool(permission = perms::data::read)]
async fn hang(cx: &ToolContext<'_>) -> Result<String, String> {
    bump(cx.session_id());
    started_in(cx.session_id()).notify_one();
    std::future::pending().await
}

/// Returns `megabytes` MB of text.
#[tool(permission = perms::data::read)]
async fn flood(cx: &ToolContext<'_>, megabytes: usize) -> Result<String, String> {
    bump(cx.session_id());
    Ok("x".repeat(megabytes * 1_000_000))
}

agent! {
    /// Tool failures.
    pub struct Failing;
    audit: { values: full },
    tools: [explode, hang, flood],
}

fn me() -> Principal {
    Principal::new("u1", "org1", "analyst")
}

fn runtime(
    script: Vec<agents_runtime::provider::ChatResponse>,
    configure: impl FnOnce(agents_runtime::RuntimeBuilder) -> agents_runtime::RuntimeBuilder,
) -> (Runtime, Arc<MemorySink>, Arc<ScriptedProvider>) {
    let audit = Arc::new(MemorySink::new());
    let provider = Arc::new(ScriptedProvider::new(script));
    let builder =
        Runtime::builder(audit.clone(), provider.clone()).roles(RoleMap::new().role("analyst", ["data.read"]));
    (configure(builder).build(), audit, provider)
}

#[tokio::test]
async fn a_panicking_tool_fails_its_call_and_the_run_ends_normally_without_the_panic_text() {
    let args = format!(r#"{{"pin": "{PIN}"}}"#);
    let (rt, audit, provider) = runtime(vec![tool_call("explode", args), reply("it failed")], |b| b);
    let mut run = rt.start::<Failing>(me(), "panic", "go".into()).unwrap();
    let events = events_until_done(&mut run).await;
    let out = run.wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    assert_eq!(ran("panic"), 1);
    assert!(matches!(events.last(), Some(Event::Done { status, .. }) if *status == RunStatus::Completed), "{events:?}");
    let failed = with_status(&audit, AuditStatus::Failed);
    assert_eq!(failed.len(), 1, "{:?}", audit.records());
    assert!(failed[0].reason.as_deref().unwrap().starts_with("panicked:"), "{failed:?}");
    let told = tool_messages(&provider.requests()[1]);
    assert!(told[0].2 && told[0].1.contains("panicked"), "{told:?}");
    // The panic's text quotes the secret: it reaches no record, event, tool message or outcome
    // (the model's own call, replayed to it, is the only text that holds the secret).
    let told_all: Vec<_> = provider.requests().iter().flat_map(tool_messages).collect();
    let everything = format!("{}{:?}{:?}{:?}", serde_json::to_string(&audit.records()).unwrap(), told_all, events, out);
    assert!(!everything.contains(PIN) && !everything.contains("could not use"), "{everything}");
    assert_eq!(rt.active_runs(&me()), 0);
}

#[tokio::test]
async fn stop_ends_a_hanging_tool_and_releases_its_slot() {
    let (rt, audit, _provider) = runtime(vec![tool_call("hang", "{}"), reply("never asked")], |b| {
        b.tool_timeout(Duration::from_secs(24 * 3600))
    });
    let tool_started = started_in("hang-stop");
    let run = rt.start::<Failing>(me(), "hang-stop", "go".into()).unwrap();
    tool_started.notified().await;
    assert_eq!(rt.active_runs(&me()), 1);
    run.stop();
    let out = run.wait().await;
    assert_eq!(out.status(), RunStatus::Cancelled, "{out:?}");
    let failed = with_status(&audit, AuditStatus::Failed);
    assert_eq!(failed.len(), 1, "{:?}", audit.records());
    assert!(failed[0].reason.as_deref().unwrap().starts_with("stopped:"), "{failed:?}");
    assert_eq!(rt.active_runs(&me()), 0);
}

#[tokio::test(start_paused = true)]
async fn the_per_call_deadline_ends_a_hanging_tool_and_the_run_goes_on() {
    let (rt, audit, provider) =
        runtime(vec![tool_call("hang", "{}"), reply("it hung")], |b| b.tool_timeout(Duration::from_secs(10)));
    let begun = tokio::time::Instant::now();
    let out = rt.start::<Failing>(me(), "hang-deadline", "go".into()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    assert_eq!(ran("hang-deadline"), 1);
    assert!(begun.elapsed() >= Duration::from_secs(10));
    let failed = with_status(&audit, AuditStatus::Failed);
    assert!(failed[0].reason.as_deref().unwrap().starts_with("timeout:"), "{failed:?}");
    let told = tool_messages(&provider.requests()[1]);
    assert!(told[0].2 && told[0].1.contains("did not finish within 10 s"), "{told:?}");
    assert_eq!(rt.active_runs(&me()), 0);
}

#[tokio::test]
async fn the_default_deadline_is_a_setting() {
    assert_eq!(agents_runtime::run::DEFAULT_TOOL_TIMEOUT, Duration::from_secs(300));
    assert_eq!(agents_runtime::run::DEFAULT_MAX_RESULT_BYTES, 1 << 20);
}

#[tokio::test]
async fn a_20_mb_result_is_cut_before_the_model_the_events_and_the_audit_log_see_it() {
    a_20_mb_result_is_cut(true).await;
}

/// The default runtime keeps a result's keyed digest, measured from the same canonical text.
#[tokio::test]
async fn a_20_mb_result_is_cut_when_the_record_keeps_its_digest() {
    a_20_mb_result_is_cut(false).await;
}

async fn a_20_mb_result_is_cut(raw_results: bool) {
    let (rt, audit, provider) =
        runtime(vec![tool_call("flood", r#"{"megabytes": 20}"#), reply("big")], |b| b.record_raw_results(raw_results));
    let mut run = rt.start::<Failing>(me(), "flood", "go".into()).unwrap();
    let events = events_until_done(&mut run).await;
    assert_eq!(run.wait().await.status(), RunStatus::Completed);
    let told = tool_messages(&provider.requests()[1]);
    assert!(told[0].1.len() <= (1 << 20) + 1024, "{}", told[0].1.len());
    assert!(told[0].1.contains("the result was cut: 20000002 bytes"), "{}", &told[0].1[..200]);
    let executed = &with_status(&audit, AuditStatus::Executed)[0];
    assert!(executed.reason.as_deref().unwrap().contains("cut"), "{executed:?}");
    assert!(serde_json::to_string(&executed.result).unwrap().len() <= (1 << 20) + 1024);
    let shown = events.iter().find_map(|e| match e {
        Event::ToolResult { result: Some(r), .. } => Some(r.to_string().len()),
        _ => None,
    });
    assert!(shown.unwrap() <= (1 << 20) + 1024);
}

/// A 1 MB result is within the bound for everyone, but not within the model's: the model reads
/// its first 64 KiB and a notice of what was cut; the events carry it whole; the `executed`
/// record holds the keyed digest of the whole result and says how much the model was shown.
#[tokio::test]
async fn a_1_mb_result_reaches_the_model_as_its_bound_and_a_notice_while_the_record_digests_all_of_it() {
    use agents_runtime::audit::AuditResult;
    use agents_runtime::{run::DEFAULT_MAX_MODEL_RESULT_BYTES as MAX, token::TokenStore};
    let key = [7u8; 32];
    let (rt, audit, provider) =
        runtime(vec![tool_call("flood", r#"{"megabytes": 1}"#), reply("long")], |b| b.server_key(key));
    let mut run = rt.start::<Failing>(me(), "flood-model", "go".into()).unwrap();
    let events = events_until_done(&mut run).await;
    assert_eq!(run.wait().await.status(), RunStatus::Completed);
    let whole = serde_json::Value::String("x".repeat(1_000_000));
    let told = &tool_messages(&provider.requests()[1])[0].1;
    let (start, notice) = told.split_once("\n\n").expect("the start of the result, then the notice");
    assert_eq!(start.len(), MAX, "the model reads exactly the bound of the result");
    assert!(whole.to_string().starts_with(start));
    assert!(notice.contains("1000002 bytes long") && notice.contains("other 934466 bytes"), "{notice}");
    assert!(notice.contains("not visible to you"), "{notice}");
    assert!(told.len() < MAX + 512, "{} bytes sent for one result", told.len());
    let executed = &with_status(&audit, AuditStatus::Executed)[0];
    let digest = TokenStore::new(key).result_mac(agents_runtime::agents_core::canonical::to_string(&whole).as_bytes());
    assert_eq!(executed.result, Some(AuditResult::Sha256(digest)), "the digest of the whole result");
    let reason = executed.reason.as_deref().unwrap_or_default();
    assert!(reason.contains("only the first 65536 of the result's 1000002 bytes"), "{reason}");
    let shown = events.iter().find_map(|e| match e {
        Event::ToolResult { result: Some(r), .. } => Some(r.clone()),
        _ => None,
    });
    assert_eq!(shown, Some(whole), "the application's view is the whole result");
}

/// The model's bound is a setting; a result within it reaches the model whole and the record
/// says nothing of a cut.
#[tokio::test]
async fn the_models_bound_is_a_setting_and_a_result_within_it_is_whole() {
    let script = vec![tool_call("flood", r#"{"megabytes": 1}"#), reply("long")];
    let (rt, audit, provider) = runtime(script, |b| b.max_model_result_bytes(2_000_000));
    let out = rt.start::<Failing>(me(), "flood-within", "go".into()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::Completed);
    assert_eq!(tool_messages(&provider.requests()[1])[0].1.len(), 1_000_002);
    assert_eq!(with_status(&audit, AuditStatus::Executed)[0].reason, None);
}
