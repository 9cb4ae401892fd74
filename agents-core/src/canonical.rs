//! Canonical JSON (RFC 8785, the JSON Canonicalization Scheme): object keys sorted by their
//! UTF-16 code units, no whitespace, numbers in their shortest ECMAScript form, strings with the
//! minimal escapes. The same value always gives the same bytes, so a hash of them is stable.

use serde_json::{Map, Number, Value};
use std::fmt::Write as _;

/// Why a value has no canonical form.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
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

/// Appends the canonical JSON text of a value to `out`.
///
/// ```
/// let mut out = String::from("[");
/// agents_core::canonical::write_to(&serde_json::json!({"z": 1, "a": null}), &mut out);
/// assert_eq!(out, "[{\"a\":null,\"z\":1}");
/// ```
pub fn write_to(value: &Value, out: &mut String) {
    write_value(value, out);
}

/// Appends a string as a canonical JSON string literal (quotes and minimal escapes) to `out`.
///
/// ```
/// let mut out = String::new();
/// agents_core::canonical::write_str_to("a\"b\n", &mut out);
/// assert_eq!(out, r#""a\"b\n""#);
/// ```
pub fn write_str_to(s: &str, out: &mut String) {
    write_string(s, out);
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
    digest_hex(&sha2::Sha256::digest(bytes).into())
}

/// Lowercase hex of a 32-byte digest (SHA-256, HMAC-SHA-256). Every audit record carries at
/// least one, so the text is written into a stack buffer and allocated once, rather than
/// collected character by character as `hex::encode` does.
pub fn digest_hex(digest: &[u8; 32]) -> String {
    let mut text = String::with_capacity(64);
    write_digest_hex(digest, &mut text);
    text
}

/// Appends the lowercase hex of a 32-byte digest to `out` (see [`digest_hex`]).
pub fn write_digest_hex(digest: &[u8; 32], out: &mut String) {
    let mut text = [0u8; 64];
    for (pair, &byte) in text.chunks_exact_mut(2).zip(digest) {
        pair.copy_from_slice(&HEX_PAIRS[usize::from(byte)]);
    }
    out.push_str(std::str::from_utf8(&text).expect("hex digits are ASCII"));
}

/// The two lowercase hex digits of every byte.
const HEX_PAIRS: [[u8; 2]; 256] = {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut pairs = [[0u8; 2]; 256];
    let mut i = 0;
    while i < 256 {
        pairs[i] = [DIGITS[i >> 4], DIGITS[i & 0x0f]];
        i += 1;
    }
    pairs
};

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
    // serde_json's map usually iterates in byte order already, which is the canonical order
    // unless keys differ in the range where UTF-8 and UTF-16 disagree. The members are written
    // in the map's order, each key checked against the one before as it goes (one pass); at
    // the first key out of order what was written of this object is taken back and the
    // members are written sorted (always correct, whatever order the map keeps).
    let start = out.len();
    if !write_members(map.iter(), true, out) {
        out.truncate(start);
        let mut entries: Vec<(&String, &Value)> = map.iter().collect();
        entries.sort_by(|a, b| utf16_order(a.0, b.0));
        write_members(entries.into_iter(), false, out);
    }
}

/// Writes `{members}` in the order given. With `check`, stops at the first key that does not
/// come after the one before in UTF-16 order and says so (`false`, the object unfinished).
fn write_members<'a>(entries: impl Iterator<Item = (&'a String, &'a Value)>, check: bool, out: &mut String) -> bool {
    out.push('{');
    let mut before: Option<&str> = None;
    for (k, v) in entries {
        if let Some(before) = before {
            if check && !utf16_order(before, k).is_lt() {
                return false;
            }
            out.push(',');
        }
        write_string(k, out);
        out.push(':');
        write_value(v, out);
        before = Some(k);
    }
    out.push('}');
    true
}

/// Orders two keys by their UTF-16 code units, as RFC 8785 requires.
///
/// UTF-8 bytes compare in code point order, and UTF-16 differs from code point order only
/// between a supplementary-plane character (UTF-8 lead byte `F0`..`F4`) and one in
/// `U+E000..=U+FFFF` (lead byte `EE` or `EF`). So the first differing byte decides unless
/// both bytes are `EE` or above; only then are the code units compared.
pub(crate) fn utf16_order(a: &str, b: &str) -> std::cmp::Ordering {
    match a.bytes().zip(b.bytes()).position(|(x, y)| x != y) {
        None => a.len().cmp(&b.len()),
        Some(i) => {
            let (x, y) = (a.as_bytes()[i], b.as_bytes()[i]);
            if x >= 0xEE && y >= 0xEE { a.encode_utf16().cmp(b.encode_utf16()) } else { x.cmp(&y) }
        }
    }
}

const EXACT_INT: u64 = 1 << 53;

/// Appends the canonical text of an unsigned integer: its digits up to 2^53, the IEEE double
/// it rounds to beyond (as RFC 8785 requires), exactly as [`write_to`] writes `Value::from(n)`.
pub(crate) fn write_u64(n: u64, out: &mut String) {
    if n <= EXACT_INT {
        out.push_str(itoa::Buffer::new().format(n));
    } else {
        write_number(&Number::from(n), out);
    }
}

fn write_number(n: &Number, out: &mut String) {
    if let Some(u) = n.as_u64() {
        if u <= EXACT_INT {
            out.push_str(itoa::Buffer::new().format(u));
            return;
        }
    } else if let Some(i) = n.as_i64()
        && i.unsigned_abs() <= EXACT_INT
    {
        out.push_str(itoa::Buffer::new().format(i));
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
    write_string_verbatim(s, out);
}

/// Appends a string as a canonical JSON string literal; whether it needed no escape (the
/// literal is then `"`, the string itself and `"`).
pub(crate) fn write_string_verbatim(s: &str, out: &mut String) -> bool {
    out.reserve(s.len() + 2);
    out.push('"');
    // Most strings (ids, names, hex) need no escape: checked without a branch per word, then
    // copied whole.
    if !needs_escape(s.as_bytes()) {
        out.push_str(s);
        out.push('"');
        return true;
    }
    // Copy runs that need no escape in one go; only `"`, `\\` and control characters escape.
    let bytes = s.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        // Skip eight plain bytes at a time.
        if let Some(chunk) = bytes.get(i..i + 8) {
            let word = u64::from_le_bytes(chunk.try_into().unwrap_or_default());
            if !has_escape(word) {
                i += 8;
                continue;
            }
        }
        let b = bytes[i];
        let escape = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            0x08 => "\\b",
            0x0C => "\\f",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x00..=0x1f => "",
            _ => {
                i += 1;
                continue;
            }
        };
        out.push_str(&s[start..i]);
        if escape.is_empty() {
            let _ = write!(out, "\\u{:04x}", b);
        } else {
            out.push_str(escape);
        }
        i += 1;
        start = i;
    }
    out.push_str(&s[start..]);
    out.push('"');
    false
}

/// Whether any byte of `bytes` is `"`, `\\` or below 0x20: eight bytes at a time (the last
/// word overlaps the one before it), a short string in two overlapping halves.
fn needs_escape(bytes: &[u8]) -> bool {
    let n = bytes.len();
    let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap_or_default());
    if n >= 8 {
        let mut any = false;
        let mut at = 0;
        while at + 8 <= n {
            any |= has_escape(word(at));
            at += 8;
        }
        if at < n {
            any |= has_escape(word(n - 8));
        }
        any
    } else if n >= 4 {
        let half = |at: usize| u64::from(u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap_or_default()));
        has_escape(half(0) | half(n - 4) << 32)
    } else {
        bytes.iter().any(|&b| b < 0x20 || b == b'"' || b == b'\\')
    }
}

/// Whether any of the eight bytes is `"`, `\\` or below 0x20 (the classic SWAR tests: a byte
/// below `n` sets its high bit in `x - n` where it was clear in `x`; `x ^ c` has a zero byte
/// where `x` has `c`). Exact as to whether such a byte exists.
fn has_escape(x: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let below = |v: u64, n: u64| v.wrapping_sub(ONES * n) & !v & HIGH;
    (below(x, 0x20) | below(x ^ (ONES * u64::from(b'"')), 1) | below(x ^ (ONES * u64::from(b'\\')), 1)) != 0
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
    fn an_object_out_of_utf16_order_is_written_again_sorted_wherever_it_is_nested() {
        // Each map below iterates `\u{ff61}` before `\u{1f600}` (byte order): found out of order
        // after members (and nested objects) were written, and written again sorted.
        let v = json!({
            "a": [1, {"\u{ff61}": {"b": 1, "a": 2}, "\u{1f600}": "y", "z": null}],
            "\u{ff61}": 0,
            "\u{1f600}": {"k": "v", "\u{ff61}": [], "\u{1f600}": {}},
        });
        let want = "{\"a\":[1,{\"z\":null,\"\u{1f600}\":\"y\",\"\u{ff61}\":{\"a\":2,\"b\":1}}],\
                    \"\u{1f600}\":{\"k\":\"v\",\"\u{1f600}\":{},\"\u{ff61}\":[]},\"\u{ff61}\":0}";
        assert_eq!(to_string(&v), want);
        assert_eq!(to_string(&v), serde_json_canonicalizer::to_string(&v).unwrap());
        let mut out = String::from("kept");
        write_to(&v, &mut out);
        assert_eq!(out, format!("kept{want}"));
    }

    #[test]
    fn the_byte_shortcut_orders_keys_exactly_as_utf16_units_do() {
        let pieces = [
            "",
            "a",
            "z",
            "é",
            "\u{7ff}",
            "\u{800}",
            "\u{d7ff}",
            "\u{e000}",
            "\u{ff61}",
            "\u{ffff}",
            "\u{10000}",
            "\u{1f600}",
            "\u{10ffff}",
        ];
        let mut keys = Vec::new();
        for x in pieces {
            for y in pieces {
                keys.push(format!("{x}{y}"));
                keys.push(format!("k{x}{y}"));
            }
        }
        for a in &keys {
            for b in &keys {
                assert_eq!(utf16_order(a, b), a.encode_utf16().cmp(b.encode_utf16()), "{a:?} vs {b:?}");
            }
        }
    }

    #[test]
    fn the_eight_byte_scan_finds_every_byte_that_escapes() {
        let naive = |w: [u8; 8]| w.iter().any(|&b| b < 0x20 || b == b'"' || b == b'\\');
        for fill in [b'a', 0x7f, 0x80, 0xff, b' ', b'!', b'#', b'[', b']'] {
            for b in 0..=255u8 {
                for at in 0..8 {
                    let mut w = [fill; 8];
                    w[at] = b;
                    assert_eq!(has_escape(u64::from_le_bytes(w)), naive(w), "{w:?}");
                }
            }
        }
        // Long strings with escapes at every offset round-trip through serde_json.
        for at in 0..20 {
            for c in ['"', '\\', '\n', '\u{1}', '\u{1f}', 'é', '\u{1f600}'] {
                let mut text: String = "abcdefghijklmnopqrst".chars().take(at).collect();
                text.push(c);
                text.push_str("uvwxyz0123456789");
                let mut out = String::new();
                write_string(&text, &mut out);
                assert_eq!(serde_json::from_str::<String>(&out).unwrap(), text);
            }
        }
    }

    #[test]
    fn the_whole_string_scan_finds_an_escape_at_any_length_and_offset() {
        let naive = |s: &[u8]| s.iter().any(|&b| b < 0x20 || b == b'"' || b == b'\\');
        for len in 0..=25 {
            let plain = vec![b'x'; len];
            assert!(!needs_escape(&plain));
            for at in 0..len {
                for b in [b'"', b'\\', 0, b'\n', 0x1f, b' ', 0x7f, b'a'] {
                    let mut text = plain.clone();
                    text[at] = b;
                    assert_eq!(needs_escape(&text), naive(&text), "{text:?}");
                    let text = String::from_utf8(text).unwrap();
                    let mut out = String::new();
                    write_string(&text, &mut out);
                    assert_eq!(serde_json::from_str::<String>(&out).unwrap(), text);
                    assert_eq!(out, serde_json::to_string(&text).unwrap());
                }
            }
        }
    }

    #[test]
    fn digest_hex_writes_what_hex_encode_writes() {
        let digest: [u8; 32] = std::array::from_fn(|i| (i as u8).wrapping_mul(37).wrapping_add(0xa5));
        assert_eq!(digest_hex(&digest), hex::encode(digest));
        assert_eq!(digest_hex(&[0; 32]), "0".repeat(64));
        assert_eq!(digest_hex(&[0xff; 32]), "f".repeat(64));
    }

    #[test]
    fn sha256_hex_is_the_lowercase_hex_of_the_digest() {
        assert_eq!(sha256_hex(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(to_string(&json!("\u{1}\u{1f}\"\\/")), "\"\\u0001\\u001f\\\"\\\\/\"");
    }
}
