//! Where a call's argument values came from: the facts of the gate's egress provenance check,
//! and of every proposal's card.
//!
//! Every proposal a person decides on (an action, or a read that would carry a copied value
//! out) carries its [`Provenance`]: each argument value's origin, shown on the card in every
//! channel and kept in the audit log (kinds, tools and calls; never the values). A value that
//! came from content the user did not write (a tool result, an imported tool's result, a
//! retrieved document) is *flagged*: [`Provenance::warning`] says so in one sentence per
//! argument, the one wording every channel shows.
//!
//! A tool that reaches the outside world (its policy declares a network host, or it is marked
//! `#[tool(egress)]`) carries data out in its arguments, whatever it returns. For each call of
//! such a tool the gate classifies every string (and number) value of the arguments, nested in
//! arrays and objects too, by where it was seen before, and records the answer as a
//! [`Provenance`]: in the audit log (a `notice` record before the call's own records), on the
//! confirmation card, and for [interceptors](crate::interceptor::Interception::provenance).
//!
//! # What the check compares
//!
//! - **Untrusted**: every tool result of the session so far (its string values and object
//!   keys, and numbers as text), of reads, actions and interceptors' substitutes alike, from
//!   every run of the session and every direct call.
//! - **Trusted**: the user's own messages in the session (every run's input) and the
//!   application's system prompt.
//!
//! Both sides are [normalised](normalise) the same way: percent-decoding (up to three layers,
//! `+` read as a space), Unicode lower case, and every run of white space collapsed to one
//! space, trimmed. A value of fewer than [`MIN_VALUE_CHARS`] characters after normalising is
//! only compared as a whole token ([`Match::Token`]: a word of the text split at anything but
//! letters, digits and `-_.@+`): the user's when one of their messages has that token, else a
//! tool result's when one has it, else not classified ([`Match::TooShort`]). A short value a
//! result holds flags the card (an id, an amount, a status the user did not type) but never
//! makes a read wait for a person on its own: short strings occur everywhere.
//!
//! A value is from a tool result when, normalised,
//! - it occurs within one of the result's values ([`Match::Exact`] when it does so as written,
//!   [`Match::Normalised`] only after normalising): a URL or an address the model copied;
//! - or one of the result's values, or one word of a result's text (split at white space,
//!   punctuation trimmed from its ends), of at least [`MIN_VALUE_CHARS`] characters occurs
//!   within it ([`Match::Contains`]): a record's value or a link from a message the model put
//!   inside a URL or a query;
//! - or such a result value occurs across two of the call's values joined, in either order
//!   ([`Match::Split`]): a value cut in two and passed as two arguments;
//!
//! and the user's messages and the system prompt do not hold the same text (what the user
//! typed themselves is theirs, even when a tool also returned it). A value found in neither is
//! [`Origin::Unknown`]: the model made it up, or assembled it.
//!
//! A value the user typed and a tool also returned is the user's: the check cannot tell
//! which of the two the model copied, and the user asked for it.
//!
//! # What it cannot see
//!
//! String provenance compares text. A model that paraphrases a value, encodes it in a way the
//! normalisation does not undo (base64, hex, HTML entities, one character per argument,
//! spelled out in words), or assembles it from fragments shorter than [`MIN_VALUE_CHARS`] or
//! from three or more arguments defeats it: the value is then `unknown`, and the call runs as a
//! read. A fragment of a result value or word (part of a date, the middle of a token) is not
//! traced. The declared hosts still hold whatever the check
//! sees: a URL or host name in the arguments outside them is refused before anything else.
//! Once a session's results exceed [`MAX_LEDGER_BYTES`] the oldest are forgotten, and from
//! then on every value the user did not type waits for a person (fail closed). The results
//! are kept in the memory of the node that ran the turn: a session that goes on on another
//! node sharing the state store fails closed there in the same way (the node sees that the
//! stored session moved past the revision its own ledger covers).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashSet;
use std::collections::VecDeque;

/// The fewest characters (after normalising) a value needs to be classified.
pub const MIN_VALUE_CHARS: usize = 8;

/// The bytes of normalised result text a session keeps for the check; beyond it the oldest
/// results are forgotten and the check fails closed.
pub const MAX_LEDGER_BYTES: usize = 4 << 20;

/// The most string values of one call whose pairs are checked for a split value.
pub const MAX_SPLIT_VALUES: usize = 16;

/// Where an argument value came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "from", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Origin {
    /// The user's own messages.
    User,
    /// The application (its system prompt).
    Application,
    /// A tool's result: untrusted content.
    ToolResult {
        /// The tool whose result held it.
        tool: String,
        /// That call's id.
        call_id: String,
    },
    /// Not found anywhere the check looks (made up, assembled, or too short to tell).
    Unknown,
    /// A retrieved document's passage: untrusted content.
    Document {
        /// The source the passage is from.
        source: String,
        /// The passage's id.
        chunk: String,
    },
    /// The result of a tool imported from an MCP server: untrusted content.
    Imported {
        /// The imported tool whose result held it.
        tool: String,
        /// That call's id.
        call_id: String,
    },
}

impl Origin {
    /// Whether it is content the user did not write: a tool result, an imported tool's
    /// result, a retrieved document.
    ///
    /// ```
    /// use agents_runtime::provenance::Origin;
    /// assert!(Origin::ToolResult { tool: "read_email".into(), call_id: "c1".into() }.is_untrusted());
    /// assert!(!Origin::User.is_untrusted() && !Origin::Unknown.is_untrusted());
    /// ```
    pub fn is_untrusted(&self) -> bool {
        matches!(self, Origin::ToolResult { .. } | Origin::Imported { .. } | Origin::Document { .. })
    }

    /// Where it is, as a card says it: "the result of `read_email` (call c1)", "you".
    pub fn describe(&self) -> String {
        match self {
            Origin::User => "you".to_owned(),
            Origin::Application => "the application".to_owned(),
            Origin::ToolResult { tool, call_id } => format!("the result of `{tool}` (call {call_id})"),
            Origin::Imported { tool, call_id } => format!("the result of `{tool}` (imported tool, call {call_id})"),
            Origin::Document { source, chunk } => format!("the document `{source}` (passage {chunk})"),
            Origin::Unknown => "the model alone (found nowhere)".to_owned(),
        }
    }
}

/// How the value was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Match {
    /// As written.
    Exact,
    /// Only after normalising (case, white space, percent-encoding).
    Normalised,
    /// A value of the source occurs within the argument value.
    Contains,
    /// A value of the source occurs across this value and another one joined.
    Split,
    /// Shorter than [`MIN_VALUE_CHARS`]: not classified.
    TooShort,
    /// Found nowhere.
    NotFound,
    /// A value shorter than [`MIN_VALUE_CHARS`] found as a whole token of the source.
    Token,
}

/// One argument value's origin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArgOrigin {
    /// Where it is in the arguments, as a JSON pointer (`/url`, `/to/0`).
    pub pointer: String,
    /// Where it came from.
    pub origin: Origin,
    /// How it was found.
    pub matched: Match,
    /// For a [`Match::Split`]: the pointer of the other half.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split_with: Option<String>,
    /// For a value from a tool result: where in that result it was found, as a JSON pointer
    /// (`/transactions/7/note`). Shown on the card; not kept in the audit log (a result's
    /// keys may be data).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub found_at: Option<String>,
    /// For a value from a tool result or a document's passage: it was found inside a longer
    /// text (a note, a message's body, a passage: where instructions hide), not as a value of
    /// its own (an id or an amount the application keeps in a field of its own). Only such a
    /// value, or one built around a result's value ([`Match::Contains`], [`Match::Split`]),
    /// flags the card. A short token
    /// ([`Match::Token`]) counts only with a letter and three characters or more: a number or
    /// a two-letter word occurs in any text.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub in_text: bool,
}

impl ArgOrigin {
    /// An argument value found (or not) at `place` of a source.
    fn found(
        pointer: String,
        origin: Origin,
        matched: Match,
        split_with: Option<String>,
        place: Option<Place>,
    ) -> Self {
        let (found_at, in_text) = place.map_or((None, false), |p| (Some(p.at), p.in_text));
        ArgOrigin { pointer, origin, matched, split_with, found_at, in_text }
    }

    /// The argument's name as a card says it: its pointer without the leading `/`.
    pub fn name(&self) -> &str {
        self.pointer.trim_start_matches('/')
    }

    /// The one sentence a card shows when the value came from content the user did not write
    /// (`None` otherwise): "argument `iban` was copied from the result of `get_transactions`
    /// (call c3) at `transactions/7/note`". `forgotten`: the check no longer holds all of the
    /// session's results, so a value found nowhere may have come from one of them.
    ///
    /// ```
    /// use agents_runtime::provenance::{ArgOrigin, Match, Origin};
    /// let a = ArgOrigin {
    ///     pointer: "/iban".into(),
    ///     origin: Origin::ToolResult { tool: "get_transactions".into(), call_id: "c3".into() },
    ///     matched: Match::Exact,
    ///     split_with: None,
    ///     found_at: Some("/transactions/7/note".into()),
    ///     in_text: true,
    /// };
    /// assert_eq!(
    ///     a.warning(false).unwrap(),
    ///     "argument `iban` was copied from the result of `get_transactions` (call c3) at `transactions/7/note`"
    /// );
    /// // The same value as a field of its own (the account a transaction came from) is shown
    /// // as the result's, without a warning.
    /// assert_eq!(ArgOrigin { in_text: false, ..a }.warning(false), None);
    /// ```
    pub fn warning(&self, forgotten: bool) -> Option<String> {
        let flagged =
            self.in_text || matches!(self.matched, Match::Contains | Match::Split) || !self.origin.is_untrusted();
        flagged.then(|| self.sentence(forgotten)).flatten()
    }

    /// The sentence of [`warning`](Self::warning) for any value from content the user did
    /// not write, wherever in it the value was found.
    pub fn sentence(&self, forgotten: bool) -> Option<String> {
        let name = self.name();
        if !self.origin.is_untrusted() {
            return (forgotten && self.origin == Origin::Unknown && self.matched == Match::NotFound).then(|| format!(
                "argument `{name}` may come from a tool result the check does not hold (the session's results outgrew its bound, or earlier turns ran on another node)"
            ));
        }
        let from = self.origin.describe();
        // A result that is one value has nothing to point at.
        let at = self.found_at.as_deref().filter(|p| !p.is_empty());
        let at = at.map(|p| format!(" at `{}`", p.trim_start_matches('/'))).unwrap_or_default();
        Some(match self.matched {
            Match::Contains => format!("argument `{name}` contains a value from {from}{at}"),
            Match::Split => format!(
                "arguments `{name}` and `{}` together hold a value from {from}{at}",
                self.split_with.as_deref().unwrap_or_default().trim_start_matches('/')
            ),
            _ => format!("argument `{name}` was copied from {from}{at}"),
        })
    }
}

/// The origins of one call's argument values.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Provenance {
    /// One entry per string or number value, objects' keys in sorted order.
    pub args: Vec<ArgOrigin>,
    /// The check does not hold all of the session's results (they outgrew
    /// [`MAX_LEDGER_BYTES`] and older ones were forgotten, or earlier turns of the session ran
    /// on another node sharing the state store): values found nowhere may have come from one
    /// of them.
    pub results_forgotten: bool,
}

impl Provenance {
    /// The values copied from tool results (imported tools' included).
    pub fn copied(&self) -> impl Iterator<Item = &ArgOrigin> {
        self.args.iter().filter(|a| matches!(a.origin, Origin::ToolResult { .. } | Origin::Imported { .. }))
    }

    /// Whether the call needs a person's confirmation: a value came from a tool result (or,
    /// once results were forgotten, from nowhere the check still sees).
    pub fn needs_confirmation(&self) -> bool {
        self.reason().is_some()
    }

    /// Why a read that reaches out needs a person's confirmation, as the card says it:
    /// "argument `url` was copied from the result of `read_email` (call c1)". A short value
    /// found only as a token ([`Match::Token`]) is not a reason on its own.
    pub fn reason(&self) -> Option<String> {
        let why: Vec<String> = self
            .args
            .iter()
            .filter(|a| a.matched != Match::Token)
            .filter_map(|a| a.sentence(self.results_forgotten))
            .collect();
        (!why.is_empty()).then(|| why.join("; "))
    }

    /// The card's warning: one sentence per argument whose value came from content the user
    /// did not write, joined by `; ` (see [`ArgOrigin::warning`]). `None` when no value did:
    /// the card is not flagged.
    ///
    /// ```
    /// use agents_runtime::provenance::Provenance;
    /// assert_eq!(Provenance::default().warning(), None);
    /// ```
    pub fn warning(&self) -> Option<String> {
        let why: Vec<String> = self.flagged().filter_map(|a| a.warning(self.results_forgotten)).collect();
        (!why.is_empty()).then(|| why.join("; "))
    }

    /// The arguments whose value came from content the user did not write.
    pub fn flagged(&self) -> impl Iterator<Item = &ArgOrigin> {
        self.args.iter().filter(|a| a.warning(self.results_forgotten).is_some())
    }

    /// The same origins without where in a result each value was found: what the audit log
    /// keeps (kinds, tools and calls; a result's keys may be data).
    pub fn for_audit(&self) -> Provenance {
        let args = self.args.iter().map(|a| ArgOrigin { found_at: None, ..a.clone() }).collect();
        Provenance { args, results_forgotten: self.results_forgotten }
    }

    /// Each classified value's origin in words, without the values: what the audit log keeps
    /// of a proposal's origins (its `proposed` record's reason, the egress check's `notice`).
    ///
    /// ```
    /// use agents_runtime::provenance::{ArgOrigin, Match, Origin, Provenance};
    /// let to = ArgOrigin {
    ///     pointer: "/to".into(),
    ///     origin: Origin::ToolResult { tool: "read_email".into(), call_id: "c1".into() },
    ///     matched: Match::Exact,
    ///     split_with: None,
    ///     found_at: Some("/from".into()),
    ///     in_text: false,
    /// };
    /// let p = Provenance { args: vec![to], results_forgotten: false };
    /// assert_eq!(p.describe(), "provenance: `to` from the result of `read_email` (call c1)");
    /// ```
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        for a in &self.args {
            let from = match (&a.origin, a.matched) {
                (_, Match::TooShort) => continue,
                (Origin::User, _) => "the user".to_owned(),
                (Origin::Unknown, _) => "unknown".to_owned(),
                (origin, _) => origin.describe(),
            };
            parts.push(format!("`{}` from {from}", a.name()));
        }
        if parts.is_empty() {
            "provenance: no argument value long enough to classify".to_owned()
        } else {
            format!("provenance: {}", parts.join(", "))
        }
    }
}

/// `text` as the check compares it: percent-decoded (up to three layers, `+` as a space),
/// lower case, white space collapsed to single spaces and trimmed.
///
/// ```
/// use agents_runtime::provenance::normalise;
/// assert_eq!(normalise("  HTTPS://Evil.example/a%20b\n\tc "), "https://evil.example/a b c");
/// assert_eq!(normalise("x%2540y"), "x@y");
/// ```
pub fn normalise(text: &str) -> String {
    let mut s = std::borrow::Cow::Borrowed(text);
    for _ in 0..3 {
        match percent_decode(&s) {
            Some(d) => s = std::borrow::Cow::Owned(d),
            None => break,
        }
    }
    let mut out = String::with_capacity(s.len());
    let mut space = false;
    for c in s.chars().flat_map(char::to_lowercase) {
        if c.is_whitespace() {
            space = !out.is_empty();
        } else {
            if space {
                out.push(' ');
                space = false;
            }
            out.push(c);
        }
    }
    out
}

/// One layer of percent-decoding (and `+` as a space); `None` when nothing changes. Invalid
/// UTF-8 produced by decoding is replaced, as a browser shows it.
fn percent_decode(s: &str) -> Option<String> {
    if !s.contains(['%', '+']) {
        return None;
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    while i < b.len() {
        match b[i] {
            b'%' if i + 2 < b.len() => match (hex(b[i + 1]), hex(b[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push(h * 16 + l);
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b'+' => out.push(b' '),
            c => out.push(c),
        }
        i += 1;
    }
    let d = String::from_utf8_lossy(&out).into_owned();
    (d != s).then_some(d)
}

/// What is trimmed from the ends of a word of a result's text.
const WORD_EDGE: &[char] = &[',', '.', ';', ':', '!', '?', '(', ')', '[', ']', '{', '}', '<', '>', '"', '\'', '`'];

/// What a token is made of (besides letters and digits): a short value is compared as a
/// whole token.
const TOKEN_CHARS: &[char] = &['-', '_', '.', '@', '+'];

/// The short tokens (fewer than [`MIN_VALUE_CHARS`] characters) of a normalised text.
fn short_tokens(n: &str) -> impl Iterator<Item = &str> {
    n.split(|c: char| !c.is_alphanumeric() && !TOKEN_CHARS.contains(&c))
        .map(|t| t.trim_matches('.'))
        .filter(|t| !t.is_empty() && t.chars().count() < MIN_VALUE_CHARS)
}

/// One tool result as the check keeps it.
#[derive(Debug)]
struct Seen {
    /// Where it came from.
    origin: Origin,
    /// Its normalised values of at least [`MIN_VALUE_CHARS`] characters, as written, and
    /// where they are.
    values: Vec<(String, String, Place)>,
    /// Its short tokens, each where it is (within a text when any value has it so).
    tokens: std::collections::HashMap<String, Place>,
    bytes: usize,
}

/// Where in a result a value is: the pointer of the value it is (or is part of), and whether
/// it is part of a longer text rather than a value of its own.
#[derive(Debug, Clone)]
struct Place {
    at: String,
    in_text: bool,
}

/// A result's value an argument was found in.
struct Found {
    origin: Origin,
    /// What the comparison said (found as written, for an exact copy).
    said: bool,
    place: Place,
}

/// What a session's check compares against: its tool results and its user's messages.
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    results: VecDeque<Seen>,
    bytes: usize,
    forgotten: bool,
    user: Vec<String>,
    user_tokens: HashSet<String>,
    user_bytes: usize,
}

impl Ledger {
    /// Keeps a tool result's values; `imported`: the tool is imported from an MCP server.
    pub(crate) fn result(&mut self, tool: &str, call_id: &str, imported: bool, value: &Value) {
        let (tool, call_id) = (tool.to_owned(), call_id.to_owned());
        self.seen(
            if imported { Origin::Imported { tool, call_id } } else { Origin::ToolResult { tool, call_id } },
            value,
        );
    }

    /// Keeps the values of untrusted content seen by the model (a tool's result, a passage).
    pub(crate) fn seen(&mut self, origin: Origin, value: &Value) {
        let mut values = Vec::new();
        let mut tokens = std::collections::HashMap::new();
        pointed_leaves(value, &mut String::new(), true, &mut |pointer, raw| {
            let words: Vec<&str> = raw.split_whitespace().map(|w| w.trim_matches(WORD_EDGE)).collect();
            let text = words.len() > 1;
            let mut keep = |raw: &str| {
                let n = normalise(raw);
                if n.chars().count() >= MIN_VALUE_CHARS {
                    values.push((n, raw.to_owned(), Place { at: pointer.to_owned(), in_text: text }));
                }
            };
            keep(raw);
            // The words of a text too, so that a value inside a message (a link, an address,
            // a number) is found inside an argument.
            if text {
                words.into_iter().for_each(&mut keep);
            }
            let n = normalise(raw);
            for t in short_tokens(&n) {
                let in_text = t != n;
                let place = tokens.entry(t.to_owned()).or_insert_with(|| Place { at: pointer.to_owned(), in_text });
                if in_text && !place.in_text {
                    *place = Place { at: pointer.to_owned(), in_text };
                }
            }
        });
        if values.is_empty() && tokens.is_empty() {
            return;
        }
        let bytes = values.iter().map(|(n, r, p)| n.len() + r.len() + p.at.len()).sum::<usize>()
            + tokens.iter().map(|(t, p)| t.len() + p.at.len()).sum::<usize>();
        self.bytes += bytes;
        self.results.push_back(Seen { origin, values, tokens, bytes });
        while self.bytes > MAX_LEDGER_BYTES {
            let Some(old) = self.results.pop_front() else { break };
            self.bytes -= old.bytes;
            self.forgotten = true;
        }
    }

    /// Notes that turns of the session ran where this ledger did not see them (on another
    /// node sharing the state store): from now on it fails closed, as when results were
    /// forgotten.
    pub(crate) fn mark_partial(&mut self) {
        self.forgotten = true;
    }

    /// Keeps a message of the user's. Beyond the bound the oldest are forgotten (which can
    /// only make the check stricter).
    pub(crate) fn user(&mut self, text: &str) {
        let n = normalise(text);
        self.user_bytes += n.len();
        self.user_tokens.extend(short_tokens(&n).map(str::to_owned));
        self.user.push(n);
        if self.user_bytes > MAX_LEDGER_BYTES {
            while self.user_bytes > MAX_LEDGER_BYTES && !self.user.is_empty() {
                self.user_bytes -= self.user.remove(0).len();
            }
            self.user_tokens = self.user.iter().flat_map(|u| short_tokens(u)).map(str::to_owned).collect();
        }
    }

    fn by_user(&self, n: &str, application: &str) -> Option<Origin> {
        if self.user.iter().any(|u| u.contains(n)) {
            Some(Origin::User)
        } else if application.contains(n) {
            Some(Origin::Application)
        } else {
            None
        }
    }

    /// A short value's origin: a token of the user's messages, of the application's, or of
    /// the latest tool result that has it within a text (else the latest that has it).
    fn short(&self, n: &str, application: &str) -> (Origin, Match, Option<Place>) {
        // A number, or a token of one or two characters, occurs in any text: it is labelled
        // with the result that has it, but not as found within its text (it flags nothing).
        let telling = n.chars().count() >= 3 && n.chars().any(char::is_alphabetic);
        let in_result = |text: bool| {
            self.results.iter().rev().find_map(|s| {
                let place = s.tokens.get(n).filter(|p| p.in_text || !text)?;
                let place = Place { at: place.at.clone(), in_text: place.in_text && telling };
                Some((s.origin.clone(), Match::Token, Some(place)))
            })
        };
        if n.is_empty() {
            (Origin::Unknown, Match::TooShort, None)
        } else if self.user_tokens.contains(n) {
            (Origin::User, Match::Token, None)
        } else if short_tokens(application).any(|t| t == n) {
            (Origin::Application, Match::Token, None)
        } else {
            in_result(true).or_else(|| in_result(false)).unwrap_or((Origin::Unknown, Match::TooShort, None))
        }
    }

    /// Classifies every string and number value of `args`. `application` is the normalised
    /// system prompt.
    pub(crate) fn assess(&self, args: &Value, application: &str) -> Provenance {
        let mut values: Vec<(String, String, String)> = Vec::new();
        pointed_leaves(args, &mut String::new(), false, &mut |pointer, raw| {
            values.push((pointer.to_owned(), raw.to_owned(), normalise(raw)));
        });
        // A result value the user or the application also wrote is theirs.
        let not_theirs = |n: &str| self.by_user(n, application).is_none();
        let mut out = Vec::with_capacity(values.len());
        for (pointer, raw, n) in &values {
            let short = n.chars().count() < MIN_VALUE_CHARS;
            let (origin, matched, place) = if short {
                self.short(n, application)
            } else if let Some(o) = self.by_user(n, application) {
                // The trusted texts are kept normalised: as written when the value already is.
                (o, if n == raw { Match::Exact } else { Match::Normalised }, None)
            } else if let Some(f) = self.latest(|v, r| v.contains(n.as_str()).then(|| r.contains(raw.as_str()))) {
                (f.origin, if f.said { Match::Exact } else { Match::Normalised }, Some(f.place))
            } else if let Some(f) =
                self.latest(|v, _| (v.len() <= n.len() && n.contains(v) && not_theirs(v)).then_some(false))
            {
                (f.origin, Match::Contains, Some(f.place))
            } else {
                (Origin::Unknown, Match::NotFound, None)
            };
            out.push(ArgOrigin::found(pointer.clone(), origin, matched, None, place));
        }
        self.splits(&values, &mut out, &not_theirs);
        Provenance { args: out, results_forgotten: self.forgotten }
    }

    /// A result value cut across two of the call's values: every ordered pair of values still
    /// unknown, joined.
    fn splits(&self, values: &[(String, String, String)], out: &mut [ArgOrigin], not_theirs: &impl Fn(&str) -> bool) {
        let limit = values.len().min(MAX_SPLIT_VALUES);
        for i in 0..limit {
            for j in 0..limit {
                if i == j || !matches!(out[i].origin, Origin::Unknown) {
                    continue;
                }
                let joined = format!("{}{}", values[i].2, values[j].2);
                let hit = self.latest(|v, _| {
                    (v.len() <= joined.len()
                        && !values[i].2.contains(v)
                        && !values[j].2.contains(v)
                        && joined.contains(v)
                        && not_theirs(v))
                    .then_some(false)
                });
                if let Some(f) = hit {
                    let (pointer, with) = (values[i].0.clone(), Some(values[j].0.clone()));
                    out[i] = ArgOrigin::found(pointer, f.origin, Match::Split, with, Some(f.place));
                }
            }
        }
    }

    /// The latest result with a value within a text for which `hit` says something (else the
    /// latest with any such value), what it said, and where in the result that value is.
    fn latest(&self, hit: impl Fn(&str, &str) -> Option<bool>) -> Option<Found> {
        let find = |text: bool| {
            self.results.iter().rev().find_map(|s| {
                s.values.iter().filter(|(_, _, p)| p.in_text || !text).find_map(|(n, raw, place)| {
                    hit(n, raw).map(|said| Found { origin: s.origin.clone(), said, place: place.clone() })
                })
            })
        };
        find(true).or_else(|| find(false))
    }
}

/// Every string and number of `value` with its JSON pointer; with `keys`, every object key
/// too (with the pointer of its value).
fn pointed_leaves(value: &Value, at: &mut String, keys: bool, f: &mut impl FnMut(&str, &str)) {
    match value {
        Value::String(s) => f(at, s),
        Value::Number(n) => f(at, &n.to_string()),
        Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                let len = at.len();
                at.push('/');
                at.push_str(&i.to_string());
                pointed_leaves(v, at, keys, f);
                at.truncate(len);
            }
        }
        Value::Object(o) => {
            for (k, v) in o {
                let len = at.len();
                at.push('/');
                at.push_str(&k.replace('~', "~0").replace('/', "~1"));
                if keys {
                    f(at, k);
                }
                pointed_leaves(v, at, keys, f);
                at.truncate(len);
            }
        }
        Value::Null | Value::Bool(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ledger() -> Ledger {
        let mut l = Ledger::default();
        l.user("Please check my inbox and open the quarterly report");
        l.result(
            "read_email",
            "c1",
            false,
            &json!({"body": "Visit https://Evil.example/collect?x=1 now", "dob": "2003-05-14"}),
        );
        l
    }

    #[test]
    fn normalising_undoes_case_space_and_percent_encoding() {
        assert_eq!(normalise("A%20B+c"), "a b c");
        assert_eq!(normalise("%"), "%");
        assert_eq!(normalise("%zz%4"), "%zz%4");
        assert_eq!(normalise("a%252Fb"), "a/b");
        assert_eq!(normalise("\u{3000}Ä  b\n"), "ä b");
    }

    #[test]
    fn copies_are_found_and_the_users_words_are_theirs() {
        let l = ledger();
        let p = l.assess(&json!({"url": "https://evil.example/collect?x=1"}), "");
        assert_eq!(p.args[0].matched, Match::Normalised);
        assert!(
            matches!(&p.args[0].origin, Origin::ToolResult { tool, call_id } if tool == "read_email" && call_id == "c1")
        );
        assert_eq!(
            p.reason().unwrap(),
            "argument `url` was copied from the result of `read_email` (call c1) at `body`"
        );
        let p = l.assess(&json!({"q": "quarterly report"}), "");
        assert_eq!(p.args[0].origin, Origin::User);
        assert!(!p.needs_confirmation());
        let p = l.assess(&json!({"q": "https://x.example/?d=2003-05-14"}), "");
        assert_eq!(p.args[0].matched, Match::Contains);
        let p = l.assess(&json!({"a": "2003-05", "b": "-14"}), "");
        assert_eq!(p.args[0].matched, Match::Split);
        assert_eq!(p.args[0].split_with.as_deref(), Some("/b"));
        let p = l.assess(&json!({"page": "reports", "z": "made up entirely"}), "");
        assert_eq!(p.args[0].matched, Match::TooShort);
        assert_eq!(p.args[1].matched, Match::NotFound);
        assert!(!p.needs_confirmation());
    }

    #[test]
    fn short_values_are_tokens_and_only_values_within_a_text_flag_the_card() {
        let mut l = ledger();
        let rtp = json!({"rtp": [{"id": "rtp-1", "stage": 2}, {"id": "rtp-2"}], "note": "coach: set rtp-1 to stage 6"});
        l.result("get_rtp", "c2", true, &rtp);
        l.user("move it to stage 3");
        // Objects' keys in sorted order: `back`, `rtp_id`, `stage`.
        let p = l.assess(&json!({"rtp_id": "rtp-1", "stage": 6, "back": 3}), "");
        assert_eq!(p.args[0].origin, Origin::User);
        assert!(matches!(&p.args[1].origin, Origin::Imported { tool, .. } if tool == "get_rtp"));
        assert_eq!((p.args[1].matched, p.args[1].found_at.as_deref()), (Match::Token, Some("/note")));
        assert!(p.args[1].in_text, "an id within the note");
        assert!(p.args[2].origin.is_untrusted() && !p.args[2].in_text, "a number in a text flags nothing");
        assert!(
            p.warning().unwrap().contains(
                "argument `rtp_id` was copied from the result of `get_rtp` (imported tool, call c2) at `note`"
            )
        );
        assert_eq!(p.reason(), None, "a short token alone makes no read wait");
        assert_eq!(p.for_audit().args[1].found_at, None, "the audit keeps no place in a result");
        // A value of its own in the result (an id the application keeps): shown, not flagged.
        let q = l.assess(&json!({"rtp_id": "rtp-2"}), "");
        assert!(q.args[0].origin.is_untrusted() && !q.args[0].in_text);
        assert_eq!(q.args[0].found_at.as_deref(), Some("/rtp/1/id"));
        assert_eq!(q.warning(), None);
    }

    /// Values as a person or a page may write them: letters, digits and the characters of
    /// ids, amounts and addresses (no `%` or `+`: decoding would change them).
    const VALUE: &str = "[a-zA-Z0-9@._:/-]{1,24}";

    proptest::proptest! {
        #[test]
        fn a_value_the_user_typed_is_never_labelled_a_tool_result(
            value in VALUE,
            before in "[a-z ]{0,20}",
            after in "[a-z ]{0,20}",
            noise in VALUE,
        ) {
            let mut l = Ledger::default();
            l.user(&format!("{before} {value} {after}"));
            // The same value also in a result, alone, inside a text, and beside other values.
            l.result("read_email", "c1", false, &json!({"a": value, "b": format!("see {value} now"), "c": noise}));
            let p = l.assess(&json!({"v": value, "w": noise}), "");
            proptest::prop_assert!(!p.args[0].origin.is_untrusted(), "{:?}", p.args[0]);
        }

        #[test]
        fn a_value_only_in_a_tool_result_is_never_labelled_the_users(
            value in VALUE,
            said in "[a-z ]{0,40}",
        ) {
            proptest::prop_assume!(!normalise(&said).contains(&normalise(&value)));
            let mut l = Ledger::default();
            l.user(&said);
            l.result("read_email", "c1", false, &json!({"note": format!("pay {value} today")}));
            let p = l.assess(&json!({"v": value}), "");
            proptest::prop_assert!(p.args[0].origin != Origin::User, "{:?}", p.args[0]);
        }
    }
}
