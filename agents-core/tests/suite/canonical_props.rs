//! The canonical JSON writer against an independent RFC 8785 implementation (serde_json_canonicalizer).

use agents_core::canonical;
use proptest::prelude::*;
use serde_json::{Map, Number, Value};

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-(1i64 << 53)..=(1i64 << 53)).prop_map(|i| Value::Number(i.into())),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(|f| Value::Number(Number::from_f64(f).unwrap())),
        any::<String>().prop_map(Value::String),
        "[\\u{0}-\\u{1f}\"\\\\/\\u{7f}\\u{2028}\\u{ffff}]{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((any::<String>(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn matches_independent_canonicalizer(v in json_value()) {
        let ours = canonical::to_string(&v);
        let theirs = serde_json_canonicalizer::to_string(&v).unwrap();
        prop_assert_eq!(ours, theirs);
    }

    #[test]
    fn round_trips_and_is_idempotent(v in json_value()) {
        let text = canonical::to_string(&v);
        let back: Value = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(canonical::to_string(&back), text);
    }

    #[test]
    fn floats_match(f in any::<f64>().prop_filter("finite", |f| f.is_finite())) {
        let ours = canonical::format_f64(f).unwrap();
        let theirs = serde_json_canonicalizer::to_string(&f).unwrap();
        prop_assert_eq!(ours, theirs);
    }
}

#[test]
fn key_order_is_by_utf16_code_units() {
    // RFC 8785 section 3.2.3 example keys.
    let v: Value = serde_json::from_str(
        r#"{"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis"}"#,
    )
    .unwrap();
    let text = canonical::to_string(&v);
    let keys: Vec<String> = text
        .trim_matches(['{', '}'])
        .split(",\"")
        .map(|kv| kv.split("\":").next().unwrap().trim_start_matches('"').to_owned())
        .collect();
    assert_eq!(keys, vec!["\\r", "1", "\u{80}", "\u{f6}", "\u{20ac}", "\u{1f600}", "\u{fb33}"]);
}

#[test]
fn non_finite_numbers_are_rejected() {
    for f in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        assert!(canonical::format_f64(f).is_err());
        assert!(canonical::number_from_f64(f).is_err());
    }
}
