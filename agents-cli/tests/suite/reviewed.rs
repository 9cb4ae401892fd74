//! `agents manifest show | diff | verify | render` on reviewed documents (the manifest with the
//! agent's input and output schemas): the schemas shown, a widened input failing the gate, the
//! report showing them, a broken document refused with what to do.

use crate::common;

use agents_core::reviewed::{Document, IoSchemas};
use common::*;
use serde_json::{Value, json};

fn request(extra: Option<&str>) -> Value {
    let mut props = json!({"ticket": {"type": "integer", "minimum": 0}});
    if let Some(name) = extra {
        props[name] = json!({"type": "string"});
    }
    json!({"title": "Request", "type": "object", "properties": props, "required": ["ticket"], "additionalProperties": false})
}

fn reviewed(input: Value) -> String {
    let io = IoSchemas::new(input, json!({"type": "string"}));
    Document { manifest: helpdesk_v1(), io: Some(io) }.to_canonical_string()
}

#[test]
fn show_prints_both_hashes_and_the_schemas() {
    let dir = tempdir();
    let p = write(dir.path(), "desk.reviewed.json", &reviewed(request(None)));
    let o = agents(["manifest".as_ref(), "show".as_ref(), p.as_os_str()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let s = stdout(&o);
    let doc = Document::parse(&std::fs::read_to_string(&p).unwrap()).unwrap();
    let (manifest_sha, doc_sha) = (helpdesk_v1().sha256(), doc.sha256());
    for needle in [&*manifest_sha, &*doc_sha, "canonical (sha256sum", "INPUT SCHEMA", "\"ticket\"", "OUTPUT SCHEMA"] {
        assert!(s.contains(needle), "missing {needle:?} in:\n{s}");
    }
}

#[test]
fn diff_and_verify_fail_on_an_input_that_accepts_more_and_pass_on_one_that_accepts_less() {
    let dir = tempdir();
    let old = write(dir.path(), "old.json", &reviewed(request(None)));
    let wider = write(dir.path(), "wider.json", &reviewed(request(Some("note"))));
    let o = agents(["manifest".as_ref(), "diff".as_ref(), old.as_os_str(), wider.as_os_str()]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    let s = stdout(&o);
    assert!(s.contains("1 widening, 0 narrowing, 0 neutral"), "{s}");
    assert!(
        s.contains(
            "agent io.input: the input schema may accept values the old one refused: /properties/note: a new property"
        ),
        "{s}"
    );
    let o = agents(["manifest".as_ref(), "verify".as_ref(), old.as_os_str(), wider.as_os_str()]);
    assert_eq!(code(&o), 1);
    assert!(stdout(&o).contains("WIDENS"), "{}", stdout(&o));
    // The reverse accepts less: no widening, exit 0.
    let o = agents(["manifest".as_ref(), "diff".as_ref(), wider.as_os_str(), old.as_os_str()]);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    assert!(stdout(&o).contains("input_schema") || stdout(&o).contains("accepts only values the old one accepted"));
    // A plain manifest against a reviewed document: the schemas are not compared, and that fails.
    let o = agents(["manifest".as_ref(), "diff".as_ref(), fixture("helpdesk-v1.json").as_os_str(), old.as_os_str()]);
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    assert!(stdout(&o).contains("plain manifest"), "{}", stdout(&o));
}

#[test]
fn render_shows_the_schemas_escaped() {
    let dir = tempdir();
    let p = write(dir.path(), "desk.json", &reviewed(request(Some("<script>alert(1)</script>"))));
    let out = dir.path().join("report.html");
    let o = agents(["manifest".as_ref(), "render".as_ref(), p.as_os_str(), "-o".as_ref(), out.as_os_str()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.contains(r#"<section id="schemas">"#) && html.contains(r#"<pre id="input-schema">"#), "{html}");
    assert!(html.contains("&#34;ticket&#34;") || html.contains("&quot;ticket&quot;"), "{html}");
    assert!(!html.contains("<script>alert"), "the schema's text became markup");
    // A plain manifest's report has no schemas section.
    let o = agents([
        "manifest".as_ref(),
        "render".as_ref(),
        fixture("helpdesk-v1.json").as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
    ]);
    assert_eq!(code(&o), 0);
    assert!(!std::fs::read_to_string(&out).unwrap().contains(r#"id="schemas""#));
}

#[test]
fn a_broken_reviewed_document_is_refused_with_what_to_do() {
    let dir = tempdir();
    let text = reviewed(request(None)).replacen(r#""output":{"type":"string"}"#, r#""output":"a string""#, 1);
    let p = write(dir.path(), "broken.json", &text);
    let o = agents(["manifest".as_ref(), "show".as_ref(), p.as_os_str()]);
    assert_eq!(code(&o), 2, "{}{}", stdout(&o), stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("is not a reviewed manifest document: `io.output` is not a JSON Schema"), "{e}");
    assert!(e.contains("agents_core::reviewed::of"), "{e}");
}
