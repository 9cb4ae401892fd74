//! The audit values an agent declares (`audit: { values: ... }`), held against the runtime's
//! setting: a runtime set to keep more of a call's values than the agent's manifest declares
//! is refused at the start of a run and of a direct session, before anything is recorded or
//! the model is asked; a setting within the declaration runs; and the declaration is a
//! ceiling, not a default: a runtime that sets nothing keeps no value.

use agents_runtime::RunResultExt as _;
use agents_runtime::agents_core::audit::AuditValues;
use agents_runtime::audit::MemorySink;
use agents_runtime::provider::ScriptedProvider;
use agents_runtime::provider::scripted::{reply, tool_call};
use agents_runtime::run::StartError;
use agents_runtime::{Agent, Principal, RoleMap, RunStatus, Runtime, agent, permissions, tool};
use std::sync::Arc;

permissions! {
    pub mod perms { notes.read }
}

/// Reads notes.
#[tool(permission = perms::notes::read)]
async fn read_notes() -> Result<String, String> {
    Ok("none".into())
}

agent! {
    /// Declares nothing: its records keep no value.
    pub struct Plain;
    tools: [read_notes],
}

agent! {
    /// Its records may keep the arguments' values, masked.
    pub struct Masking;
    tools: [read_notes],
    audit: { values: masked },
}

/// Finds a note by a word.
#[tool(permission = perms::notes::read)]
async fn find_note(word: String) -> Result<String, String> {
    Ok(format!("no note about {word}"))
}

agent! {
    /// Its records may keep the arguments' values, masked; it searches by a word.
    pub struct MaskingFinder;
    tools: [find_note],
    audit: { values: masked },
}

fn runtime(values: AuditValues) -> (Runtime, Arc<MemorySink>, Arc<ScriptedProvider>) {
    let audit = Arc::new(MemorySink::new());
    let provider = Arc::new(ScriptedProvider::new([reply("done")]));
    let rt = Runtime::builder(audit.clone(), provider.clone())
        .roles(RoleMap::new().role("reader", ["notes.read"]))
        .audit_values(values)
        .build();
    (rt, audit, provider)
}

fn me() -> Principal {
    Principal::new("u1", "org1", "reader")
}

#[test]
fn the_declaration_is_in_the_spec_and_the_manifest() {
    assert_eq!(Plain::SPEC.audit_values, AuditValues::Omitted);
    assert!(!Plain::MANIFEST.contains("audit_values"), "{}", Plain::MANIFEST);
    assert_eq!(Masking::SPEC.audit_values, AuditValues::Masked);
    assert!(Masking::MANIFEST.contains(r#""audit_values":"masked""#), "{}", Masking::MANIFEST);
}

#[tokio::test]
async fn a_runtime_keeping_more_than_declared_is_refused_before_anything_is_recorded() {
    for (wider, start) in [(AuditValues::Masked, "Plain"), (AuditValues::Full, "Plain"), (AuditValues::Full, "Masking")]
    {
        let (rt, audit, provider) = runtime(wider);
        let err = match start {
            "Plain" => rt.start::<Plain>(me(), "s1", "hi".to_owned()).map(drop).unwrap_err(),
            _ => rt.start::<Masking>(me(), "s1", "hi".to_owned()).map(drop).unwrap_err(),
        };
        let StartError::AuditValuesNotDeclared(e) = &err else { panic!("{err:?}") };
        assert_eq!((e.agent, e.used), (start, wider));
        let text = err.to_string();
        assert!(text.contains(&format!("declare `audit: {{ values: {wider} }}` in agent! of `{start}`")), "{text}");
        assert!(audit.records().is_empty(), "nothing may be recorded for a refused start");
        assert_eq!(provider.remaining(), 1, "the provider was not called");
    }
}

#[tokio::test]
async fn a_direct_session_is_held_to_the_declaration_too() {
    let (rt, audit, _) = runtime(AuditValues::Masked);
    let err = rt.direct::<Plain>(me(), "s1", None).await.map(drop).unwrap_err();
    assert!(matches!(err, StartError::AuditValuesNotDeclared(_)), "{err:?}");
    assert!(audit.records().is_empty());
    assert!(rt.direct::<Masking>(me(), "s2", None).await.is_ok());
}

#[tokio::test]
async fn a_setting_within_the_declaration_runs() {
    for (values, masking) in [(AuditValues::Omitted, false), (AuditValues::Omitted, true), (AuditValues::Masked, true)]
    {
        let (rt, _, _) = runtime(values);
        let out = if masking {
            rt.start::<Masking>(me(), "s1", "hi".to_owned()).unwrap().wait().await
        } else {
            rt.start::<Plain>(me(), "s1", "hi".to_owned()).unwrap().wait().await
        };
        assert_eq!(out.status(), RunStatus::Completed, "{values}: {out:?}");
    }
}

/// The manifest's setting is the most the log may hold, not the runtime's default: a runtime
/// that sets nothing keeps no value even for an agent that allows `masked`; one set to
/// `masked` keeps the value.
#[tokio::test]
async fn a_runtime_that_sets_nothing_keeps_no_value_whatever_the_manifest_allows() {
    let start = |rt: Runtime| async move {
        let out = rt.start::<MaskingFinder>(me(), "s1", "find".to_owned()).unwrap().wait().await;
        assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    };
    let script = || vec![tool_call("find_note", r#"{"word": "hernia"}"#), reply("done")];
    let kept = |audit: &MemorySink| {
        let records = audit.records();
        assert!(records.iter().any(|r| r.tool.as_deref() == Some("find_note")), "{records:?}");
        records.iter().any(|r| r.to_line().contains("hernia"))
    };
    let audit = Arc::new(MemorySink::new());
    let rt = Runtime::builder(audit.clone(), Arc::new(ScriptedProvider::new(script())))
        .roles(RoleMap::new().role("reader", ["notes.read"]))
        .build();
    start(rt).await;
    assert!(!kept(&audit), "no value without the operator's setting");
    let audit = Arc::new(MemorySink::new());
    let rt = Runtime::builder(audit.clone(), Arc::new(ScriptedProvider::new(script())))
        .roles(RoleMap::new().role("reader", ["notes.read"]))
        .audit_values(AuditValues::Masked)
        .build();
    start(rt).await;
    assert!(kept(&audit), "the value is kept once the operator sets `masked`");
}
