//! Text and hashes computed by const evaluation: a writer of canonical JSON into a fixed
//! buffer, byte-order comparison of strings, SHA-256 as lowercase hex.
//!
//! A value assembled from other types' consts (a composite's graph manifest names each node's
//! `MANIFEST_SHA256`) cannot be written inside a proc macro, which sees tokens, not values. It
//! is written here, by const evaluation, in two passes: one that counts the bytes, one that
//! writes them into an array of exactly that length. [`const_text!`](crate::const_text) does
//! both passes; [`sha256_hex`] hashes the result.
//!
//! Const evaluation is slow: SHA-256 of a 24 KB text costs seconds of compile time on every
//! build. Keep const texts small (a composite names its nodes' hashes, never their manifests).
//!
//! ```
//! use agents_core::constant::{self, Writer};
//!
//! const fn greeting(w: &mut Writer<'_>, name: &str) {
//!     w.raw("{\"hello\":");
//!     w.json_string(name);
//!     w.raw("}");
//! }
//! const TEXT: &str = agents_core::const_text!(greeting, "world");
//! const HASH: [u8; 64] = constant::sha256_hex(TEXT.as_bytes());
//! assert_eq!(TEXT, r#"{"hello":"world"}"#);
//! assert_eq!(constant::utf8(&HASH), agents_core::canonical::sha256_hex(TEXT.as_bytes()));
//! ```

use core::cmp::Ordering;

/// Lowercase hex of the SHA-256 of `bytes`, computed by const evaluation (the same value as
/// [`crate::canonical::sha256_hex`]). Turn it into a `&str` with [`utf8`].
pub const fn sha256_hex(bytes: &[u8]) -> [u8; 64] {
    let digest = sha2_const_stable::Sha256::new().update(bytes).finalize();
    let mut out = [0u8; 64];
    let mut i = 0;
    while i < 32 {
        out[2 * i] = HEX[(digest[i] >> 4) as usize];
        out[2 * i + 1] = HEX[(digest[i] & 0x0f) as usize];
        i += 1;
    }
    out
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// `bytes` as text. Panics (a compile error when evaluated in a const) if they are not UTF-8,
/// which text written by [`Writer`] from `&str` pieces always is.
pub const fn utf8(bytes: &[u8]) -> &str {
    match core::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(_) => panic!("const text is not UTF-8"),
    }
}

/// The byte order of two strings (the order of names in every canonical list).
pub const fn cmp(a: &str, b: &str) -> Ordering {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut i = 0;
    while i < a.len() && i < b.len() {
        if a[i] != b[i] {
            return if a[i] < b[i] { Ordering::Less } else { Ordering::Greater };
        }
        i += 1;
    }
    if a.len() == b.len() {
        Ordering::Equal
    } else if a.len() < b.len() {
        Ordering::Less
    } else {
        Ordering::Greater
    }
}

/// Whether two strings are equal, in const.
pub const fn eq(a: &str, b: &str) -> bool {
    matches!(cmp(a, b), Ordering::Equal)
}

/// A writer into a fixed buffer. Writing past the buffer's end only counts, so the same
/// writing function first measures the text (a writer over an empty buffer, then
/// [`Writer::len`]) and then fills an array of exactly that length ([`Writer::new`], then
/// [`Writer::finish`]).
#[derive(Debug)]
pub struct Writer<'a> {
    out: &'a mut [u8],
    len: usize,
}

impl<'a> Writer<'a> {
    /// A writer that fills `out`.
    pub const fn new(out: &'a mut [u8]) -> Self {
        Writer { out, len: 0 }
    }

    /// The bytes written so far (or counted, past the buffer).
    pub const fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing was written.
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Checks that the text filled the buffer exactly: panics otherwise (a compile error).
    pub const fn finish(self) {
        assert!(self.len == self.out.len(), "const text: the two passes wrote different lengths");
    }

    /// Writes one byte.
    pub const fn byte(&mut self, b: u8) {
        if self.len < self.out.len() {
            self.out[self.len] = b;
        }
        self.len += 1;
    }

    /// Writes `text` as it is.
    pub const fn raw(&mut self, text: &str) {
        let bytes = text.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            self.byte(bytes[i]);
            i += 1;
        }
    }

    /// Writes `n` in decimal.
    pub const fn number(&mut self, n: u64) {
        let mut digits = [0u8; 20];
        let (mut count, mut rest) = (0, n);
        loop {
            digits[count] = b'0' + (rest % 10) as u8;
            count += 1;
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        while count > 0 {
            count -= 1;
            self.byte(digits[count]);
        }
    }

    /// Writes `text` as a JSON string with the escapes of RFC 8785 (the rules of
    /// [`crate::canonical`]): `"` and `\` escaped, the short forms `\b \f \n \r \t`, other
    /// control characters as `\u00xx`, everything else as it is.
    pub const fn json_string(&mut self, text: &str) {
        let bytes = text.as_bytes();
        self.byte(b'"');
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            match b {
                b'"' => self.raw("\\\""),
                b'\\' => self.raw("\\\\"),
                0x08 => self.raw("\\b"),
                0x0c => self.raw("\\f"),
                b'\n' => self.raw("\\n"),
                b'\r' => self.raw("\\r"),
                b'\t' => self.raw("\\t"),
                0..=0x1f => {
                    self.raw("\\u00");
                    self.byte(HEX[(b >> 4) as usize]);
                    self.byte(HEX[(b & 0x0f) as usize]);
                }
                _ => self.byte(b),
            }
            i += 1;
        }
        self.byte(b'"');
    }

    /// Writes `"key":` (the key as a JSON string).
    pub const fn key(&mut self, key: &str) {
        self.json_string(key);
        self.byte(b':');
    }
}

/// A `&'static str` written by const evaluation: `const_text!(write, arg)` calls
/// `write(&mut Writer, arg)` twice, once to count and once to fill an array of that length.
/// `write` must be a `const fn` and `arg` a const expression (no generic parameter: the length
/// becomes an array type).
///
/// ```
/// const fn list(w: &mut agents_core::constant::Writer<'_>, n: u64) {
///     w.raw("[");
///     w.number(n);
///     w.raw("]");
/// }
/// const TEXT: &str = agents_core::const_text!(list, 42);
/// assert_eq!(TEXT, "[42]");
/// ```
#[macro_export]
macro_rules! const_text {
    ($write:path, $arg:expr) => {{
        const LEN: usize = {
            let mut w = $crate::constant::Writer::new(&mut []);
            $write(&mut w, $arg);
            w.len()
        };
        const BYTES: [u8; LEN] = {
            let mut bytes = [0u8; LEN];
            let mut w = $crate::constant::Writer::new(&mut bytes);
            $write(&mut w, $arg);
            w.finish();
            bytes
        };
        $crate::constant::utf8(&BYTES)
    }};
}

/// The lowercase hex SHA-256 of a const `&str` expression (no generic parameter), as a
/// `&'static str`, by const evaluation.
///
/// ```
/// const HASH: &str = agents_core::const_sha256_hex!("");
/// assert_eq!(HASH, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
/// ```
#[macro_export]
macro_rules! const_sha256_hex {
    ($text:expr) => {{
        const HEX: [u8; 64] = $crate::constant::sha256_hex($text.as_bytes());
        $crate::constant::utf8(&HEX)
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    const fn sample(w: &mut Writer<'_>, text: &str) {
        w.raw("{");
        w.key("k");
        w.json_string(text);
        w.raw(",");
        w.key("n");
        w.number(0);
        w.raw(",");
        w.key("m");
        w.number(u64::MAX);
        w.raw("}");
    }

    const TRICKY: &str = "a\"b\\c\u{8}\u{c}\n\r\t\u{1}\u{1f}é\u{2028}😀";
    const SAMPLE: &str = crate::const_text!(sample, TRICKY);

    #[test]
    fn the_const_writer_writes_what_the_canonical_writer_writes() {
        let mut expected = String::new();
        crate::canonical::write_str_to(TRICKY, &mut expected);
        let expected = format!("{{\"k\":{expected},\"n\":0,\"m\":{}}}", u64::MAX);
        assert_eq!(SAMPLE, expected);
        let parsed: serde_json::Value = serde_json::from_str(SAMPLE).unwrap();
        assert_eq!(parsed["k"], TRICKY);
    }

    #[test]
    fn the_const_hash_is_the_native_hash() {
        const EMPTY: [u8; 64] = sha256_hex(b"");
        const TEXT: [u8; 64] = sha256_hex(SAMPLE.as_bytes());
        assert_eq!(utf8(&EMPTY), crate::canonical::sha256_hex(b""));
        assert_eq!(utf8(&TEXT), crate::canonical::sha256_hex(SAMPLE.as_bytes()));
    }

    #[test]
    fn strings_compare_in_byte_order() {
        let mut names = ["b", "a", "ab", "", "B", "é", "z"];
        let mut by_const = names;
        names.sort();
        by_const.sort_by(|a, b| cmp(a, b));
        assert_eq!(names, by_const);
        assert!(eq("same", "same") && !eq("same", "sam"));
    }

    #[test]
    fn a_buffer_of_the_wrong_length_is_refused() {
        let result = std::panic::catch_unwind(|| {
            let mut short = [0u8; 3];
            let mut w = Writer::new(&mut short);
            w.raw("four");
            w.finish();
        });
        assert!(result.is_err());
    }
}
