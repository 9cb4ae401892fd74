//! The reviewed document: read as strictly as a manifest, canonical, the manifest inside it
//! exactly the manifest's bytes; compared with the schema rules, and checked by the baseline
//! gate like a manifest.

use agents_core::baseline::{BaselineError, Mode, check_with};
use agents_core::diff::{ChangeKind, Rule, diff_documents};
use agents_core::manifest::{AgentEntry, Manifest, ManifestError};
use agents_core::reviewed::{Document, IoSchemas};
use serde_json::{Value, json};

fn manifest() -> Manifest {
    Manifest::from_entries(AgentEntry::new("intake", "Reads a request."), vec![]).unwrap()
}

fn doc(input: Value, output: Value) -> Document {
    Document { manifest: manifest(), io: Some(IoSchemas::new(input, output)) }
}

fn request(extra: bool) -> Value {
    let mut props = json!({"id": {"type": "integer"}});
    if extra {
        props["note"] = json!({"type": "string"});
    }
    json!({"type": "object", "properties": props, "required": ["id"], "additionalProperties": false})
}

#[test]
fn the_document_is_canonical_and_holds_the_manifest_bytes() {
    let d = doc(request(false), json!({"type": "string"}));
    let text = d.to_canonical_string();
    assert!(text.starts_with(r#"{"format":"agents.reviewed-manifest","io":{"input":"#), "{text}");
    assert!(text.contains(&format!(r#""manifest":{}"#, manifest().to_canonical_string())));
    let back = Document::parse(&text).unwrap();
    assert_eq!(back, d);
    assert!(back.is_canonical_text(text.as_bytes()));
    assert_ne!(back.sha256(), manifest().sha256());
    // A plain manifest is read as one, its hash unchanged.
    let plain = Document::parse(&manifest().to_canonical_string()).unwrap();
    assert_eq!(plain.io, None);
    assert_eq!(plain.sha256(), manifest().sha256());
}

#[test]
fn a_malformed_document_is_refused_with_what_is_wrong() {
    let text = doc(request(false), json!(true)).to_canonical_string();
    let cases = [
        (text.replacen(r#""version":1"#, r#""version":2"#, 1), "version 2 is not supported"),
        (text.replacen(r#""io":{"#, r#""extra":1,"io":{"#, 1), "unknown field `extra`"),
        (text.replacen(r#""output":true"#, r#""output":"text""#, 1), "`io.output` is not a JSON Schema"),
        (text.replacen(r#""output":true"#, r#""output":true,"output":false"#, 1), "duplicate key `output`"),
        (text.replacen(r#""name":"intake""#, r#""name":"intake","name":"other""#, 1), "duplicate key `name`"),
        (text.replacen(r#""tools":[]"#, r#""tools":7"#, 1), "`manifest` is not a permission manifest"),
    ];
    for (bad, expected) in cases {
        let err = Document::parse(&bad).unwrap_err().to_string();
        assert!(err.contains(expected), "{bad}\n{err}");
    }
    assert!(
        matches!(Document::parse(r#"{"format":"other","version":1}"#), Err(ManifestError::WrongFormat(f)) if f == "other")
    );
}

#[test]
fn the_diff_classifies_input_and_output_schema_changes() {
    let old = doc(request(false), json!({"type": "string"}));
    let d = diff_documents(&old, &doc(request(true), json!({"type": "string"})));
    assert!(d.has_widening());
    assert_eq!(d.changes.len(), 1);
    assert_eq!((d.changes[0].rule, d.changes[0].field.as_str()), (Rule::InputSchemaWidened, "io.input"));
    assert!(d.changes[0].reason.contains("/properties/note: a new property"), "{}", d.changes[0].reason);

    let d = diff_documents(&doc(request(true), json!(true)), &doc(request(false), json!(true)));
    assert_eq!((d.changes[0].kind, d.changes[0].rule), (ChangeKind::Narrowing, Rule::InputSchemaNarrowed));

    let mut titled = request(false);
    titled["title"] = json!("Request");
    let d = diff_documents(&old, &doc(titled, json!({"type": "string"})));
    assert_eq!((d.changes[0].kind, d.changes[0].rule), (ChangeKind::Neutral, Rule::InputSchemaChanged));

    let d = diff_documents(&old, &doc(request(false), json!({"type": "integer"})));
    assert_eq!((d.changes[0].kind, d.changes[0].rule), (ChangeKind::Neutral, Rule::OutputSchemaChanged));
    assert!(diff_documents(&old, &old).is_empty());
}

#[test]
fn a_plain_manifest_against_a_reviewed_document_is_not_a_silent_pass() {
    let plain = Document { manifest: manifest(), io: None };
    let reviewed = doc(request(false), json!(true));
    for (a, b) in [(&plain, &reviewed), (&reviewed, &plain)] {
        let d = diff_documents(a, b);
        assert_eq!((d.changes[0].kind, d.changes[0].rule), (ChangeKind::Widening, Rule::SchemasNotCompared));
    }
}

#[test]
fn the_baseline_gate_reads_reviewed_documents_and_reports_a_schema_widening() {
    let dir = std::env::temp_dir().join(format!("agents-reviewed-baseline-{}", std::process::id()));
    let path = dir.join("intake.reviewed.json");
    let old = doc(request(false), json!(true)).to_canonical_string();
    check_with(&old, &path, Mode::Bless).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), old);
    check_with(&old, &path, Mode::Verify).unwrap();
    let new = doc(request(true), json!(true)).to_canonical_string();
    let err = check_with(&new, &path, Mode::Verify).unwrap_err();
    let BaselineError::Differs { diff, .. } = &err else { panic!("{err}") };
    assert!(diff.has_widening() && diff.changes[0].rule == Rule::InputSchemaWidened);
    assert!(err.to_string().contains("WIDENS"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
