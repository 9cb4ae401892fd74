//! Typed skills in the manifest: a skill with types of its own names them under `io`; one
//! without writes no key, so an untyped agent keeps its bytes and hash.

use agents_core::diff::{Rule, diff_documents};
use agents_core::manifest::{AgentEntry, Manifest, SkillEntry};
use agents_core::reviewed::{Document, IoSchemas};
use agents_core::skill::SkillIo;
use agents_core::{AgentSpec, SkillSpec};

fn spec(skills: &'static [SkillSpec]) -> AgentSpec {
    AgentSpec {
        name: "desk",
        description: "Helps.",
        input: "String",
        output: "String",
        skills,
        ceiling: None,
        limits: agents_core::Limits::DEFAULT,
        models: None,
        budget: Default::default(),
        audit_values: Default::default(),
        unskilled: Default::default(),
        knowledge: &[],
        expose_mcp: &[],
    }
}

fn manifest(io: Option<SkillIo>) -> Manifest {
    let agent = AgentEntry {
        skills: vec![SkillEntry { name: "review".into(), tools: vec![], io }],
        ..AgentEntry::new("desk", "Helps.")
    };
    Manifest::from_entries(agent, vec![]).unwrap()
}

#[test]
fn an_untyped_skill_writes_no_io_key_and_a_typed_one_names_both_types() {
    let untyped = manifest(None).to_canonical_string();
    assert!(untyped.contains(r#"{"name":"review","tools":[]}"#), "{untyped}");
    assert!(!untyped.contains("\"io\""), "{untyped}");
    let io = SkillIo { input: "RawRequest".into(), output: "Decision".into() };
    let typed = manifest(Some(io)).to_canonical_string();
    assert!(
        typed.contains(r#"{"io":{"input":"RawRequest","output":"Decision"},"name":"review","tools":[]}"#),
        "{typed}"
    );
    assert_eq!(Manifest::parse(&typed).unwrap(), manifest(Some(SkillIo::from_spec(("RawRequest", "Decision")))));
    assert_ne!(typed, untyped);
}

#[test]
fn a_skill_io_missing_a_type_or_with_an_unknown_key_is_refused() {
    let typed = manifest(Some(SkillIo::from_spec(("RawRequest", "Decision")))).to_canonical_string();
    let whole = r#"{"input":"RawRequest","output":"Decision"}"#;
    for bad in
        [r#"{"input":"RawRequest"}"#, r#"{"input":"RawRequest","output":"Decision","extra":"x"}"#, "\"RawRequest\""]
    {
        let text = typed.replacen(whole, bad, 1);
        assert!(Manifest::parse(&text).is_err(), "accepted {text}");
    }
}

#[test]
fn the_manifest_of_a_spec_names_a_typed_skill_s_types_as_agent_macro_writes_them() {
    static SKILLS: [SkillSpec; 2] = [
        SkillSpec { name: "read", tools: &[], io: None },
        SkillSpec { name: "review", tools: &[], io: Some(("RawRequest", "Decision")) },
    ];
    let entry = AgentEntry::from_spec(&spec(&SKILLS));
    assert_eq!(entry.skills[0].io, None);
    assert_eq!(entry.skills[1].io, Some(SkillIo { input: "RawRequest".into(), output: "Decision".into() }));
}

fn closed(props: serde_json::Value) -> serde_json::Value {
    serde_json::json!({"type": "object", "properties": props, "additionalProperties": false})
}

/// A reviewed document whose agent takes `{id}` and whose skill `review`, typed when
/// `skill_input` is given, takes it.
fn document(skill_input: Option<serde_json::Value>) -> Document {
    let agent_input = closed(serde_json::json!({"id": {"type": "integer"}}));
    let typed = skill_input.is_some().then(|| SkillIo::from_spec(("RawRequest", "Decision")));
    let mut io = IoSchemas::new(agent_input, serde_json::json!(true));
    if let Some(input) = skill_input {
        io.skills.insert("review".into(), IoSchemas::new(input, serde_json::json!({"type": "boolean"})));
    }
    Document { manifest: manifest(typed), io: Some(io) }
}

#[test]
fn a_reviewed_document_holds_each_typed_skill_s_schemas_and_an_untyped_one_none() {
    let untyped = document(None).to_canonical_string();
    assert!(!untyped.contains("\"skills\":{"), "{untyped}");
    let typed = document(Some(closed(serde_json::json!({"path": {"type": "string"}}))));
    let text = typed.to_canonical_string();
    assert!(text.contains(r#""skills":{"review":{"input":"#), "{text}");
    assert_eq!(Document::parse(&text).unwrap(), typed);
}

#[test]
fn a_reviewed_document_whose_skill_schemas_do_not_match_its_typed_skills_is_refused() {
    let typed = document(Some(closed(serde_json::json!({"path": {"type": "string"}}))));
    // Schemas for a skill the manifest does not type, and none for one it types.
    let mut extra = document(None);
    extra.io.as_mut().unwrap().skills = typed.io.clone().unwrap().skills;
    let mut missing = typed.clone();
    missing.io.as_mut().unwrap().skills.clear();
    let mut not_schema = typed.clone();
    not_schema.io.as_mut().unwrap().skills.get_mut("review").unwrap().input = serde_json::json!(7);
    for (doc, why) in
        [(extra, "`io.skills` names"), (missing, "`io.skills` names"), (not_schema, "io.skills.review.input")]
    {
        let err = Document::parse(&doc.to_canonical_string()).unwrap_err().to_string();
        assert!(err.contains(why), "{err}");
    }
}

#[test]
fn a_typed_skill_s_input_schema_is_diffed_as_the_agent_s_is() {
    let narrow = closed(serde_json::json!({"path": {"type": "string"}}));
    let wide = closed(serde_json::json!({"path": {"type": "string"}, "note": {"type": "string"}}));
    let d = diff_documents(&document(Some(narrow.clone())), &document(Some(wide.clone())));
    let c: Vec<_> = d.changes.iter().filter(|c| c.rule == Rule::InputSchemaWidened).collect();
    assert_eq!(c.len(), 1, "{:?}", d.changes);
    assert!(c[0].reason.starts_with("the input schema of skill `review` may accept values"), "{}", c[0].reason);
    assert!(d.has_widening());
    let back = diff_documents(&document(Some(wide)), &document(Some(narrow.clone())));
    assert!(back.changes.iter().any(|c| c.rule == Rule::InputSchemaNarrowed), "{:?}", back.changes);
    assert!(!back.has_widening());
    // A skill that becomes typed is compared against the agent's input it took before.
    let d = diff_documents(&document(None), &document(Some(narrow)));
    assert!(d.changes.iter().any(|c| c.rule == Rule::InputSchemaWidened), "{:?}", d.changes);
    assert!(diff_documents(&document(None), &document(None)).changes.is_empty());
}

#[test]
fn a_skill_that_becomes_typed_is_shown_with_its_types_in_the_diff_and_the_report() {
    let typed = manifest(Some(SkillIo::from_spec(("RawRequest", "Decision"))));
    let d = agents_core::diff::diff(&manifest(None), &typed);
    let c: Vec<_> = d.changes.iter().filter(|c| c.rule == Rule::SkillsChanged).collect();
    assert_eq!(c.len(), 1, "{:?}", d.changes);
    assert!(c[0].reason.contains("to {review(RawRequest -> Decision): []}"), "{}", c[0].reason);
    let page = agents_core::report::render(&agents_core::report::Report::new(&typed, "kyc.json", "00"));
    assert!(page.contains("review(RawRequest -&#62; Decision)"), "the report names the skill's types");
}
