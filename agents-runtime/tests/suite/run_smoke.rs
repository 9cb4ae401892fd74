//! A run end to end with the scripted provider: a read, an approved action, audit order.

use agents_runtime::RunResultExt as _;
use agents_runtime::audit::{AuditStatus, MemorySink};
use agents_runtime::events::Event;
use agents_runtime::provider::ScriptedProvider;
use agents_runtime::provider::scripted::{reply, tool_call};
use agents_runtime::{Principal, RoleMap, RunStatus, Runtime, ToolContext, Verdict, agent, permissions, tool};
use std::sync::Arc;

permissions! {
    pub mod perms { athlete.read, injury.write }
}

/// Lists athletes.
#[tool(permission = perms::athlete::read)]
async fn list_athletes(cx: &ToolContext<'_>) -> Result<Vec<String>, String> {
    Ok(vec![format!("athletes of {}", cx.principal().org_id)])
}

/// Records an injury.
///
/// # Arguments
///
/// * `athlete_id` - the athlete id
/// * `note` - the note
#[tool(permission = perms::injury::write, mutating, title = "Record injury")]
async fn create_injury(athlete_id: u64, #[secret] note: String) -> Result<String, String> {
    Ok(format!("injury for {athlete_id}: {} chars", note.len()))
}

agent! {
    /// Test agent.
    pub struct Clinic;
    tools: [list_athletes, create_injury],
}

#[tokio::test]
async fn read_then_approved_action() {
    let audit = Arc::new(MemorySink::new());
    let provider = Arc::new(ScriptedProvider::new([
        tool_call("list_athletes", "{}"),
        tool_call("create_injury", r#"{"athlete_id": 7, "note": "torn ACL"}"#),
        reply("done"),
    ]));
    let rt = Runtime::builder(audit.clone(), provider)
        .roles(RoleMap::new().role("physio", ["athlete.read", "injury.write"]))
        .build();
    let me = Principal::new("u1", "org1", "physio");
    let mut run = rt.start::<Clinic>(me.clone(), "s1", "record it".to_owned()).unwrap();
    loop {
        match run.events().recv().await.unwrap() {
            Event::ConfirmRequired { call_id, args, .. } => {
                assert_eq!(args["note"], "•••");
                let other = Principal::new("u2", "org1", "physio");
                assert!(rt.decide(&call_id, &other, Verdict::Approve).is_err());
                rt.decide(&call_id, &me, Verdict::Approve).unwrap();
            }
            Event::Done { .. } => break,
            _ => {}
        }
    }
    let out = run.wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    assert_eq!(out.output().map(|s| s.as_str()), Some("done"));
    let statuses: Vec<_> = audit.records().iter().map(|r| r.status).collect();
    use AuditStatus::*;
    assert_eq!(statuses, vec![RunStarted, Proposed, Executed, Proposed, Confirmed, Executed, RunFinished]);
    let text = audit.to_jsonl();
    assert!(!text.contains("torn ACL"));
    agents_runtime::agents_core::audit::verify_jsonl(&text, Some(Clinic::MANIFEST_SHA256)).unwrap();
}
