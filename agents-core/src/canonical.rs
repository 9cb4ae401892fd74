//! Canonical JSON (RFC 8785, the JSON Canonicalization Scheme): object keys sorted by their
//! UTF-16 code units, no whitespace, numbers in their shortest ECMAScript form, strings with the
//! minimal escapes. The same value always gives the same bytes, so a hash of them is stable.

use serde_json::{Map, Number, Value};
use std::fmt::Write as _;

/// Why a value has no canonical form.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CanonicalError {
    /// NaN and the infinities have no JSON form.
    #[error("non-finite number `{0}` has no JSON form")]
    NonFinite(f64),
}

/// The canonical JSON text of a value.
///
/// ```
/// use serde_json::json;
/// let text = agents_core::canonical::to_string(&json!({"b": [1, 2.5], "a": "é\n"}));
/// assert_eq!(text, "{\"a\":\"é\\n\",\"b\":[1,2.5]}");
/// ```
pub fn to_string(value: &Value) -> String {
    let mut out = String::new();
    write_value(value, &mut out);
    out
}

/// The canonical JSON bytes of a value.
pub fn to_vec(value: &Value) -> Vec<u8> {
    to_string(value).into_bytes()
}

/// A JSON number from a float, refusing NaN and the infinities.
pub fn number_from_f64(f: f64) -> Result<Number, CanonicalError> {
    Number::from_f64(f).ok_or(CanonicalError::NonFinite(f))
}

/// The canonical text of a float, refusing NaN and the infinities.
pub fn format_f64(f: f64) -> Result<String, CanonicalError> {
    if !f.is_finite() {
        return Err(CanonicalError::NonFinite(f));
    }
    Ok(es_number(f))
}

/// Lowercase hex SHA-256 of bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

fn write_value(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_number(n, out),
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => write_object(map, out),
    }
}

fn write_object(map: &Map<String, Value>, out: &mut String) {
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    entries.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
    out.push('{');
    for (i, (k, v)) in entries.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_string(k, out);
        out.push(':');
        write_value(v, out);
    }
    out.push('}');
}

const EXACT_INT: u64 = 1 << 53;

fn write_number(n: &Number, out: &mut String) {
    if let Some(u) = n.as_u64() {
        if u <= EXACT_INT {
            let _ = write!(out, "{u}");
            return;
        }
    } else if let Some(i) = n.as_i64()
        && i.unsigned_abs() <= EXACT_INT
    {
        let _ = write!(out, "{i}");
        return;
    }
    // Beyond 2^53 the value is an IEEE double, as RFC 8785 requires.
    let f = n.as_f64().unwrap_or(0.0);
    out.push_str(&es_number(f));
}

/// ECMAScript `Number.prototype.toString` for a finite double (ties resolved to even, as the
/// specification requires), by `ryu-js`.
fn es_number(f: f64) -> String {
    if f == 0.0 {
        return "0".to_owned();
    }
    ryu_js::Buffer::new().format_finite(f).to_owned()
}

fn write_string(s: &str, out: &mut String) {
    out.reserve(s.len() + 2);
    out.push('"');
    // Copy runs that need no escape in one go; only `"`, `\\` and control characters escape.
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            0x08 => "\\b",
            0x0C => "\\f",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x00..=0x1f => "",
            _ => continue,
        };
        out.push_str(&s[start..i]);
        if escape.is_empty() {
            let _ = write!(out, "\\u{:04x}", b);
        } else {
            out.push_str(escape);
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_follow_ecmascript() {
        for (f, s) in [
            (1.0, "1"),
            (0.5, "0.5"),
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (1.5e-7, "1.5e-7"),
            (0.000001, "0.000001"),
            (-2.5, "-2.5"),
            (123456.789, "123456.789"),
        ] {
            assert_eq!(format_f64(f).unwrap(), s, "{f}");
        }
    }

    #[test]
    fn non_finite_is_refused() {
        assert!(format_f64(f64::NAN).is_err());
        assert!(format_f64(f64::INFINITY).is_err());
        assert!(number_from_f64(f64::NEG_INFINITY).is_err());
    }

    #[test]
    fn keys_sort_by_utf16_units() {
        // U+1F600 (surrogates D83D..) sorts before U+FF61 in UTF-16 but after it in UTF-8.
        let v = json!({"\u{ff61}": 1, "\u{1f600}": 2, "a": 3});
        assert_eq!(to_string(&v), "{\"a\":3,\"\u{1f600}\":2,\"\u{ff61}\":1}");
    }

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(to_string(&json!("\u{1}\u{1f}\"\\/")), "\"\\u0001\\u001f\\\"\\\\/\"");
    }
}
