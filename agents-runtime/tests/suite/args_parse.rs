//! A tool's arguments read as serde's derive reads them: the same values, the same errors.
//!
//! `#[tool]` writes the arguments' `Deserialize` itself (one shared visitor, a plain reader per
//! tool). Each input here is read three ways, through `Tool::parse_args` (the registry's path),
//! through the generated `Deserialize` from a `Value` and from JSON text, and compared with a
//! struct of the same fields whose `Deserialize` is derived with `deny_unknown_fields`.

use agents_runtime::{Tool, tool};
use serde::Deserialize;
use serde_json::{Value, json};

/// Files a note.
#[tool(permission = public)]
pub async fn file_note(
    id: u64,
    title: &str,
    tags: Vec<String>,
    due: Option<String>,
    r#type: Option<u8>,
    flag: bool,
) -> Result<u64, String> {
    let _ = (title, tags, due, r#type, flag);
    Ok(id)
}

/// Takes nothing.
#[tool(permission = public)]
pub async fn ping() -> Result<u64, String> {
    Ok(1)
}

/// The same fields with a derived `Deserialize`, under the generated structs' names.
mod derived {
    use super::Deserialize;

    #[derive(Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    pub(crate) struct FileNoteArgs {
        id: u64,
        title: String,
        tags: Vec<String>,
        due: Option<String>,
        r#type: Option<u8>,
        flag: bool,
    }

    #[derive(Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    pub(crate) struct PingArgs {}
}
use derived::{FileNoteArgs as Derived, PingArgs as DerivedEmpty};

/// The fields of a successful read, or the error's message without serde_json's position.
fn outcome<T: std::fmt::Debug, E: std::fmt::Display>(r: Result<T, E>) -> Result<String, String> {
    match r {
        Ok(v) => Ok(format!("{v:?}")),
        Err(e) => {
            let text = e.to_string();
            Err(match text.find(" at line ") {
                Some(at) => text[..at].to_owned(),
                None => text,
            })
        }
    }
}

fn valid() -> Value {
    json!({"id": 7, "title": "t", "tags": ["a"], "due": "2026-12-01", "type": 3, "flag": true})
}

fn with(key: &str, value: Value) -> Value {
    let mut v = valid();
    v[key] = value;
    v
}

fn without(key: &str) -> Value {
    let mut v = valid();
    v.as_object_mut().unwrap().remove(key);
    v
}

/// Inputs with at most one thing wrong: the derive stops at the first error in key order and
/// the generated reader checks unknown keys first, so two errors could be reported differently.
fn cases() -> Vec<(&'static str, Value)> {
    vec![
        ("all fields", valid()),
        ("optional fields absent", {
            let mut v = without("due");
            v.as_object_mut().unwrap().remove("type");
            v
        }),
        ("optional field null", with("due", Value::Null)),
        ("unknown field", with("colour", json!("red"))),
        ("missing required field", without("title")),
        ("missing raw-named field is optional", without("type")),
        ("wrong type", with("id", json!("seven"))),
        ("negative for unsigned", with("id", json!(-1))),
        ("float for integer", with("id", json!(1.5))),
        ("out of range", with("type", json!(300))),
        ("null for required", with("flag", Value::Null)),
        ("wrong element type", with("tags", json!([1]))),
        ("a string", json!("id")),
        ("a number", json!(3)),
        ("null", Value::Null),
        ("a bool", json!(false)),
    ]
}

#[test]
fn the_registry_path_reads_as_the_derive_does() {
    for (what, input) in cases() {
        let derived = outcome(serde_json::from_value::<Derived>(input.clone()));
        let generated = outcome(file_note::parse_args(&input));
        assert_eq!(generated, derived, "{what}: {input}");
    }
}

#[test]
fn the_generated_deserialize_reads_values_and_text_as_the_derive_does() {
    for (what, input) in cases() {
        let derived = outcome(serde_json::from_value::<Derived>(input.clone()));
        let generated = outcome(serde_json::from_value::<<file_note as Tool>::Args>(input.clone()));
        assert_eq!(generated, derived, "{what}: {input}");
        let text = input.to_string();
        let derived = outcome(serde_json::from_str::<Derived>(&text));
        let generated = outcome(serde_json::from_str::<<file_note as Tool>::Args>(&text));
        assert_eq!(generated, derived, "{what}: {text}");
    }
}

#[test]
fn a_key_given_twice_is_refused_as_the_derive_refuses_it() {
    let text = r#"{"id": 1, "title": "t", "id": 2, "tags": [], "flag": true}"#;
    let derived = outcome(serde_json::from_str::<Derived>(text));
    let generated = outcome(serde_json::from_str::<<file_note as Tool>::Args>(text));
    assert_eq!(derived, Err("duplicate field `id`".to_owned()));
    assert_eq!(generated, derived);
}

#[test]
fn a_tool_without_parameters_takes_only_an_empty_object() {
    for input in [json!({}), json!({"x": 1}), json!("x")] {
        let derived = outcome(serde_json::from_value::<DerivedEmpty>(input.clone()));
        assert_eq!(outcome(ping::parse_args(&input)), derived, "{input}");
    }
    assert_eq!(ping::parse_args(&json!({"x": 1})).unwrap_err(), "unknown field `x`, there are no fields");
}

#[test]
fn positional_arguments_are_refused() {
    // A derived `Deserialize` also reads a struct from an array of its fields in order; tool
    // arguments are always a JSON object, and the generated reader says so.
    let input = json!([7, "t", ["a"], null, null, true]);
    assert!(serde_json::from_value::<Derived>(input.clone()).is_ok());
    assert_eq!(file_note::parse_args(&input).unwrap_err(), "invalid type: sequence, expected struct FileNoteArgs");
    assert_eq!(
        outcome(serde_json::from_value::<<file_note as Tool>::Args>(input)),
        Err("invalid type: sequence, expected struct FileNoteArgs".to_owned())
    );
}

#[test]
fn the_values_read_are_the_values_sent() {
    let args = file_note::parse_args(&valid()).unwrap();
    assert_eq!(
        (args.id, args.title.as_str(), args.tags, args.due.as_deref(), args.r#type, args.flag),
        (7, "t", vec!["a".to_owned()], Some("2026-12-01"), Some(3), true)
    );
    let schema = file_note::input_schema();
    assert!(schema["properties"].get("type").is_some(), "{schema}");
    // The manifest and the spec (which redaction reads) name the parameter as the JSON does.
    let names: Vec<&str> = <file_note as Tool>::SPEC.params.iter().map(|p| p.name).collect();
    assert_eq!(names, ["id", "title", "tags", "due", "type", "flag"]);
    assert_eq!(schema["additionalProperties"], json!(false), "{schema}");
}
