//! The values of one call's secrets, masked in every text the runtime derives from the call.
//!
//! Redaction by schema masks the secret *positions* of the arguments the records and events
//! carry. A secret's value also travels in texts built from it: a serde error that quotes an
//! argument, a tool's error message, a result that echoes its input. [`CallSecrets`] holds
//! the values found at the positions the tool's schema marks secret (`x-agents-secret`), and
//! masks each of them, as written and in the forms a text may carry it (percent, `\xXX`,
//! `\u00XX` and HTML escapes of any byte, hex, base64 at any alignment), in: the typed-parse
//! refusal, an interceptor's denial reason, the tool's error message, and its result (as the
//! model, the events and the audit log receive it).
//!
//! Values shorter than [`MIN_SECRET_BYTES`] are not searched for (a two-character secret
//! would mask every occurrence of those characters in ordinary text); neither are values at
//! positions only the key list ([`RedactionKeys`](agents_core::redact::RedactionKeys))
//! masks. Base64 forms are matched for values of six bytes or more.

use crate::provider::redact::Redactor;
use agents_core::redact::MASK;
use serde_json::Value;

/// The shortest secret value searched for in derived texts, in bytes.
pub(super) const MIN_SECRET_BYTES: usize = 4;

/// The secret values of one call.
#[derive(Default, Clone)]
pub(super) struct CallSecrets {
    redactors: Vec<Redactor>,
}

impl CallSecrets {
    /// The values of `args` at the positions `redacted` (its redacted copy) masks.
    pub(super) fn of(args: &Value, redacted: &Value) -> Self {
        let mut values = Vec::new();
        masked_leaves(args, redacted, &mut values);
        values.sort();
        values.dedup();
        // Longer first, so a secret that contains another is masked whole.
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        CallSecrets { redactors: values.iter().map(|v| Redactor::of_bytes(v.as_bytes())).collect() }
    }

    /// Adds the values of `other`.
    pub(super) fn extend(&mut self, other: CallSecrets) {
        self.redactors.extend(other.redactors);
    }

    /// Whether there is nothing to mask.
    pub(super) fn is_empty(&self) -> bool {
        self.redactors.is_empty()
    }

    /// `text` with every secret value masked.
    pub(super) fn text(&self, text: &str) -> String {
        if self.is_empty() {
            return text.to_owned();
        }
        let mut out = text.to_owned();
        for r in &self.redactors {
            out = r.redact(&out);
        }
        out
    }

    /// `value` with every secret value masked in its strings (keys included).
    pub(super) fn value(&self, value: Value) -> Value {
        if self.is_empty() {
            return value;
        }
        match value {
            Value::String(s) => Value::String(self.text(&s)),
            Value::Array(items) => Value::Array(items.into_iter().map(|v| self.value(v)).collect()),
            Value::Object(map) => Value::Object(map.into_iter().map(|(k, v)| (self.text(&k), self.value(v))).collect()),
            other => {
                // A number or boolean that is itself a secret value is masked whole.
                let text = other.to_string();
                if self.text(&text) != text { Value::String(MASK.to_owned()) } else { other }
            }
        }
    }
}

/// Arguments the strict parse refused, read as leniently as possible to find the values a
/// refusal text may quote: a key given twice keeps all its values (as an array, so that a
/// secret position masks every one of them), and numbers of any size are read. `None` when
/// the text is not JSON at all (a syntax error quotes no value, only where it stopped).
pub(super) fn lenient_args(text: &str) -> Option<Value> {
    use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
    struct Lenient;
    impl<'de> DeserializeSeed<'de> for Lenient {
        type Value = Value;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
            d.deserialize_any(self)
        }
    }
    impl<'de> Visitor<'de> for Lenient {
        type Value = Value;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("JSON")
        }
        fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
            Ok(Value::Bool(v))
        }
        fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
            Ok(v.into())
        }
        fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
            Ok(v.into())
        }
        fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
            Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
        }
        fn visit_str<E>(self, v: &str) -> Result<Value, E> {
            Ok(Value::String(v.to_owned()))
        }
        fn visit_unit<E>(self) -> Result<Value, E> {
            Ok(Value::Null)
        }
        fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<Value, S::Error> {
            let mut items = Vec::new();
            while let Some(v) = seq.next_element_seed(Lenient)? {
                items.push(v);
            }
            Ok(Value::Array(items))
        }
        fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Value, M::Error> {
            let mut out = serde_json::Map::new();
            // Keys given more than once, whose value is now the array of all they were given.
            let mut repeated = std::collections::HashSet::new();
            while let Some(key) = map.next_key::<String>()? {
                let value = map.next_value_seed(Lenient)?;
                match out.get_mut(&key) {
                    Some(Value::Array(all)) if repeated.contains(&key) => all.push(value),
                    Some(first) => {
                        let first = first.take();
                        out.insert(key.clone(), Value::Array(vec![first, value]));
                        repeated.insert(key);
                    }
                    None => {
                        out.insert(key, value);
                    }
                }
            }
            Ok(Value::Object(out))
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    Lenient.deserialize(&mut de).ok()
}

/// A value with `leaf` at the position a JSON pointer names (a segment of digits is read as
/// an array index), so that redaction by schema can say whether that position is secret.
pub(super) fn at_pointer(pointer: &str, leaf: Value) -> Value {
    let segments: Vec<String> = pointer.split('/').skip(1).map(|s| s.replace("~1", "/").replace("~0", "~")).collect();
    segments.iter().rev().fold(leaf, |inner, segment| match segment.parse::<usize>() {
        Ok(i) if i < 1024 => {
            let mut items = vec![Value::Null; i];
            items.push(inner);
            Value::Array(items)
        }
        _ => Value::Object([(segment.clone(), inner)].into_iter().collect()),
    })
}

/// Collects the texts of `args` where `redacted` holds the mask.
fn masked_leaves(args: &Value, redacted: &Value, out: &mut Vec<String>) {
    match (args, redacted) {
        (a, Value::String(m)) if m == MASK && a.as_str() != Some(MASK) => leaves(a, out),
        (Value::Object(a), Value::Object(r)) => {
            for (k, v) in a {
                if let Some(rv) = r.get(k) {
                    masked_leaves(v, rv, out);
                }
            }
        }
        (Value::Array(a), Value::Array(r)) => {
            for (v, rv) in a.iter().zip(r) {
                masked_leaves(v, rv, out);
            }
        }
        _ => {}
    }
}

/// Every scalar of `value` as text, when long enough to search for.
fn leaves(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) if s.len() >= MIN_SECRET_BYTES => out.push(s.clone()),
        Value::Number(n) if n.to_string().len() >= MIN_SECRET_BYTES => out.push(n.to_string()),
        Value::Array(items) => items.iter().for_each(|v| leaves(v, out)),
        Value::Object(map) => map.values().for_each(|v| leaves(v, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_values_at_masked_positions_are_masked_in_texts_and_values() {
        let args = json!({"name": "ann", "login": {"pin": "4401-zq-77", "user": "ann"}, "codes": ["abcd-1", "no"]});
        let redacted = json!({"name": "ann", "login": {"pin": MASK, "user": "ann"}, "codes": MASK});
        let s = CallSecrets::of(&args, &redacted);
        assert_eq!(s.text("bad pin 4401-zq-77 for ann"), "bad pin **** for ann");
        assert_eq!(s.text("hex 343430312d7a712d3737"), "hex ****");
        assert_eq!(s.text("pct %34%34%30%31-zq-77"), "pct ****");
        assert_eq!(s.text("code abcd-1, no"), "code ****, no", "a value under four bytes is left");
        assert_eq!(s.value(json!({"echo": ["4401-zq-77"]})), json!({"echo": ["****"]}));
        assert!(CallSecrets::of(&args, &args).is_empty());
    }

    #[test]
    fn a_key_given_twice_keeps_both_values_and_a_pointer_names_its_position() {
        let v =
            lenient_args(r#"{"pin": "first-1", "n": 123456789012345678901234, "pin": "second-2", "pin": "third-3"}"#)
                .unwrap();
        assert_eq!(v["pin"], json!(["first-1", "second-2", "third-3"]));
        assert!(lenient_args(r#"{"pin": "#).is_none());
        assert_eq!(at_pointer("/login/pin", json!(7)), json!({"login": {"pin": 7}}));
        assert_eq!(at_pointer("/codes/2", json!(7)), json!({"codes": [null, null, 7]}));
        assert_eq!(at_pointer("/a~1b", json!(7)), json!({"a/b": 7}));
        assert_eq!(at_pointer("", json!(7)), json!(7));
    }
}
