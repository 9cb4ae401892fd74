//! Strict parsing of tool arguments: the "strict args parse" step of the gate.
//!
//! A model's tool call arrives as JSON text. Ordinary parsers accept inputs that different
//! readers interpret differently, which lets an argument that a person approved differ from
//! the one a tool receives. [`parse_args`] refuses those inputs instead:
//!
//! - a key that appears twice in one object, at any depth (readers disagree on which wins);
//! - a number that overflows a 64-bit float (`1e400`), and any non-finite number;
//! - a number whose magnitude exceeds 2^53 (9007199254740992): beyond it a double cannot tell
//!   neighbouring integers apart, so `9007199254740993` would silently become another value.
//!   Every double of that magnitude is an integer, and serde_json reports an integer literal
//!   beyond the 64-bit range as a double, so the rule applies to every such number, whether
//!   written `9007199254740993`, `1e300` or `1.5e20`. Send such values as strings;
//! - anything but whitespace after the value;
//! - a top level that is not an object (tool arguments are always named).
//!
//! Every error names the place with a JSON pointer (RFC 6901), such as `/items/2/id`.
//! [`check_value`] applies the number rule to a value that is already parsed (a value cannot
//! hold duplicate keys or non-finite numbers).
//!
//! ```
//! use agents_core::strict::{parse_args, StrictError};
//!
//! let args = parse_args(r#"{"patient": "p-1", "doses": [1, 2.5]}"#).unwrap();
//! assert_eq!(args["doses"][1], 2.5);
//!
//! let err = parse_args(r#"{"items": [{"id": 1}, {"id": 2, "id": 3}]}"#).unwrap_err();
//! assert!(matches!(err, StrictError::DuplicateKey { .. }));
//! assert_eq!(err.path(), Some("/items/1/id"));
//!
//! let err = parse_args(r#"{"amount": 9007199254740993}"#).unwrap_err();
//! assert_eq!(err.path(), Some("/amount"));
//! ```

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::cell::RefCell;
use std::fmt;

/// The largest magnitude a number may have: 2^53, the last integer up to which every integer
/// has its own IEEE-754 double.
pub const MAX_EXACT_INTEGER: u64 = 1 << 53;

/// Why arguments were refused. Each message says what is wrong and where.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum StrictError {
    /// The text is not JSON (or ends early, or nests too deeply).
    #[error(
        "arguments are not valid JSON at line {line} column {column} (inside {}): {detail}; send one JSON object",
        display_path(path)
    )]
    Syntax {
        /// JSON pointer of the innermost value being read.
        path: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What the parser said.
        detail: String,
    },
    /// A key appears twice in one object.
    #[error("duplicate key `{key}` at {}; each key may appear only once in an object", display_path(path))]
    DuplicateKey {
        /// JSON pointer of the repeated member.
        path: String,
        /// The repeated key.
        key: String,
        /// 1-based line of the repeated key (its end).
        line: usize,
        /// 1-based column of the repeated key (its end).
        column: usize,
    },
    /// A number's magnitude exceeds 2^53, so it cannot be represented exactly everywhere.
    #[error(
        "number {value} at {} is beyond ±2^53 (9007199254740992) and cannot be represented exactly; send it as a string",
        display_path(path)
    )]
    NumberBeyondExactRange {
        /// JSON pointer of the number.
        path: String,
        /// The number as it was read.
        value: String,
    },
    /// A number overflows a 64-bit float (or is NaN or infinite).
    #[error(
        "number at {} (line {line} column {column}) is not a finite 64-bit float; send it as a string",
        display_path(path)
    )]
    NonFiniteNumber {
        /// JSON pointer of the number.
        path: String,
        /// 1-based line (0 when not known).
        line: usize,
        /// 1-based column (0 when not known).
        column: usize,
    },
    /// Something other than whitespace follows the object.
    #[error(
        "unexpected characters after the arguments object at line {line} column {column}; send exactly one JSON object"
    )]
    TrailingCharacters {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
    },
    /// The top level is not an object.
    #[error("arguments must be a JSON object with named fields, found {found}")]
    NotAnObject {
        /// What was found: `array`, `string`, `number`, `boolean` or `null`.
        found: &'static str,
    },
}

impl StrictError {
    /// The JSON pointer of the offending value, when the error has one (`""` is the top level).
    pub fn path(&self) -> Option<&str> {
        match self {
            StrictError::Syntax { path, .. }
            | StrictError::DuplicateKey { path, .. }
            | StrictError::NumberBeyondExactRange { path, .. }
            | StrictError::NonFiniteNumber { path, .. } => Some(path),
            StrictError::TrailingCharacters { .. } | StrictError::NotAnObject { .. } => None,
        }
    }
}

fn display_path(path: &str) -> String {
    if path.is_empty() { "the top level".to_owned() } else { format!("`{path}`") }
}

/// Parses tool arguments strictly: one JSON object, no duplicate keys, every number finite and
/// within ±2^53, nothing after it. See the [module docs](self) for why.
///
/// ```
/// use agents_core::strict::parse_args;
/// assert!(parse_args(r#"{"a": 1} "#).is_ok());
/// assert!(parse_args(r#"{"a": 1} {"a": 2}"#).is_err());
/// assert!(parse_args(r#"[1, 2]"#).is_err());
/// ```
pub fn parse_args(text: &str) -> Result<Value, StrictError> {
    let state = State::default();
    let mut de = serde_json::Deserializer::from_str(text);
    let parsed = ValueSeed { state: &state, root: true }.deserialize(&mut de);
    let value = match parsed {
        Ok(value) => value,
        Err(e) => return Err(state.into_error(&e)),
    };
    if let Err(e) = de.end() {
        return Err(StrictError::TrailingCharacters { line: e.line(), column: e.column() });
    }
    Ok(value)
}

/// Checks an already-parsed value: every number within ±2^53 (and finite). A
/// [`serde_json::Value`] cannot hold duplicate keys, so only the number rule applies.
///
/// ```
/// use agents_core::strict::check_value;
/// use serde_json::json;
/// assert!(check_value(&json!({"n": [1, -9007199254740992_i64]})).is_ok());
/// let err = check_value(&json!({"n": [1, 9007199254740993_u64]})).unwrap_err();
/// assert_eq!(err.path(), Some("/n/1"));
/// ```
pub fn check_value(value: &Value) -> Result<(), StrictError> {
    let mut path = Vec::new();
    check_at(value, &mut path)
}

fn check_at(value: &Value, path: &mut Vec<Segment>) -> Result<(), StrictError> {
    match value {
        Value::Number(n) => check_number(n, || pointer(path)),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                path.push(Segment::Index(i));
                check_at(item, path)?;
                path.pop();
            }
            Ok(())
        }
        Value::Object(map) => {
            for (k, v) in map {
                path.push(Segment::Key(k.clone()));
                check_at(v, path)?;
                path.pop();
            }
            Ok(())
        }
        Value::Null | Value::Bool(_) | Value::String(_) => Ok(()),
    }
}

fn check_number(n: &Number, path: impl Fn() -> String) -> Result<(), StrictError> {
    let beyond = if let Some(u) = n.as_u64() {
        u > MAX_EXACT_INTEGER
    } else if let Some(i) = n.as_i64() {
        i.unsigned_abs() > MAX_EXACT_INTEGER
    } else {
        match n.as_f64() {
            Some(f) if !f.is_finite() => {
                return Err(StrictError::NonFiniteNumber { path: path(), line: 0, column: 0 });
            }
            Some(f) => f.abs() > MAX_EXACT_INTEGER as f64,
            None => true,
        }
    };
    if beyond {
        return Err(StrictError::NumberBeyondExactRange { path: path(), value: n.to_string() });
    }
    Ok(())
}

#[derive(Debug, Clone)]
enum Segment {
    Key(String),
    Index(usize),
}

fn pointer(path: &[Segment]) -> String {
    let mut out = String::new();
    for seg in path {
        out.push('/');
        match seg {
            Segment::Key(k) => out.push_str(&k.replace('~', "~0").replace('/', "~1")),
            Segment::Index(i) => out.push_str(&i.to_string()),
        }
    }
    out
}

/// Shared by the nested seeds of one parse: the path of a failure and the structured error a
/// visitor raised (serde's error type can only carry a message).
///
/// Nothing is tracked while parsing succeeds: when a member or element fails, each enclosing
/// object and array adds its own segment as the error passes through it, innermost first.
#[derive(Default)]
struct State {
    unwound: RefCell<Vec<Segment>>,
    error: RefCell<Option<StrictError>>,
}

impl State {
    /// Records the segment of an enclosing member or element while an error passes through.
    fn unwinding(&self, segment: Segment) {
        self.unwound.borrow_mut().push(segment);
    }

    /// Keeps a structured error (its path is filled in when the parse gives up).
    fn fail<E: de::Error>(&self, error: StrictError) -> E {
        let message = error.to_string();
        *self.error.borrow_mut() = Some(error);
        E::custom(message)
    }

    fn into_error(self, e: &serde_json::Error) -> StrictError {
        let mut segments = self.unwound.into_inner();
        segments.reverse();
        let path = pointer(&segments);
        if let Some(mut error) = self.error.into_inner() {
            match &mut error {
                StrictError::NonFiniteNumber { path: p, line, column } => {
                    (*line, *column) = (e.line(), e.column());
                    *p = path;
                }
                StrictError::DuplicateKey { path: p, line, column, .. } => {
                    (*line, *column) = (e.line(), e.column());
                    *p = path;
                }
                StrictError::NumberBeyondExactRange { path: p, .. } => {
                    *p = path;
                }
                StrictError::Syntax { .. }
                | StrictError::TrailingCharacters { .. }
                | StrictError::NotAnObject { .. } => {}
            }
            return error;
        }
        let detail = e.to_string();
        // serde_json reports a number beyond the f64 range as "number out of range".
        if detail.starts_with("number out of range") {
            return StrictError::NonFiniteNumber { path, line: e.line(), column: e.column() };
        }
        let detail = match detail.rfind(" at line ") {
            Some(i) => detail[..i].to_owned(),
            None => detail,
        };
        StrictError::Syntax { path, line: e.line(), column: e.column(), detail }
    }
}

#[derive(Clone, Copy)]
struct ValueSeed<'a> {
    state: &'a State,
    root: bool,
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl ValueSeed<'_> {
    fn scalar<E: de::Error>(&self, found: &'static str, value: Value) -> Result<Value, E> {
        if self.root {
            return Err(self.state.fail(StrictError::NotAnObject { found }));
        }
        if let Value::Number(n) = &value
            && let Err(error) = check_number(n, String::new)
        {
            return Err(self.state.fail(error));
        }
        Ok(value)
    }
}

impl<'de> Visitor<'de> for ValueSeed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        self.scalar("boolean", Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        self.scalar("number", Value::from(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        self.scalar("number", Value::from(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        if self.root {
            return Err(self.state.fail(StrictError::NotAnObject { found: "number" }));
        }
        match Number::from_f64(v) {
            Some(n) => self.scalar("number", Value::Number(n)),
            None => Err(self.state.fail(StrictError::NonFiniteNumber { path: String::new(), line: 0, column: 0 })),
        }
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        self.scalar("string", Value::String(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        self.scalar("string", Value::String(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        self.scalar("null", Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        self.scalar("null", Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        self.deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        if self.root {
            return Err(self.state.fail(StrictError::NotAnObject { found: "array" }));
        }
        let mut items = Vec::new();
        loop {
            match seq.next_element_seed(ValueSeed { state: self.state, root: false }) {
                Ok(Some(item)) => items.push(item),
                Ok(None) => return Ok(Value::Array(items)),
                Err(e) => {
                    self.state.unwinding(Segment::Index(items.len()));
                    return Err(e);
                }
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            // Refused as soon as the key is read, so the error's position is the key's.
            if map.contains_key(&key) {
                self.state.unwinding(Segment::Key(key.clone()));
                return Err(self.state.fail(StrictError::DuplicateKey {
                    path: String::new(),
                    key,
                    line: 0,
                    column: 0,
                }));
            }
            let value = match access.next_value_seed(ValueSeed { state: self.state, root: false }) {
                Ok(value) => value,
                Err(e) => {
                    self.state.unwinding(Segment::Key(key));
                    return Err(e);
                }
            };
            map.insert(key, value);
        }
        Ok(Value::Object(map))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn accepts_normal_arguments() {
        let text = r#"{"name": "ann", "age": 41, "ratio": -0.25, "ok": true, "none": null,
            "tags": ["a", "b"], "nested": {"deep": [{"x": 1e3}, []], "empty": {}},
            "edge": 9007199254740992, "neg_edge": -9007199254740992, "small": 1e-300}"#;
        let v = parse_args(text).unwrap();
        assert_eq!(v["nested"]["deep"][0]["x"], json!(1000.0));
        assert_eq!(v["edge"], json!(9007199254740992_u64));
        assert_eq!(v["neg_edge"], json!(-9007199254740992_i64));
        assert_eq!(v, serde_json::from_str::<Value>(text).unwrap());
    }

    #[test]
    fn accepts_trailing_whitespace() {
        let v = parse_args("{\"b\": 1, \"a\": 2}\n\t ").unwrap();
        assert_eq!(v, json!({"a": 2, "b": 1}));
    }

    #[test]
    fn same_key_in_different_objects_is_fine() {
        assert!(parse_args(r#"{"id": 1, "child": {"id": 2}, "list": [{"id": 3}, {"id": 4}]}"#).is_ok());
    }

    #[test]
    fn refuses_duplicate_keys_at_any_depth() {
        let cases = [
            (r#"{"a": 1, "a": 2}"#, "/a", "a"),
            (r#"{"items": [{"id": 1}, {"id": 2}, {"id": 3, "id": 4}]}"#, "/items/2/id", "id"),
            (r#"{"x": {"y": {"z": {}, "z": {}}}}"#, "/x/y/z", "z"),
            (r#"{"a/b": {"~k": 1, "~k": 1}}"#, "/a~1b/~0k", "~k"),
            // Escapes decode to the same key.
            (r#"{"k": 1, "\u006b": 2}"#, "/k", "k"),
        ];
        for (text, path, key) in cases {
            match parse_args(text).unwrap_err() {
                StrictError::DuplicateKey { path: p, key: k, line, column } => {
                    assert_eq!((p.as_str(), k.as_str()), (path, key), "{text}");
                    assert_eq!(line, 1, "{text}");
                    // The position is the end of the repeated key.
                    let end =
                        text.rfind(&format!("\"{}\"", text_key(text, key))).map(|i| i + text_key(text, key).len() + 2);
                    assert_eq!(Some(column), end, "{text}");
                }
                other => panic!("{text}: {other}"),
            }
        }
    }

    /// The key as written in `text` (the last spelling that decodes to `key`).
    fn text_key<'a>(text: &'a str, key: &'a str) -> &'a str {
        if text.contains(r#""\u006b""#) { r"\u006b" } else { key }
    }

    #[test]
    fn duplicate_keys_on_later_lines_say_where() {
        let text = "{\n  \"a\": {\n    \"b\": 1,\n    \"b\": 2\n  }\n}";
        match parse_args(text).unwrap_err() {
            StrictError::DuplicateKey { line, column, .. } => assert_eq!((line, column), (4, 7)),
            other => panic!("{other}"),
        }
    }

    #[test]
    fn refuses_numbers_beyond_2_pow_53() {
        let cases = [
            (r#"{"n": 9007199254740993}"#, "/n"),
            (r#"{"n": -9007199254740993}"#, "/n"),
            (r#"{"a": [0, {"n": 18446744073709551615}]}"#, "/a/1/n"),
            (r#"{"n": 123456789012345678901234567890}"#, "/n"),
            (r#"{"n": -123456789012345678901234567890}"#, "/n"),
            (r#"{"n": 1e300}"#, "/n"),
            (r#"{"n": 9007199254740994.0}"#, "/n"),
        ];
        for (text, path) in cases {
            match parse_args(text).unwrap_err() {
                StrictError::NumberBeyondExactRange { path: p, .. } => {
                    assert_eq!(p, path, "{text}")
                }
                other => panic!("{text}: {other}"),
            }
        }
    }

    #[test]
    fn refuses_numbers_that_overflow_f64() {
        for text in [r#"{"n": 1e400}"#, r#"{"a": [1, -1e309]}"#] {
            match parse_args(text).unwrap_err() {
                StrictError::NonFiniteNumber { line, column, .. } => {
                    assert_eq!(line, 1);
                    assert!(column > 0);
                }
                other => panic!("{text}: {other}"),
            }
        }
        assert_eq!(parse_args(r#"{"a": [1, -1e309]}"#).unwrap_err().path(), Some("/a/1"));
    }

    #[test]
    fn refuses_non_finite_literals() {
        for text in [r#"{"n": NaN}"#, r#"{"n": Infinity}"#, r#"{"n": -Infinity}"#] {
            match parse_args(text).unwrap_err() {
                StrictError::Syntax { path, .. } => assert_eq!(path, "/n"),
                other => panic!("{text}: {other}"),
            }
        }
    }

    #[test]
    fn refuses_trailing_characters() {
        for text in [r#"{"a": 1} x"#, r#"{"a": 1}{}"#, r#"{"a": 1},"#, "{\"a\": 1}\n\n]"] {
            assert!(matches!(parse_args(text), Err(StrictError::TrailingCharacters { .. })), "{text}");
        }
        assert_eq!(parse_args("{}\n  x").unwrap_err(), StrictError::TrailingCharacters { line: 2, column: 3 });
    }

    #[test]
    fn refuses_a_top_level_that_is_not_an_object() {
        for (text, found) in [
            ("[]", "array"),
            (r#"[{"a": 1, "a": 2}]"#, "array"),
            (r#""s""#, "string"),
            ("1", "number"),
            ("1.5", "number"),
            ("-1", "number"),
            ("true", "boolean"),
            ("null", "null"),
        ] {
            assert_eq!(parse_args(text).unwrap_err(), StrictError::NotAnObject { found }, "{text}");
        }
    }

    #[test]
    fn syntax_errors_say_where() {
        let err = parse_args("{\"a\": {\"b\": [1, 2,]}}").unwrap_err();
        match &err {
            StrictError::Syntax { path, line, column, .. } => {
                assert_eq!(path, "/a/b/2");
                assert_eq!((*line, *column), (1, 19));
            }
            other => panic!("{other}"),
        }
        assert!(err.to_string().contains("`/a/b/2`"), "{err}");
        assert!(matches!(parse_args(""), Err(StrictError::Syntax { .. })));
        assert!(matches!(parse_args("{\"a\": "), Err(StrictError::Syntax { .. })));
        assert!(matches!(parse_args("{\"a\": \"\\ud800\"}"), Err(StrictError::Syntax { .. })));
    }

    #[test]
    fn nesting_too_deep_is_a_syntax_error() {
        let text = format!("{{\"a\": {}1{}}}", "[".repeat(200), "]".repeat(200));
        assert!(matches!(parse_args(&text), Err(StrictError::Syntax { .. })));
    }

    #[test]
    fn messages_name_the_problem_and_the_place() {
        let dup = parse_args(r#"{"items": [{"id": 1, "id": 2}]}"#).unwrap_err().to_string();
        assert_eq!(dup, "duplicate key `id` at `/items/0/id`; each key may appear only once in an object");
        let big = parse_args(r#"{"n": 9007199254740993}"#).unwrap_err().to_string();
        assert!(big.contains("9007199254740993") && big.contains("`/n`") && big.contains("string"), "{big}");
        let top = parse_args("[]").unwrap_err().to_string();
        assert_eq!(top, "arguments must be a JSON object with named fields, found array");
    }

    #[test]
    fn check_value_applies_the_number_rule() {
        assert!(check_value(&json!({"a": [1, 2.5, -9007199254740992_i64, 9007199254740992_u64], "b": null})).is_ok());
        let cases = [
            (json!({"a": [1, {"b": 9007199254740993_u64}]}), "/a/1/b"),
            (json!({"a": -9007199254740993_i64}), "/a"),
            (json!({"a": 1e300}), "/a"),
            (json!(u64::MAX), ""),
        ];
        for (value, path) in cases {
            let err = check_value(&value).unwrap_err();
            assert!(matches!(err, StrictError::NumberBeyondExactRange { .. }), "{value}");
            assert_eq!(err.path(), Some(path), "{value}");
        }
    }
}
