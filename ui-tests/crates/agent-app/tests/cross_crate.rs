//! The agent's manifest, registry and a run, over tools defined in another crate.

use agents::agents_core::manifest::Manifest;
use agents::audit::{AuditStatus, MemorySink};
use agents::provider::scripted::{reply, tool_call};
use agents::provider::{ChatMessage, ScriptedProvider};
use agents::RunResultExt as _;
use agents::{Agent, Principal, Registry, RoleMap, RunStatus, Runtime};
use sha2::{Digest, Sha256};
use std::sync::Arc;
use ui_agent_app::{Clinic, ClinicSkill};

#[test]
fn the_manifest_hash_is_the_sha256_of_the_manifest_bytes() {
    let hex: String = Sha256::digest(Clinic::MANIFEST.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(Clinic::MANIFEST_SHA256, hex);
}

#[test]
fn the_manifest_matches_the_specs_compiled_in_both_crates() {
    let from_specs = Manifest::from_specs(&Clinic::SPEC, Clinic::tools()).unwrap();
    assert_eq!(from_specs.to_canonical_string(), Clinic::MANIFEST);
    let parsed = Manifest::parse(Clinic::MANIFEST).unwrap();
    let names: Vec<&str> = parsed.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["create_injury", "list_athletes", "reset_password", "squad_summary", "whoami"]);
    assert_eq!(Clinic::SPEC.limits.max_iterations, 6);
}

#[test]
fn the_registry_finds_the_tools_of_the_other_crate() {
    for name in ["list_athletes", "create_injury", "reset_password", "squad_summary", "whoami"] {
        assert!(<Clinic as Registry>::entry(name).is_some(), "{name}");
    }
    assert!(<Clinic as Registry>::entry("region").is_none());
    assert_eq!(<Clinic as Agent>::tool_spec("squad_summary").unwrap().uses, ["list_athletes"]);
}

#[tokio::test]
async fn a_tool_from_the_other_crate_invokes_another_through_the_gate() {
    let audit = Arc::new(MemorySink::new());
    let provider = Arc::new(ScriptedProvider::new([
        tool_call("squad_summary", r#"{"squad": "first"}"#),
        tool_call("whoami", "{}"),
        reply("done"),
    ]));
    let rt = Runtime::builder(audit.clone(), provider.clone())
        .roles(RoleMap::new().role("physio", ["athlete.read"]))
        .build();
    let me = Principal::new("u1", "org1", "physio");
    let run = rt.start_in_skill(me, "s1", ClinicSkill::Review, "summarise".to_owned()).unwrap();
    let out = run.wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");

    // The nested call went through the gate and was audited before the outer one finished.
    let executed: Vec<String> = audit
        .records()
        .into_iter()
        .filter(|r| r.status == AuditStatus::Executed)
        .filter_map(|r| r.tool.map(String::from))
        .collect();
    assert_eq!(executed, ["list_athletes", "squad_summary", "whoami"]);
    assert!(audit.records().iter().all(|r| r.manifest_sha256 == Clinic::MANIFEST_SHA256));

    // What the model was told: the tool of the other crate ran with the principal of the run.
    let told: Vec<(String, String)> = provider
        .requests()
        .last()
        .unwrap()
        .messages
        .iter()
        .filter_map(|m| match m {
            ChatMessage::Tool { name, content, .. } => Some((name.clone(), content.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(told.len(), 2, "{told:?}");
    assert!(told[0].1.contains("athletes of org1 in first"), "{told:?}");
    assert!(told[1].1.contains("u1 of org1"), "{told:?}");
}
