//! The input schema check behind the reviewed document's diff: each named widening (a new
//! property, a widened type, a removed `required`, a relaxed enum) is found, and,
//! differentially, a pair of schemas classified "accepts nothing more" never has a value the
//! new schema accepts and the old one refuses, as a validator written here (independently of
//! the check, keyword by keyword from the JSON Schema specification) decides.

use agents_core::reviewed::{admits_no_more, same_values};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Map, Value, json};

fn widens(old: Value, new: Value) -> Vec<String> {
    admits_no_more(&old, &new).expect_err("a widening")
}

fn obj(props: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": props, "required": required, "additionalProperties": false})
}

#[test]
fn each_named_widening_is_found_and_its_reverse_is_not_one() {
    let base = obj(json!({"id": {"type": "integer"}, "kind": {"enum": ["a", "b"]}}), &["id", "kind"]);
    let cases = [
        (
            obj(
                json!({"id": {"type": "integer"}, "kind": {"enum": ["a", "b"]}, "note": {"type": "string"}}),
                &["id", "kind"],
            ),
            "/properties/note: a new property",
        ),
        (
            obj(json!({"id": {"type": "number"}, "kind": {"enum": ["a", "b"]}}), &["id", "kind"]),
            "/properties/id: type widened: accepts number",
        ),
        (
            obj(json!({"id": {"type": "integer"}, "kind": {"enum": ["a", "b"]}}), &["kind"]),
            "/required: `id` no longer required",
        ),
        (
            obj(json!({"id": {"type": "integer"}, "kind": {"enum": ["a", "b", "c"]}}), &["id", "kind"]),
            "/properties/kind: enum relaxed: accepts \"c\"",
        ),
    ];
    for (wider, expected) in cases {
        assert_eq!(widens(base.clone(), wider.clone()), [expected], "{wider}");
        // The other way round each is a narrowing: accepted, and not the same values.
        assert!(admits_no_more(&wider, &base).is_ok(), "{wider}");
        assert!(!same_values(&wider, &base));
    }
}

#[test]
fn annotations_and_references_are_seen_through() {
    let old = json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {"type": "string", "maxLength": 3}}});
    let new = json!({"title": "Renamed", "description": "docs", "type": "object", "properties": {"a": {"type": "string", "maxLength": 3, "description": "inline"}}});
    assert!(same_values(&old, &new));
    let longer = json!({"type": "object", "properties": {"a": {"type": "string", "maxLength": 4}}});
    assert!(admits_no_more(&old, &longer).is_err());
}

#[test]
fn what_is_not_understood_counts_as_wider() {
    let old = json!({"type": "object", "patternProperties": {"^x": {"type": "string"}}});
    let new = json!({"type": "object", "patternProperties": {"^x": {"type": "integer"}}});
    assert!(admits_no_more(&old, &new).unwrap_err()[0].contains("patternProperties"));
    // Added where it was not, it exempts keys from `additionalProperties`.
    let closed = json!({"type": "object", "additionalProperties": false});
    let open = json!({"type": "object", "additionalProperties": false, "patternProperties": {".": true}});
    assert!(admits_no_more(&closed, &open).is_err());
    let remote = json!({"$ref": "https://example.com/schema.json"});
    assert!(admits_no_more(&json!({"type": "string"}), &remote).is_err());
}

#[test]
fn equal_text_is_not_equal_meaning_when_the_definitions_differ() {
    let with = |def: Value| json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/A"}}, "$defs": {"A": def}});
    let (old, new) = (with(json!({"type": "integer"})), with(json!({"type": "number"})));
    assert_eq!(admits_no_more(&old, &new).unwrap_err(), ["/properties/x: type widened: accepts number"]);
    assert!(admits_no_more(&new, &old).is_ok());
}

#[test]
fn a_recursive_type_is_compared_without_looping() {
    let tree = |leaf: &str| {
        json!({"$ref": "#/$defs/Node", "$defs": {"Node": {"type": "object", "properties": {
            "value": {"type": leaf}, "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}
        }, "required": ["value"], "additionalProperties": false}}})
    };
    assert!(admits_no_more(&tree("number"), &tree("integer")).is_ok());
    assert!(admits_no_more(&tree("integer"), &tree("number")).is_err());
}

#[test]
fn an_enum_with_data_removing_a_variant_is_not_a_widening() {
    let variant = |name: &str| json!({"type": "object", "properties": {name: {"type": "string"}}, "required": [name], "additionalProperties": false});
    let old = json!({"oneOf": [{"type": "string", "enum": ["Unit"]}, variant("A"), variant("B")]});
    let new = json!({"oneOf": [{"type": "string", "enum": ["Unit"]}, variant("A")]});
    assert!(admits_no_more(&old, &new).is_ok());
    assert!(admits_no_more(&new, &old).is_err());
}

// ---------------------------------------------------------------------------------------
// The validator: what a JSON Schema (draft 2020-12) accepts, for the keywords generated below.

fn valid(root: &Value, schema: &Value, v: &Value) -> bool {
    let m = match schema {
        Value::Bool(b) => return *b,
        Value::Object(m) => m,
        _ => panic!("not a schema: {schema}"),
    };
    if let Some(r) = m.get("$ref").and_then(Value::as_str) {
        let target = root.pointer(r.trim_start_matches('#')).expect("a local reference");
        if !valid(root, target, v) {
            return false;
        }
    }
    m.iter().all(|(k, s)| keyword(root, m, k, s, v))
}

fn is_type(t: &str, v: &Value) -> bool {
    match t {
        "null" => v.is_null(),
        "boolean" => v.is_boolean(),
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "number" => v.is_number(),
        "integer" => v.as_f64().is_some_and(|f| f.fract() == 0.0),
        _ => false,
    }
}

fn num_eq(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

fn keyword(root: &Value, m: &Map<String, Value>, k: &str, s: &Value, v: &Value) -> bool {
    let n = v.as_f64();
    let len = |v: &Value| v.as_str().map(|s| s.chars().count());
    match k {
        "type" => match s {
            Value::String(t) => is_type(t, v),
            Value::Array(ts) => ts.iter().any(|t| is_type(t.as_str().unwrap(), v)),
            _ => false,
        },
        "enum" => s.as_array().unwrap().iter().any(|e| num_eq(e, v)),
        "const" => num_eq(s, v),
        "minimum" => n.is_none_or(|x| x >= s.as_f64().unwrap()),
        "maximum" => n.is_none_or(|x| x <= s.as_f64().unwrap()),
        "exclusiveMinimum" => n.is_none_or(|x| x > s.as_f64().unwrap()),
        "exclusiveMaximum" => n.is_none_or(|x| x < s.as_f64().unwrap()),
        "minLength" => len(v).is_none_or(|l| l as u64 >= s.as_u64().unwrap()),
        "maxLength" => len(v).is_none_or(|l| l as u64 <= s.as_u64().unwrap()),
        "minItems" => v.as_array().is_none_or(|a| a.len() as u64 >= s.as_u64().unwrap()),
        "maxItems" => v.as_array().is_none_or(|a| a.len() as u64 <= s.as_u64().unwrap()),
        "uniqueItems" => {
            !s.as_bool().unwrap()
                || v.as_array()
                    .is_none_or(|a| a.iter().enumerate().all(|(i, x)| a[i + 1..].iter().all(|y| !num_eq(x, y))))
        }
        "items" => v.as_array().is_none_or(|a| a.iter().all(|x| valid(root, s, x))),
        "required" => {
            v.as_object().is_none_or(|o| s.as_array().unwrap().iter().all(|r| o.contains_key(r.as_str().unwrap())))
        }
        "properties" => v
            .as_object()
            .is_none_or(|o| s.as_object().unwrap().iter().all(|(p, ps)| o.get(p).is_none_or(|x| valid(root, ps, x)))),
        "additionalProperties" => v.as_object().is_none_or(|o| {
            let declared = m.get("properties").and_then(Value::as_object);
            o.iter().filter(|(p, _)| declared.is_none_or(|d| !d.contains_key(*p))).all(|(_, x)| valid(root, s, x))
        }),
        "anyOf" => s.as_array().unwrap().iter().any(|b| valid(root, b, v)),
        "allOf" => s.as_array().unwrap().iter().all(|b| valid(root, b, v)),
        "oneOf" => s.as_array().unwrap().iter().filter(|b| valid(root, b, v)).count() == 1,
        _ => true,
    }
}

// ---------------------------------------------------------------------------------------
// Generated schemas, pairs of them related by mixing keywords, and values.

const KEYS: [&str; 3] = ["a", "b", "c"];

fn type_names() -> impl Strategy<Value = Value> {
    let one = prop::sample::select(vec!["null", "boolean", "integer", "number", "string", "array", "object"]);
    prop_oneof![one.clone().prop_map(|t| json!(t)), prop::collection::vec(one, 1..3).prop_map(|ts| json!(ts))]
}

fn scalar() -> impl Strategy<Value = Value> {
    prop::sample::select(vec![
        json!(null),
        json!(true),
        json!(false),
        json!(0),
        json!(1),
        json!(2),
        json!(-1),
        json!(1.5),
        json!(""),
        json!("a"),
        json!("ab"),
        json!("b"),
    ])
}

fn value() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::btree_map(prop::sample::select(vec!["a", "b", "c", "d"]), inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())),
        ]
    })
}

fn schema() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        1 => any::<bool>().prop_map(Value::Bool),
        6 => keywords(Just(json!(true)).boxed()),
    ];
    leaf.prop_recursive(2, 16, 3, |inner| keywords(inner.boxed()))
}

/// An object schema with some of the understood keywords, sub-schemas drawn from `inner`.
fn keywords(inner: BoxedStrategy<Value>) -> impl Strategy<Value = Value> {
    let bound = || prop::option::weighted(0.25, -1i64..3);
    let count = || prop::option::weighted(0.2, 0u64..3);
    (
        prop::option::weighted(0.6, type_names()),
        prop::option::weighted(0.2, prop::collection::vec(scalar(), 1..4)),
        (bound(), bound(), bound(), bound()),
        (count(), count(), count(), count(), prop::option::weighted(0.1, any::<bool>())),
        prop::option::weighted(
            0.4,
            prop::collection::btree_map(prop::sample::select(KEYS.to_vec()), inner.clone(), 0..3),
        ),
        prop::option::weighted(0.3, prop::sample::subsequence(KEYS.to_vec(), 0..3)),
        prop::option::weighted(0.3, inner.clone()),
        prop::option::weighted(0.2, inner.clone()),
        prop::option::weighted(
            0.15,
            (prop::sample::select(vec!["anyOf", "oneOf", "allOf"]), prop::collection::vec(inner, 1..3)),
        ),
    )
        .prop_map(
            |(t, e, (min, max, xmin, xmax), (minl, maxl, mini, maxi, uniq), props, req, addl, items, comb)| {
                let mut m = Map::new();
                let mut put = |k: &str, v: Option<Value>| {
                    if let Some(v) = v {
                        m.insert(k.to_owned(), v);
                    }
                };
                put("type", t);
                put("enum", e.map(Value::Array));
                put("minimum", min.map(Value::from));
                put("maximum", max.map(Value::from));
                put("exclusiveMinimum", xmin.map(Value::from));
                put("exclusiveMaximum", xmax.map(Value::from));
                put("minLength", minl.map(Value::from));
                put("maxLength", maxl.map(Value::from));
                put("minItems", mini.map(Value::from));
                put("maxItems", maxi.map(Value::from));
                put("uniqueItems", uniq.map(Value::from));
                put(
                    "properties",
                    props.map(|p| Value::Object(p.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())),
                );
                put("required", req.map(|r| json!(r)));
                put("additionalProperties", addl);
                put("items", items);
                if let Some((k, branches)) = comb {
                    put(k, Some(Value::Array(branches)));
                }
                Value::Object(m)
            },
        )
}

/// A schema mixed from two: per keyword (and per property, one level down), `a`'s, `b`'s or
/// none, as `picks` says. Most related pairs differ in a few keywords.
fn mix(a: &Value, b: &Value, picks: &[u8], at: &mut usize) -> Value {
    fn next(picks: &[u8], at: &mut usize) -> u8 {
        *at += 1;
        picks[(*at - 1) % picks.len()]
    }
    let (Value::Object(x), Value::Object(y)) = (a, b) else {
        return if next(picks, at).is_multiple_of(4) { b.clone() } else { a.clone() };
    };
    let mut out = Map::new();
    let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
    for k in keys {
        let choice = next(picks, at) % 8;
        let v = match (x.get(k), y.get(k)) {
            (Some(Value::Object(px)), Some(Value::Object(py))) if k == "properties" && choice < 6 => {
                let names: std::collections::BTreeSet<&String> = px.keys().chain(py.keys()).collect();
                let mut props = Map::new();
                for n in names {
                    let v = match (px.get(n), py.get(n)) {
                        (Some(s), Some(t)) => Some(mix(s, t, picks, at)),
                        (s, t) => {
                            if next(picks, at).is_multiple_of(2) {
                                s.cloned()
                            } else {
                                t.cloned()
                            }
                        }
                    };
                    if let Some(v) = v {
                        props.insert(n.clone(), v);
                    }
                }
                Some(Value::Object(props))
            }
            (xa, yb) => match choice {
                0..=4 => xa.cloned(),
                5 | 6 => yb.cloned(),
                _ => None,
            },
        };
        if let Some(v) = v {
            out.insert(k.clone(), v);
        }
    }
    Value::Object(out)
}

#[test]
fn differential_a_schema_classified_as_accepting_nothing_more_accepts_nothing_more() {
    let pairs = (schema(), schema(), prop::collection::vec(any::<u8>(), 16), prop::collection::vec(value(), 24));
    let mut runner = TestRunner::new(Config { cases: 4000, ..Config::default() });
    let (shown, strict) = (std::cell::Cell::new(0u32), std::cell::Cell::new(0u32));
    runner
        .run(&pairs, |(a, b, picks, values)| {
            let new = mix(&a, &b, &picks, &mut 0);
            for (old, new) in [(&a, &new), (&new, &a)] {
                if admits_no_more(old, new).is_err() {
                    continue;
                }
                shown.set(shown.get() + 1);
                if old != new && values.iter().any(|v| valid(old, old, v) && !valid(new, new, v)) {
                    strict.set(strict.get() + 1);
                }
                for v in &values {
                    prop_assert!(
                        !valid(new, new, v) || valid(old, old, v),
                        "classified as accepting nothing more, but the new schema accepts {v} and the old refuses it\nold {old}\nnew {new}"
                    );
                }
            }
            Ok(())
        })
        .unwrap();
    // The generator reaches the interesting cases: many pairs shown to accept nothing more,
    // many of them accepting strictly less.
    let (shown, strict) = (shown.get(), strict.get());
    assert!(shown > 1000 && strict > 100, "shown {shown}, strictly narrower {strict}");
}
