//! Redaction: recursive through objects and arrays, driven by `Secret<T>` in the argument
//! type's schema and by a case-insensitive key list, and idempotent.

use agents_core::Secret;
use agents_core::redact::{MASK, RedactionKeys, SecretSchema, redact, redact_static};
use proptest::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Serialize, Deserialize, JsonSchema)]
struct Credential {
    name: String,
    key: Secret<String>,
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Address {
    city: String,
    street: Secret<String>,
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Connect {
    host: String,
    port: u16,
    pin: Secret<u32>,
    credentials: Vec<Credential>,
    backup: Option<Secret<String>>,
    home: Address,
    work: Option<Address>,
    notes: Vec<String>,
}

fn connect() -> Connect {
    Connect {
        host: "db.internal".to_owned(),
        port: 5432,
        pin: Secret::new(1234),
        credentials: vec![
            Credential { name: "primary".to_owned(), key: Secret::new("k-1".to_owned()) },
            Credential { name: "replica".to_owned(), key: Secret::new("k-2".to_owned()) },
        ],
        backup: Some(Secret::new("b-1".to_owned())),
        home: Address { city: "Lyon".to_owned(), street: Secret::new("1 rue A".to_owned()) },
        work: Some(Address { city: "Paris".to_owned(), street: Secret::new("2 rue B".to_owned()) }),
        notes: vec!["n1".to_owned()],
    }
}

fn schema_of<T: JsonSchema>() -> Value {
    serde_json::to_value(schemars::schema_for!(T)).unwrap()
}

#[test]
fn secret_fields_are_masked_wherever_the_schema_puts_them() {
    let schema = schema_of::<Connect>();
    let value = serde_json::to_value(connect()).unwrap();
    let redacted = redact(&value, Some(&schema), &RedactionKeys::none());
    assert_eq!(
        redacted,
        json!({
            "host": "db.internal",
            "port": 5432,
            "pin": MASK,
            "credentials": [{"name": "primary", "key": MASK}, {"name": "replica", "key": MASK}],
            "backup": MASK,
            "home": {"city": "Lyon", "street": MASK},
            "work": {"city": "Paris", "street": MASK},
            "notes": ["n1"],
        })
    );
    // The value the handler receives is untouched.
    assert_eq!(value["credentials"][0]["key"], "k-1");
    let real: Connect = serde_json::from_value(value).unwrap();
    assert_eq!(real.pin.expose(), &1234);
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Plain {
    host: String,
    notes: Vec<String>,
    nested: Option<Address2>,
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Address2 {
    city: String,
}

#[test]
fn the_remembered_schema_check_redacts_exactly_as_the_schema_walk() {
    // Leaked once: schemas of tools live for the whole program.
    let secretive: &'static Value = Box::leak(Box::new(schema_of::<Connect>()));
    let plain: &'static Value = Box::leak(Box::new(schema_of::<Plain>()));
    let keys = RedactionKeys::default();
    let connect = serde_json::to_value(connect()).unwrap();
    let with_keys = json!({"host": "h", "notes": ["a"], "nested": {"city": "c", "token": "t"}, "password": "p"});
    for _ in 0..2 {
        // The second round answers from what the first remembered.
        assert_eq!(redact_static(&connect, secretive, &keys), redact(&connect, Some(secretive), &keys));
        assert_eq!(redact_static(&connect, secretive, &keys)["pin"], MASK);
        assert_eq!(redact_static(&with_keys, plain, &keys), redact(&with_keys, Some(plain), &keys));
        assert_eq!(redact_static(&with_keys, plain, &keys)["nested"]["token"], MASK);
        assert_eq!(redact_static(&with_keys, plain, &keys)["password"], MASK);
    }
}

#[test]
fn a_secret_position_is_masked_even_when_empty() {
    let schema = schema_of::<Connect>();
    let mut value = serde_json::to_value(connect()).unwrap();
    value["backup"] = Value::Null;
    value["work"] = Value::Null;
    let redacted = redact(&value, Some(&schema), &RedactionKeys::none());
    // A null in a secret position is masked too: redaction never reveals whether a secret was
    // present.
    assert_eq!(redacted["backup"], MASK);
    assert_eq!(redacted["work"], Value::Null);
    assert_eq!(redacted["home"]["street"], MASK);
}

#[test]
fn key_list_applies_at_any_depth_in_objects_and_arrays() {
    let value = json!({
        "user": {"name": "ann", "password": "p", "profile": {"token": "t", "tokens": 3}},
        "list": [{"api_key": "k"}, [{"secret": {"deep": "x"}}], "password"],
        "matrix": [[{"authorization": "Bearer x", "ok": 1}]],
    });
    let redacted = redact(&value, None, &RedactionKeys::default());
    assert_eq!(
        redacted,
        json!({
            "user": {"name": "ann", "password": MASK, "profile": {"token": MASK, "tokens": 3}},
            "list": [{"api_key": MASK}, [{"secret": MASK}], "password"],
            "matrix": [[{"authorization": MASK, "ok": 1}]],
        })
    );
}

#[test]
fn key_list_is_case_insensitive() {
    let value = json!({"PassWord": "a", "API_KEY": "b", "Authorization": "c", "ssn": "d", "SSN": "e", "Ssn_2": "f"});
    let keys = RedactionKeys::default().with("SsN");
    let redacted = redact(&value, None, &keys);
    assert_eq!(
        redacted,
        json!({"PassWord": MASK, "API_KEY": MASK, "Authorization": MASK, "ssn": MASK, "SSN": MASK, "Ssn_2": "f"})
    );
    let only = RedactionKeys::new(["Diagnosis"]);
    assert_eq!(
        redact(&json!({"DIAGNOSIS": "x", "password": "y"}), None, &only),
        json!({"DIAGNOSIS": MASK, "password": "y"})
    );
}

#[test]
fn schema_and_key_list_combine() {
    let schema = schema_of::<Connect>();
    let mut value = serde_json::to_value(connect()).unwrap();
    value["host"] = json!("h");
    let redacted = redact(&value, Some(&schema), &RedactionKeys::new(["host", "NAME"]));
    assert_eq!(redacted["host"], MASK);
    assert_eq!(redacted["credentials"][1], json!({"name": MASK, "key": MASK}));
    assert_eq!(redacted["port"], 5432);
}

#[test]
fn debug_output_of_a_secret_is_masked() {
    let c = Credential { name: "n".to_owned(), key: Secret::new("hunter2".to_owned()) };
    assert_eq!(format!("{:?}", c.key), "Secret(•••)");
}

/// Arbitrary JSON whose object keys are often ones the key list or the schema names.
fn json_value() -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        Just("password".to_owned()),
        Just("Token".to_owned()),
        Just("pin".to_owned()),
        Just("credentials".to_owned()),
        Just("key".to_owned()),
        Just("home".to_owned()),
        Just("street".to_owned()),
        "[a-z]{1,6}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        "[a-z•]{0,8}".prop_map(Value::from),
        Just(Value::from(MASK)),
    ];
    leaf.prop_recursive(5, 64, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key.clone(), inner), 0..6)
                .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn redacting_twice_equals_redacting_once(value in json_value(), use_schema in any::<bool>(), use_keys in any::<bool>()) {
        let schema = schema_of::<Connect>();
        let schema = use_schema.then_some(&schema);
        let keys = if use_keys { RedactionKeys::default() } else { RedactionKeys::none() };
        let once = redact(&value, schema, &keys);
        let twice = redact(&once, schema, &keys);
        prop_assert_eq!(twice, once);
    }

    #[test]
    fn no_listed_key_keeps_its_value(value in json_value()) {
        fn check(v: &Value) -> bool {
            match v {
                Value::Object(map) => map.iter().all(|(k, v)| {
                    (!(k.eq_ignore_ascii_case("password") || k.eq_ignore_ascii_case("token")) || v == MASK) && check(v)
                }),
                Value::Array(items) => items.iter().all(check),
                _ => true,
            }
        }
        prop_assert!(check(&redact(&value, None, &RedactionKeys::default())));
    }

    #[test]
    fn the_owned_form_redacts_exactly_as_the_schema_walk(value in json_value(), use_keys in any::<bool>()) {
        static SECRETIVE: std::sync::LazyLock<Value> = std::sync::LazyLock::new(schema_of::<Connect>);
        static PLAIN: std::sync::LazyLock<Value> = std::sync::LazyLock::new(schema_of::<Plain>);
        let keys = if use_keys { RedactionKeys::default() } else { RedactionKeys::none() };
        for schema in [&*SECRETIVE, &*PLAIN] {
            let expected = redact(&value, Some(schema), &keys);
            let prepared = SecretSchema::new(schema);
            prop_assert_eq!(&prepared.redact(&value, &keys), &expected);
            prop_assert_eq!(&prepared.redact_owned(value.clone(), &keys), &expected);
        }
    }

    #[test]
    fn a_key_is_masked_exactly_when_the_list_names_it(
        listed in proptest::collection::vec("[a-zA-Z_]{1,70}", 0..6),
        key in "[a-zA-Z_]{1,70}",
        pick in any::<proptest::sample::Index>(),
        recase in any::<bool>(),
    ) {
        // Sometimes the key is one of the listed ones, in another case.
        let key = match (listed.is_empty(), recase) {
            (false, true) => pick.get(&listed).to_ascii_uppercase(),
            _ => key,
        };
        let named = listed.iter().any(|k| k.eq_ignore_ascii_case(&key));
        let value = json!({ key.clone(): "v" });
        let redacted = redact(&value, None, &RedactionKeys::new(&listed));
        prop_assert_eq!(redacted[&key] == MASK, named, "{:?} listed {:?}", key, listed);
    }
}

#[test]
fn the_owned_form_masks_what_lies_too_deep() {
    static PLAIN: std::sync::LazyLock<Value> = std::sync::LazyLock::new(|| json!({"type": "object"}));
    let mut deep = json!("bottom");
    for _ in 0..140 {
        deep = json!([deep]);
    }
    let keys = RedactionKeys::none();
    let owned = SecretSchema::new(&PLAIN).redact_owned(deep.clone(), &keys);
    assert_eq!(owned, redact(&deep, Some(&PLAIN), &keys));
    assert_ne!(owned, deep, "the walk masks below its depth limit, and so must the owned form");
}

#[test]
fn the_owned_form_masks_a_scalar_just_below_the_depth_limit_as_the_walk_does() {
    static PLAIN: std::sync::LazyLock<Value> = std::sync::LazyLock::new(|| json!({"type": "object"}));
    let keys = RedactionKeys::none();
    for levels in 125..=131 {
        for leaf in [json!("bottom"), json!(7), json!(null)] {
            let (mut in_arrays, mut in_objects) = (leaf.clone(), leaf.clone());
            for _ in 0..levels {
                in_arrays = json!([in_arrays]);
                in_objects = json!({ "k": in_objects });
            }
            for deep in [in_arrays, in_objects] {
                let owned = SecretSchema::new(&PLAIN).redact_owned(deep.clone(), &keys);
                assert_eq!(owned, redact(&deep, Some(&PLAIN), &keys), "{levels} levels");
            }
        }
    }
}
