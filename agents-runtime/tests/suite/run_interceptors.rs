//! Interceptors see every call after the strict parse and before the tier; each decision is
//! audited and the model hears about a deny.

use crate::run_common;

use agents_runtime::RunResultExt as _;
use agents_runtime::audit::{AuditStatus, MemorySink};
use agents_runtime::interceptor::{Decision, Interception};
use agents_runtime::provider::ScriptedProvider;
use agents_runtime::provider::scripted::{reply, tool_call};
use agents_runtime::{Principal, RoleMap, RunStatus, Runtime, ToolContext, agent, permissions, tool};
use run_common::*;
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

permissions! {
    pub mod perms { files.read }
}

/// Reads a file.
#[tool(permission = perms::files::read)]
async fn read_file(cx: &ToolContext<'_>, path: String) -> Result<String, String> {
    bump(cx.session_id());
    saw(cx.session_id(), path.clone());
    Ok(format!("contents of {path}"))
}

agent! {
    /// Reads files.
    pub struct Reader;
    audit: { values: masked },
    tools: [read_file],
}

fn runtime(
    audit: Arc<MemorySink>,
    provider: Arc<ScriptedProvider>,
    decide: impl for<'a> Fn(Interception<'a>) -> Decision + Send + Sync + 'static,
) -> Runtime {
    Runtime::builder(audit, provider)
        .roles(RoleMap::new().role("dev", ["files.read"]))
        .interceptor(Arc::new(decide))
        // These tests read the arguments a record holds.
        .audit_values(agents_runtime::agents_core::audit::AuditValues::Masked)
        .build()
}

fn script() -> Arc<ScriptedProvider> {
    Arc::new(ScriptedProvider::new([tool_call("read_file", r#"{"path": "/etc/shadow"}"#), reply("done")]))
}

fn me() -> Principal {
    Principal::new("d1", "org1", "dev")
}

#[tokio::test]
async fn proceed_runs_the_tool_with_the_model_arguments() {
    let audit = Arc::new(MemorySink::new());
    let provider = script();
    let seen_calls = Arc::new(AtomicUsize::new(0));
    let counter = seen_calls.clone();
    let rt = runtime(audit.clone(), provider.clone(), move |call: Interception<'_>| {
        assert_eq!(call.spec.name, "read_file");
        assert_eq!(call.principal.user_id, "d1");
        assert_eq!(call.args["path"], "/etc/shadow");
        counter.fetch_add(1, Ordering::SeqCst);
        Decision::Proceed
    });
    let out = rt.start::<Reader>(me(), "i-proceed", "read".into()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    assert_eq!(seen_calls.load(Ordering::SeqCst), 1);
    assert_eq!(seen_in("i-proceed"), vec!["/etc/shadow".to_owned()]);
    assert_eq!(call_statuses(&audit, "call_1"), vec![AuditStatus::Proposed, AuditStatus::Executed]);
}

#[tokio::test]
async fn proceed_with_hands_the_new_arguments_to_the_handler_and_audits_modified() {
    let audit = Arc::new(MemorySink::new());
    let provider = script();
    let rt = runtime(audit.clone(), provider.clone(), |call: Interception<'_>| {
        if call.args["path"] == "/etc/shadow" {
            Decision::ProceedWith(json!({"path": "/srv/public/readme"}))
        } else {
            Decision::Proceed
        }
    });
    let out = rt.start::<Reader>(me(), "i-with", "read".into()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    assert_eq!(seen_in("i-with"), vec!["/srv/public/readme".to_owned()], "the handler receives the replaced arguments");
    assert_eq!(
        call_statuses(&audit, "call_1"),
        vec![AuditStatus::Modified, AuditStatus::Proposed, AuditStatus::Executed]
    );
    let modified = &with_status(&audit, AuditStatus::Modified)[0];
    assert_eq!(modified.args.as_ref().unwrap()["path"], "/srv/public/readme");
    let proposed = &with_status(&audit, AuditStatus::Proposed)[0];
    assert_eq!(proposed.args.as_ref().unwrap()["path"], "/srv/public/readme");
    let told = tool_messages(&provider.requests()[1]);
    assert!(told[0].1.contains("contents of /srv/public/readme"), "{told:?}");
}

#[tokio::test]
async fn proceed_with_arguments_that_do_not_fit_is_denied() {
    let audit = Arc::new(MemorySink::new());
    let provider = script();
    let rt = runtime(audit.clone(), provider.clone(), |_: Interception<'_>| Decision::ProceedWith(json!({"path": 7})));
    let out = rt.start::<Reader>(me(), "i-with-bad", "read".into()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    assert_eq!(ran("i-with-bad"), 0);
    assert_eq!(call_statuses(&audit, "call_1"), vec![AuditStatus::Denied]);
    assert!(
        with_status(&audit, AuditStatus::Denied)[0]
            .reason
            .as_deref()
            .unwrap()
            .contains("an interceptor produced invalid arguments")
    );
}

#[tokio::test]
async fn proceed_with_an_inexact_number_is_denied_before_it_is_parsed() {
    let audit = Arc::new(MemorySink::new());
    let provider = script();
    let rt = runtime(audit.clone(), provider.clone(), |_: Interception<'_>| {
        Decision::ProceedWith(json!({"path": 9_007_199_254_740_993_u64}))
    });
    let out = rt.start::<Reader>(me(), "i-with-inexact", "read".into()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    assert_eq!(ran("i-with-inexact"), 0);
    assert_eq!(call_statuses(&audit, "call_1"), vec![AuditStatus::Denied]);
    let reason = with_status(&audit, AuditStatus::Denied)[0].reason.clone().unwrap();
    assert!(
        reason.starts_with("an interceptor produced invalid arguments: number 9007199254740993 at `/path`"),
        "{reason}"
    );
    // The record keeps the arguments as they were before the interceptor's replacement.
    assert_eq!(with_status(&audit, AuditStatus::Denied)[0].args.as_ref().unwrap()["path"], "/etc/shadow");
}

#[tokio::test]
async fn deny_is_audited_and_the_reason_reaches_the_model() {
    let audit = Arc::new(MemorySink::new());
    let provider = script();
    let rt = runtime(audit.clone(), provider.clone(), |call: Interception<'_>| match call.args["path"].as_str() {
        Some(p) if p.starts_with("/etc/") => Decision::Deny(format!("`{p}` is outside the declared read roots")),
        _ => Decision::Proceed,
    });
    let out = rt.start::<Reader>(me(), "i-deny", "read".into()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    assert_eq!(ran("i-deny"), 0, "nothing ran");
    assert_eq!(call_statuses(&audit, "call_1"), vec![AuditStatus::Denied]);
    let denied = &with_status(&audit, AuditStatus::Denied)[0];
    assert_eq!(denied.reason.as_deref(), Some("denied by policy: `/etc/shadow` is outside the declared read roots"));
    let told = tool_messages(&provider.requests()[1]);
    assert_eq!(told.len(), 1);
    assert!(told[0].2);
    assert!(told[0].1.contains("`/etc/shadow` is outside the declared read roots"), "{told:?}");
}

#[tokio::test]
async fn substitute_answers_in_place_of_the_tool() {
    let audit = Arc::new(MemorySink::new());
    let provider = script();
    let rt = runtime(audit.clone(), provider.clone(), |_: Interception<'_>| {
        Decision::Substitute(json!({"cached": "shadow file (cached)"}))
    });
    let out = rt.start::<Reader>(me(), "i-subst", "read".into()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    assert_eq!(ran("i-subst"), 0, "the tool did not run");
    assert_eq!(call_statuses(&audit, "call_1"), vec![AuditStatus::Substituted]);
    let told = tool_messages(&provider.requests()[1]);
    assert!(!told[0].2);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&told[0].1).unwrap(),
        json!({"cached": "shadow file (cached)"})
    );
}

#[tokio::test]
async fn interceptors_run_in_order_and_a_deny_stops_the_chain() {
    let audit = Arc::new(MemorySink::new());
    let provider = script();
    let second = Arc::new(AtomicUsize::new(0));
    let s = second.clone();
    let rt = Runtime::builder(audit.clone(), provider.clone())
        .roles(RoleMap::new().role("dev", ["files.read"]))
        .interceptor(Arc::new(|_: Interception<'_>| Decision::Deny("first".into())))
        .interceptor(Arc::new(move |_: Interception<'_>| {
            s.fetch_add(1, Ordering::SeqCst);
            Decision::Proceed
        }))
        .build();
    let out = rt.start::<Reader>(me(), "i-order", "read".into()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::Completed);
    assert_eq!(second.load(Ordering::SeqCst), 0);
    assert_eq!(ran("i-order"), 0);
}
