//! Redaction follows the whole schema: every union branch, tuples by index, maps, flattened
//! and renamed fields, and is conservative for keys the schema does not name (aliases).

use agents_core::Secret;
use agents_core::redact::{MASK, RedactionKeys, redact};
use proptest::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::BTreeMap;

fn schema_of<T: JsonSchema>() -> Value {
    serde_json::to_value(schemars::schema_for!(T)).unwrap()
}

fn none() -> RedactionKeys {
    RedactionKeys::none()
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
enum SameKey {
    Plain { value: u32 },
    Hidden { value: Secret<String> },
}

#[test]
fn a_key_is_masked_when_any_union_branch_marks_it_secret() {
    let schema = schema_of::<SameKey>();
    let hidden = serde_json::to_value(SameKey::Hidden { value: Secret::new("S3".to_owned()) }).unwrap();
    assert_eq!(redact(&hidden, Some(&schema), &none()), json!({"value": MASK}));
    // Hand-written: two `allOf` parts describe the same key, the second marks it.
    let merged = json!({"allOf": [
        {"properties": {"a": {"type": "string"}, "b": {"type": "string"}}},
        {"properties": {"a": {"type": "string", "x-agents-secret": true}}},
    ]});
    assert_eq!(redact(&json!({"a": "S", "b": "ok"}), Some(&merged), &none()), json!({"a": MASK, "b": "ok"}));
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Pair(String, Secret<String>);

#[test]
fn tuples_are_followed_by_index() {
    let schema = schema_of::<(String, Secret<String>, u8)>();
    let value = json!(["plain", "S3", 7]);
    assert_eq!(redact(&value, Some(&schema), &none()), json!(["plain", MASK, 7]));
    let schema = schema_of::<Pair>();
    assert_eq!(redact(&json!(["plain", "S3"]), Some(&schema), &none()), json!(["plain", MASK]));
    // Beyond `prefixItems`, `items` describes the rest.
    let rest = json!({"prefixItems": [{"type": "string"}], "items": {"x-agents-secret": true}});
    assert_eq!(redact(&json!(["a", "S", "T"]), Some(&rest), &none()), json!(["a", MASK, MASK]));
}

#[test]
fn the_older_array_form_of_items_is_followed_by_index() {
    let schema = json!({"type": "array", "items": [
        {"type": "string"},
        {"type": "string", "x-agents-secret": true},
    ], "additionalItems": {"type": "object", "properties": {"pin": {"x-agents-secret": true}, "n": {}}}});
    let value = json!(["plain", "S3", {"pin": "S4", "n": 1}]);
    assert_eq!(redact(&value, Some(&schema), &none()), json!(["plain", MASK, {"pin": MASK, "n": 1}]));
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Aliased {
    name: String,
    #[serde(alias = "passcode")]
    pin: Secret<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct NoSecret {
    name: String,
}

#[test]
fn a_key_the_schema_does_not_name_is_masked_where_the_schema_holds_a_secret() {
    let schema = schema_of::<Aliased>();
    let value = json!({"name": "ann", "passcode": "S3"});
    // The alias is a valid way to give the field.
    let parsed: Aliased = serde_json::from_value(value.clone()).unwrap();
    assert_eq!(parsed.pin.expose(), "S3");
    assert_eq!(redact(&value, Some(&schema), &none()), json!({"name": "ann", "passcode": MASK}));
    // Nested: the rule applies to the object whose schema holds the secret.
    let outer = schema_of::<Vec<Aliased>>();
    let value = json!([{"name": "ann", "other": {"deep": "S3"}}]);
    assert_eq!(redact(&value, Some(&outer), &none()), json!([{"name": "ann", "other": MASK}]));
    // Where the schema holds no secret, an unnamed key keeps its value.
    let plain = schema_of::<NoSecret>();
    let value = json!({"name": "ann", "passcode": "kept"});
    assert_eq!(redact(&value, Some(&plain), &none()), value);
    // A tuple element beyond the described ones is unnamed too.
    let tuple = schema_of::<(String, Secret<String>)>();
    assert_eq!(redact(&json!(["a", "S", "T"]), Some(&tuple), &none()), json!(["a", MASK, MASK]));
}

#[test]
fn pattern_properties_are_followed() {
    let schema = json!({"type": "object", "patternProperties": {"^k": {
        "type": "object",
        "properties": {"pin": {"type": "string", "x-agents-secret": true}, "name": {"type": "string"}},
    }}});
    let value = json!({"k1": {"pin": "S3", "name": "ann"}});
    assert_eq!(redact(&value, Some(&schema), &none()), json!({"k1": {"pin": MASK, "name": "ann"}}));
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Tagged {
    #[serde(rename = "apiKey")]
    api: Secret<String>,
    #[serde(flatten)]
    choice: External,
    note: String,
}

#[test]
fn renamed_and_flattened_fields_are_followed() {
    let schema = schema_of::<Tagged>();
    let value = serde_json::to_value(Tagged {
        api: Secret::new("S1".to_owned()),
        choice: External::Login { user: "ann".to_owned(), pass: Secret::new("S2".to_owned()) },
        note: "n".to_owned(),
    })
    .unwrap();
    assert_eq!(
        redact(&value, Some(&schema), &none()),
        json!({"apiKey": MASK, "Login": {"user": "ann", "pass": MASK}, "note": "n"})
    );
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct WithAnyValue {
    pin: Secret<String>,
    extra: Value,
}

#[test]
fn a_named_key_whose_schema_allows_any_value_keeps_it() {
    // `serde_json::Value` has the schema `true`: named, and nothing in it is marked.
    let schema = schema_of::<WithAnyValue>();
    let value = json!({"pin": "S3", "extra": {"a": [1, "b"]}});
    assert_eq!(redact(&value, Some(&schema), &none()), json!({"pin": MASK, "extra": {"a": [1, "b"]}}));
}

#[test]
fn a_schema_nested_too_deep_to_follow_masks_nothing_more_when_it_marks_nothing() {
    let mut plain = json!({"type": "object", "properties": {"name": {"type": "string"}}});
    for _ in 0..80 {
        plain = json!({"anyOf": [plain]});
    }
    let value = json!({"name": "ann", "other": 1});
    assert_eq!(redact(&value, Some(&plain), &none()), value);
    // With a mark anywhere, what lies too deep to follow is masked.
    let mut marked = json!({"type": "object", "properties": {"pin": {"x-agents-secret": true}}});
    for _ in 0..80 {
        marked = json!({"anyOf": [marked]});
    }
    assert_eq!(redact(&json!({"pin": "S3"}), Some(&marked), &none()), json!(MASK));
}

// ---- The property test: real schemas, random values, no secret in the redacted text. ----

/// Every secret starts with this; no other generated text contains an upper-case letter.
const MARK: &str = "SECRET";

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
enum External {
    Plain(String),
    Key(Secret<String>),
    Login { user: String, pass: Secret<String> },
    Both(String, Secret<String>),
    Unit,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Inner {
    label: String,
    value: Secret<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind")]
enum Internal {
    Plain { value: String },
    Hidden { value: Secret<String> },
    Wrapped(Inner),
    Nothing,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "t", content = "c")]
enum Adjacent {
    Plain(String),
    Key(Secret<String>),
    Pair(String, Secret<String>),
    Login { user: String, pass: Secret<String> },
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
enum Untagged {
    Plain { value: u32 },
    Hidden { value: Secret<String> },
    Many(Vec<Secret<String>>),
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Camel {
    plain_name: String,
    secret_word: Secret<String>,
    maybe_word: Option<Secret<String>>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Flat {
    flat_note: String,
    flat_pin: Secret<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Args {
    note: String,
    ext: External,
    int: Internal,
    adj: Adjacent,
    unt: Untagged,
    tuple: (String, Secret<String>, u8),
    pair: Pair,
    opt: Option<Secret<String>>,
    opt_enum: Option<Adjacent>,
    list: Vec<External>,
    map: BTreeMap<String, Secret<String>>,
    map_enum: BTreeMap<String, Internal>,
    #[serde(rename = "apiKey")]
    renamed: Secret<String>,
    camel: Camel,
    aliased: Aliased,
    tagged: Tagged,
    #[serde(flatten)]
    flat: Flat,
}

fn plain() -> impl Strategy<Value = String> {
    "[a-z]{0,6}"
}

fn secret() -> impl Strategy<Value = Secret<String>> {
    "[a-z0-9]{8,16}".prop_map(|s| Secret::new(format!("{MARK}{s}")))
}

fn external() -> impl Strategy<Value = External> {
    prop_oneof![
        plain().prop_map(External::Plain),
        secret().prop_map(External::Key),
        (plain(), secret()).prop_map(|(user, pass)| External::Login { user, pass }),
        (plain(), secret()).prop_map(|(a, b)| External::Both(a, b)),
        Just(External::Unit),
    ]
}

fn internal() -> impl Strategy<Value = Internal> {
    prop_oneof![
        plain().prop_map(|value| Internal::Plain { value }),
        secret().prop_map(|value| Internal::Hidden { value }),
        (plain(), secret()).prop_map(|(label, value)| Internal::Wrapped(Inner { label, value })),
        Just(Internal::Nothing),
    ]
}

fn adjacent() -> impl Strategy<Value = Adjacent> {
    prop_oneof![
        plain().prop_map(Adjacent::Plain),
        secret().prop_map(Adjacent::Key),
        (plain(), secret()).prop_map(|(a, b)| Adjacent::Pair(a, b)),
        (plain(), secret()).prop_map(|(user, pass)| Adjacent::Login { user, pass }),
    ]
}

fn untagged() -> impl Strategy<Value = Untagged> {
    prop_oneof![
        any::<u32>().prop_map(|value| Untagged::Plain { value }),
        secret().prop_map(|value| Untagged::Hidden { value }),
        prop::collection::vec(secret(), 0..3).prop_map(Untagged::Many),
    ]
}

fn args() -> impl Strategy<Value = Args> {
    let camel = (plain(), secret(), prop::option::of(secret()))
        .prop_map(|(plain_name, secret_word, maybe_word)| Camel { plain_name, secret_word, maybe_word });
    let aliased = (plain(), secret()).prop_map(|(name, pin)| Aliased { name, pin });
    let tagged = (secret(), external(), plain()).prop_map(|(api, choice, note)| Tagged { api, choice, note });
    let flat = (plain(), secret()).prop_map(|(flat_note, flat_pin)| Flat { flat_note, flat_pin });
    (
        (plain(), external(), internal(), adjacent(), untagged(), (plain(), secret(), any::<u8>())),
        ((plain(), secret()).prop_map(|(a, b)| Pair(a, b)), prop::option::of(secret()), prop::option::of(adjacent())),
        (
            prop::collection::vec(external(), 0..4),
            prop::collection::btree_map("[a-z]{1,4}", secret(), 0..3),
            prop::collection::btree_map("[a-z]{1,4}", internal(), 0..3),
        ),
        (secret(), camel, aliased, tagged, flat),
    )
        .prop_map(|((note, ext, int, adj, unt, tuple), (pair, opt, opt_enum), (list, map, map_enum), rest)| {
            let (renamed, camel, aliased, tagged, flat) = rest;
            Args {
                note,
                ext,
                int,
                adj,
                unt,
                tuple,
                pair,
                opt,
                opt_enum,
                list,
                map,
                map_enum,
                renamed,
                camel,
                aliased,
                tagged,
                flat,
            }
        })
}

fn cases() -> u32 {
    std::env::var("REDACT_SCHEMA_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(10_000)
}

static ARGS_SCHEMA: std::sync::LazyLock<Value> = std::sync::LazyLock::new(schema_of::<Args>);

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn no_secret_survives_redaction_by_the_real_schema(args in args(), use_alias in any::<bool>()) {
        let mut value = serde_json::to_value(&args).unwrap();
        if use_alias {
            // Give the field under its alias, as a caller may.
            let aliased = value["aliased"].as_object_mut().unwrap();
            let pin = aliased.remove("pin").unwrap();
            aliased.insert("passcode".to_owned(), pin);
        }
        // The value is a valid input for the type, and it does carry secrets.
        let back: Args = serde_json::from_value(value.clone()).unwrap();
        prop_assert_eq!(back.aliased.pin.expose(), args.aliased.pin.expose());
        prop_assert!(value.to_string().contains(MARK));
        let redacted = redact(&value, Some(&ARGS_SCHEMA), &RedactionKeys::none());
        let text = redacted.to_string();
        prop_assert!(!text.contains(MARK), "leak in {}", text);
        // Values the schema does not mark stay readable.
        prop_assert_eq!(&redacted["note"], &value["note"]);
        prop_assert_eq!(&redacted["camel"]["plainName"], &value["camel"]["plainName"]);
        prop_assert_eq!(&redacted["flat_note"], &value["flat_note"]);
    }
}
