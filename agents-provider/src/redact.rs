//! Keeping the API key out of every text built from a server's answer: [`ApiKey`], which never
//! prints, and [`Redactor`], which finds it in what a server sends back. The HTTP stack, which
//! sends the key, takes both from here.
//!
//! A server (or a proxy in front of it) may echo the key it received, and not always as it
//! was sent: JSON escapes it, a URL percent-encodes it, an HTML page writes entities, a
//! gateway logs it in base64 or hex. The providers build every error text from the decoded
//! answer and pass each one through [`Redactor::redact`] — in `Redactor::quote` where they
//! quote server text, and once more over the finished [`ProviderError`] in
//! `Redactor::error`, the single exit every failed call takes. So the key reaches no error
//! message, log line, event or audit record, whichever path built the text.
//!
//! Covered forms of the key (each matched anywhere in the text):
//!
//! - as sent, ASCII case ignored;
//! - with any of its bytes written as `%XX` (URLs), `\xXX` or `\u00XX` (JSON, JavaScript),
//!   `&#NN;` or `&#xHH;` (HTML), mixed freely with plain bytes;
//! - in hexadecimal (either case);
//! - in base64 (standard or URL-safe alphabet, at any of the three alignments, so also inside
//!   a longer encoded text such as a `Basic` credential).
//!
//! Not covered: encryption, hashes, the key cut into pieces with other text between them,
//! or encodings stacked on top of one another (base64 of hex). The model's own answer (text
//! and tool arguments) is not an error text and is passed through as the model wrote it.

#[cfg(feature = "http")]
use super::ProviderError;
#[cfg(feature = "http")]
use super::truncate;
use base64::Engine as _;

/// An API key. It never appears in `Debug` output, error messages or descriptions.
#[cfg(feature = "http")]
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

#[cfg(feature = "http")]
impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The key itself, for the request header only.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

#[cfg(feature = "http")]
impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(****)")
    }
}

/// What replaces the key.
const MASK: &str = "****";

/// Finds the key, in the forms listed in the [module docs](self), in texts from the server.
#[derive(Clone, Default)]
pub struct Redactor {
    /// The key's bytes; empty when there is no key.
    key: Vec<u8>,
    /// Whole-key encodings matched literally: base64 cores (case-sensitive).
    exact: Vec<Vec<u8>>,
    /// The key in lowercase hex (matched ignoring ASCII case).
    hex: Vec<u8>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Redactor(****)")
    }
}

impl Redactor {
    /// A redactor for `key` (none: texts pass unchanged).
    #[cfg(feature = "http")]
    pub(crate) fn new(key: Option<&ApiKey>) -> Self {
        match key {
            Some(k) => Self::of_bytes(k.expose().as_bytes()),
            None => Self::default(),
        }
    }

    /// A redactor for any secret text (empty: texts pass unchanged). The runtime masks the
    /// secret arguments of a run's calls in the texts it keeps this way.
    pub fn of_bytes(key: &[u8]) -> Self {
        if key.is_empty() {
            return Self::default();
        }
        let key = key.to_vec();
        let mut exact = Vec::new();
        for engine in [&base64::engine::general_purpose::STANDARD, &base64::engine::general_purpose::URL_SAFE] {
            for shift in 0..3usize {
                // The key after `shift` other bytes: the characters that depend on the key's
                // bits only are the same wherever the key sits in a longer encoded text.
                let mut bytes = vec![0u8; shift];
                bytes.extend_from_slice(&key);
                let encoded = engine.encode(&bytes);
                let first = (8 * shift).div_ceil(6);
                let end = (8 * (shift + key.len())) / 6;
                if end > first && end - first >= 8 {
                    let core = encoded.as_bytes()[first..end].to_vec();
                    if !exact.contains(&core) {
                        exact.push(core);
                    }
                }
            }
        }
        let hex = hex::encode(&key).into_bytes();
        Self { key, exact, hex }
    }

    /// `text` with every occurrence of the key, in every covered form, replaced by `****`.
    pub fn redact(&self, text: &str) -> String {
        if self.key.is_empty() {
            return text.to_string();
        }
        let bytes = text.as_bytes();
        let mut out: Vec<u8> = Vec::with_capacity(bytes.len());
        let mut at = 0;
        let mut changed = false;
        while at < bytes.len() {
            match self.match_at(bytes, at) {
                Some(end) => {
                    out.extend_from_slice(MASK.as_bytes());
                    at = end;
                    changed = true;
                }
                None => {
                    out.push(bytes[at]);
                    at += 1;
                }
            }
        }
        if !changed {
            return text.to_string();
        }
        // A match may end inside a multi-byte character only when the key itself is not
        // ASCII; the lossy conversion keeps the result valid text either way.
        String::from_utf8_lossy(&out).into_owned()
    }

    /// At most `max_chars` characters of server text, redacted before it is cut (so that a
    /// cut can never leave part of the key).
    #[cfg(feature = "http")]
    pub(crate) fn quote(&self, text: &str, max_chars: usize) -> String {
        truncate(&self.redact(text), max_chars)
    }

    /// The error with every text it carries redacted: the last step of every provider call.
    #[cfg(feature = "http")]
    pub(crate) fn error(&self, error: ProviderError) -> ProviderError {
        if self.key.is_empty() { error } else { error.map_text(|t| self.redact(t)) }
    }

    /// The end of the key's occurrence starting at `at`, in any covered form.
    fn match_at(&self, text: &[u8], at: usize) -> Option<usize> {
        let mut best = self.escaped_match(text, at);
        for core in &self.exact {
            if text[at..].starts_with(core) {
                best = best.max(Some(at + core.len()));
            }
        }
        if text.len() - at >= self.hex.len() && text[at..at + self.hex.len()].eq_ignore_ascii_case(&self.hex) {
            best = best.max(Some(at + self.hex.len()));
        }
        best
    }

    /// The key byte by byte, each byte plain or escaped, starting at `at`: the longest end.
    fn escaped_match(&self, text: &[u8], at: usize) -> Option<usize> {
        let first = self.key[0];
        let starts = |b: u8| b.eq_ignore_ascii_case(&first) || matches!(b, b'%' | b'\\' | b'&');
        if !starts(text[at]) {
            return None;
        }
        // The positions reachable after each key byte (a byte such as `%` in the key can be
        // read both plainly and as the start of an escape).
        let mut positions = vec![at];
        for &k in &self.key {
            let mut next = Vec::new();
            for &p in &positions {
                for end in byte_forms(text, p, k) {
                    if !next.contains(&end) {
                        next.push(end);
                    }
                }
            }
            if next.is_empty() {
                return None;
            }
            positions = next;
        }
        positions.into_iter().max()
    }
}

/// The ends of the encodings of byte `k` that start at `p`.
fn byte_forms(text: &[u8], p: usize, k: u8) -> impl Iterator<Item = usize> {
    let rest = text.get(p..).unwrap_or_default();
    let plain = rest.first().is_some_and(|b| b.eq_ignore_ascii_case(&k)).then_some(p + 1);
    let hex2 = |s: &[u8]| s.len() >= 2 && parse_hex(&s[..2]) == Some(u32::from(k));
    let percent = (rest.first() == Some(&b'%') && hex2(&rest[1..])).then_some(p + 3);
    let backslash_x = (rest.starts_with(b"\\x") && hex2(&rest[2..])).then_some(p + 4);
    let backslash_u = (k.is_ascii()
        && rest.len() >= 6
        && (rest.starts_with(b"\\u") || rest.starts_with(b"\\U"))
        && parse_hex(&rest[2..6]) == Some(u32::from(k)))
    .then_some(p + 6);
    let entity = html_entity(rest, k).map(|len| p + len);
    [plain, percent, backslash_x, backslash_u, entity].into_iter().flatten()
}

/// The length of an HTML numeric entity for `k` (`&#107;`, `&#x6B;`) at the start of `s`.
fn html_entity(s: &[u8], k: u8) -> Option<usize> {
    let body = s.strip_prefix(b"&#")?;
    let (digits, radix, skip) = match body.first() {
        Some(b'x' | b'X') => (&body[1..], 16, 3),
        _ => (body, 10, 2),
    };
    let len = digits.iter().take(8).take_while(|b| b.is_ascii_hexdigit()).count();
    if len == 0 || digits.get(len) != Some(&b';') {
        return None;
    }
    let value = u32::from_str_radix(std::str::from_utf8(&digits[..len]).ok()?, radix).ok()?;
    (value == u32::from(k) && k.is_ascii()).then_some(skip + len + 1)
}

fn parse_hex(s: &[u8]) -> Option<u32> {
    if !s.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    u32::from_str_radix(std::str::from_utf8(s).ok()?, 16).ok()
}

#[cfg(all(test, feature = "http"))]
mod tests {
    use super::*;

    const KEY: &str = "sk-live-Z9x8Q7w6E5r4T3y2";

    fn r() -> Redactor {
        Redactor::new(Some(&ApiKey::new(KEY)))
    }

    fn json_escaped(key: &str) -> String {
        key.bytes().map(|b| format!("\\u{:04x}", b)).collect()
    }

    #[test]
    fn every_covered_form_is_masked() {
        let b64 = base64::engine::general_purpose::STANDARD;
        let forms = [
            KEY.to_string(),
            KEY.to_ascii_uppercase(),
            json_escaped(KEY),
            KEY.bytes().map(|b| format!("%{b:02X}")).collect(),
            KEY.bytes().map(|b| format!("&#{b};")).collect(),
            KEY.bytes().map(|b| format!("&#x{b:x};")).collect(),
            KEY.bytes().map(|b| format!("\\x{b:02x}")).collect(),
            hex::encode(KEY),
            hex::encode_upper(KEY),
            b64.encode(KEY),
            b64.encode(format!("user:{KEY}")),
            b64.encode(format!("ab:{KEY}")),
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("x{KEY}")),
            // Mixed: a proxy that escapes only some bytes.
            "sk%2Dlive\\u002dZ9x8Q7w6E5r4T3y2".to_string(),
        ];
        for form in forms {
            let shown = r().redact(&format!("before {form} after"));
            assert!(shown.contains("****"), "{form} → {shown}");
            assert!(!shown.contains("Z9x8"), "{form} → {shown}");
            assert!(shown.starts_with("before ") && shown.ends_with(" after"), "{shown}");
        }
    }

    #[test]
    fn other_text_is_left_alone_and_no_key_changes_nothing() {
        let text = "plain error: model not found (50% of quota used) &amp; \\n";
        assert_eq!(r().redact(text), text);
        assert_eq!(Redactor::new(None).redact(&format!("x {KEY}")), format!("x {KEY}"));
        assert_eq!(Redactor::new(Some(&ApiKey::new(""))).redact("x"), "x");
    }

    #[test]
    fn api_key_debug_is_masked() {
        let key = ApiKey::new("sk-secret-123");
        assert_eq!(format!("{key:?}"), "ApiKey(****)");
    }

    #[test]
    fn quoting_cuts_after_redacting() {
        let text = format!("{}{KEY}", "a".repeat(10));
        let quoted = r().quote(&text, 16);
        assert!(!quoted.contains("sk-l"), "{quoted}");
        assert!(quoted.starts_with("aaaaaaaaaa****"), "{quoted}");
    }
}
