//! A crate whose only dependency is `agents-runtime` gets working tools and agents.

use agents_runtime::{Agent, Registry, Tier, Tool, linked_tools};
use sha2::{Digest, Sha256};
use ui_tools_lib::{SquadReader, create_injury, list_athletes, reset_password, squad_summary};

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn the_manifest_hash_is_the_sha256_of_the_manifest_bytes() {
    assert_eq!(SquadReader::MANIFEST_SHA256, sha256_hex(SquadReader::MANIFEST.as_bytes()));
    assert_eq!(<SquadReader as Agent>::MANIFEST, SquadReader::MANIFEST);
}

#[test]
fn every_tool_is_linked_and_described() {
    let linked: Vec<&str> = linked_tools().iter().map(|s| s.name).collect();
    for name in ["create_injury", "list_athletes", "region", "reset_password", "squad_summary"] {
        assert!(linked.contains(&name), "{name} missing from {linked:?}");
    }
    assert_eq!(create_injury::SPEC.tier, Tier::Action);
    assert_eq!(create_injury::SPEC.title, Some("Record injury"));
    assert_eq!(reset_password::SPEC.tier, Tier::Handoff);
    assert_eq!(squad_summary::SPEC.uses, ["list_athletes"]);
    assert_eq!(
        list_athletes::SPEC.description,
        "Lists the athletes of the caller's organisation, optionally one squad."
    );
}

#[test]
fn arguments_are_typed_strict_and_schema_described() {
    let entry = <SquadReader as Registry>::entry("list_athletes").expect("granted");
    assert!(entry.parse(&serde_json::json!({ "squad": "first" })).is_ok());
    assert!(entry.parse(&serde_json::json!({ "squad": "first", "extra": 1 })).is_err());
    assert!(entry.parse(&serde_json::json!({ "squad": 3 })).is_err());
    let schema = entry.schema();
    assert!(schema["properties"].get("squad").is_some(), "{schema}");
    let secret = &create_injury::input_schema()["properties"]["note"];
    assert_eq!(secret["x-agents-secret"], true, "{secret}");
}

#[test]
fn the_registry_holds_exactly_the_grants() {
    assert!(<SquadReader as Registry>::entry("squad_summary").is_some());
    assert!(<SquadReader as Registry>::entry("region").is_some());
    assert!(<SquadReader as Registry>::entry("create_injury").is_none());
    let names: Vec<&str> = SquadReader::tools().iter().map(|t| t.name).collect();
    assert_eq!(names, ["list_athletes", "region", "squad_summary"]);
    assert_eq!(SquadReader::SPEC.ceiling, Some(&["athlete.read"][..]));
}
