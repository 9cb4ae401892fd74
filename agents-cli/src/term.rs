//! Everything the CLI prints goes through here: one escaping, from
//! [`agents_core::terminal`], for every field of every command.
//!
//! - [`esc`] for one field in text output (a table cell, a name in a sentence): control,
//!   bidirectional and invisible format characters, newlines included, become visible
//!   `\u{…}` escapes, so a field is one line of exactly what it holds;
//! - [`json`] for JSON output: the same characters as JSON `\uXXXX` escapes (still JSON);
//! - [`final_pass`] over the whole of standard output and standard error before they are
//!   written: whatever a print site missed is escaped there (only the program's own
//!   newlines pass).

use std::borrow::Cow;

/// One field for text output.
pub(crate) fn esc(s: &str) -> Cow<'_, str> {
    agents_core::terminal::escape(s)
}

/// A path for text output.
pub(crate) fn path(p: &std::path::Path) -> String {
    esc(&p.display().to_string()).into_owned()
}

/// A JSON value, pretty-printed, with every hidden or control character escaped.
pub(crate) fn json(value: &serde_json::Value) -> String {
    let text = serde_json::to_string_pretty(value).expect("JSON values serialize");
    agents_core::terminal::escape_json(&text).into_owned()
}

/// One line of JSON text (already JSON), with every hidden or control character escaped.
pub(crate) fn json_line(text: &str) -> Cow<'_, str> {
    agents_core::terminal::escape_json(text)
}

/// The last pass over a whole output: newlines kept, everything else flagged escaped.
pub(crate) fn final_pass(s: &str) -> Cow<'_, str> {
    agents_core::terminal::escape_keeping_lines(s)
}
