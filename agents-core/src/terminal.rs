//! Text for a terminal that cannot hide or reorder what it shows.
//!
//! A string that came from a manifest, an audit record or a model may hold characters a
//! terminal acts on instead of showing: control characters (a carriage return or an escape
//! sequence can erase or overwrite a line), Unicode bidirectional controls (which reorder what
//! follows) and invisible format characters (zero-width spaces and joiners, tag characters,
//! variation selectors, fillers). [`escape`] shows each of them as a visible `\u{…}` escape,
//! newlines and tabs included, so one field always prints as one line of exactly the
//! characters it holds. [`escape_json`] does the same inside JSON text with JSON's own
//! `\uXXXX` escapes, so JSON output stays JSON and reads back to the same value.
//!
//! The escaping is unambiguous: a `\` is itself escaped (as `\u{5c}`) exactly when it is
//! followed by `u{`, so `\u{` in the output always starts an escape.
//!
//! ```
//! use agents_core::terminal::escape;
//! assert_eq!(escape("plain /data/*.csv"), "plain /data/*.csv");
//! assert_eq!(escape("a\u{202e}b\nc"), "a\\u{202e}b\\u{a}c");
//! assert_eq!(escape("\\u{41}"), "\\u{5c}u{41}");
//! ```

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether a terminal could act on `c` instead of showing it, or show nothing for it:
/// C0 and C1 controls and DEL, bidirectional controls, line and paragraph separators,
/// invisible format characters, fillers, variation selectors, tags and noncharacters.
pub fn is_hidden_or_control(c: char) -> bool {
    matches!(
        c,
        '\u{0}'..='\u{1f}'
            | '\u{7f}'..='\u{9f}'
            | '\u{ad}'
            | '\u{34f}'
            | '\u{61c}'
            | '\u{600}'..='\u{605}'
            | '\u{6dd}'
            | '\u{70f}'
            | '\u{890}'..='\u{891}'
            | '\u{8e2}'
            | '\u{115f}'..='\u{1160}'
            | '\u{17b4}'..='\u{17b5}'
            | '\u{180b}'..='\u{180f}'
            | '\u{200b}'..='\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2060}'..='\u{206f}'
            | '\u{2800}'
            | '\u{3164}'
            | '\u{fe00}'..='\u{fe0f}'
            | '\u{feff}'
            | '\u{ffa0}'
            | '\u{fff0}'..='\u{fffb}'
            | '\u{fffe}'..='\u{ffff}'
            | '\u{110bd}'
            | '\u{110cd}'
            | '\u{13430}'..='\u{1343f}'
            | '\u{1bca0}'..='\u{1bca3}'
            | '\u{1d173}'..='\u{1d17a}'
            | '\u{e0000}'..='\u{e0fff}'
    )
}

/// The byte offset of the first character that `needs` flags, scanning ASCII bytes without
/// decoding (outputs are mostly ASCII) and decoding only from a non-ASCII byte on.
fn first_flagged(s: &str, keep_lines: bool) -> Option<usize> {
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b < 0x80 {
            let flagged = match b {
                b'\n' => !keep_lines,
                b'\\' => !keep_lines && bytes[i + 1..].starts_with(b"u{"),
                0x00..=0x1f | 0x7f => true,
                _ => false,
            };
            if flagged {
                return Some(i);
            }
            i += 1;
        } else {
            let c = s[i..].chars().next().expect("a char starts at every non-continuation byte");
            if is_hidden_or_control(c) {
                return Some(i);
            }
            i += c.len_utf8();
        }
    }
    None
}

/// One field for the terminal: every character [`is_hidden_or_control`] flags (newline and
/// tab included) as `\u{hex}`, and a `\` that is followed by `u{` as `\u{5c}`. Everything
/// else is kept as it is.
pub fn escape(s: &str) -> Cow<'_, str> {
    escape_with(s, false)
}

/// [`escape`] for text made of lines the program wrote itself: newlines are kept and `\` is
/// left alone (the fields inside were escaped already); every other flagged character is
/// escaped. The last line of defence before output reaches a terminal.
pub fn escape_keeping_lines(s: &str) -> Cow<'_, str> {
    escape_with(s, true)
}

fn escape_with(s: &str, keep_lines: bool) -> Cow<'_, str> {
    let Some(first) = first_flagged(s, keep_lines) else {
        return Cow::Borrowed(s);
    };
    let needs = |i: usize, c: char| {
        if keep_lines {
            c != '\n' && is_hidden_or_control(c)
        } else {
            is_hidden_or_control(c) || (c == '\\' && s[i + 1..].starts_with("u{"))
        }
    };
    let mut out = String::with_capacity(s.len() + 16);
    out.push_str(&s[..first]);
    for (i, c) in s[first..].char_indices() {
        if needs(first + i, c) {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// JSON text for the terminal: every character [`is_hidden_or_control`] flags is written as
/// JSON's `\uXXXX` escape (a surrogate pair above U+FFFF). Such characters can only stand
/// inside JSON strings, where the escape reads back as the same character, so the result is
/// JSON with the same value.
///
/// ```
/// use agents_core::terminal::escape_json;
/// let text = serde_json::to_string(&serde_json::json!({"tool": "a\u{202e}b"})).unwrap();
/// let shown = escape_json(&text);
/// assert_eq!(shown, r#"{"tool":"a\u202eb"}"#);
/// assert_eq!(serde_json::from_str::<serde_json::Value>(&shown).unwrap()["tool"], "a\u{202e}b");
/// ```
pub fn escape_json(text: &str) -> Cow<'_, str> {
    // JSON text has no raw backslash outside escapes that could start `u{`, and `\n` is kept.
    let Some(first) = first_flagged(text, true) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len() + 16);
    out.push_str(&text[..first]);
    for c in text[first..].chars() {
        if c != '\n' && is_hidden_or_control(c) {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{u:04x}");
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flagged_characters_are_escaped_and_others_kept() {
        for c in ['\u{1b}', '\r', '\n', '\t', '\u{7f}', '\u{85}', '\u{202e}', '\u{2066}', '\u{200b}', '\u{feff}'] {
            let s = format!("a{c}b");
            assert_eq!(escape(&s), format!("a\\u{{{:x}}}b", c as u32), "{c:?}");
        }
        for s in ["é ü 漢字 🙂", "C:\\dir\\*.txt", "/data/\\*"] {
            assert_eq!(escape(s), s);
        }
        assert_eq!(escape("\u{e0041}"), "\\u{e0041}");
    }

    #[test]
    fn escaping_is_unambiguous() {
        assert_ne!(escape("\u{202e}"), escape("\\u{202e}"));
        assert_eq!(escape("\\u{202e}"), "\\u{5c}u{202e}");
    }

    #[test]
    fn keeping_lines_only_keeps_newlines() {
        assert_eq!(escape_keeping_lines("a\nb\r\u{202e}\\u{1}"), "a\nb\\u{d}\\u{202e}\\u{1}");
    }

    #[test]
    fn json_escapes_read_back() {
        let v = serde_json::json!({"k": "\u{202e}\u{7f}\u{e0041}\u{1b}x"});
        let text = serde_json::to_string_pretty(&v).unwrap();
        let shown = escape_json(&text);
        assert!(!shown.chars().any(|c| c != '\n' && is_hidden_or_control(c)), "{shown}");
        assert_eq!(serde_json::from_str::<serde_json::Value>(&shown).unwrap(), v);
    }
}
