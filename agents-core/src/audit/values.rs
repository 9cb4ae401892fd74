//! How much of a call's values an audit record keeps ([`AuditValues`]), and the shape of an
//! omitted argument: the argument's name with a keyed digest of its value.
//!
//! By default ([`AuditValues::Omitted`]) a record keeps the names of a call's arguments and,
//! for each, `{"hmac_sha256": "<hex>"}`: HMAC-SHA-256 under the runtime's server key of
//! `value:` followed by the value's canonical JSON (the value as the masked record would have
//! held it, so a secret's digest is the digest of the mask). The result is kept as its keyed
//! digest too. An auditor who holds a value and the key can check that a record names it; a
//! reader of the log alone cannot recover it, and cannot confirm a guess either: an unkeyed
//! SHA-256 of a date of birth is found by hashing the forty thousand dates of a century, a
//! keyed digest is not without the key.
//!
//! ```
//! use agents_core::audit::{AuditValues, omit_args, values_omitted};
//! use serde_json::json;
//!
//! use sha2::Digest;
//!
//! // The runtime's `mac` is HMAC-SHA-256 under its server key.
//! let mac = |text: &[u8]| -> [u8; 32] { sha2::Sha256::digest(text).into() };
//! let kept = omit_args(&json!({"athlete_id": "ath-104", "grade": 1}), mac);
//! assert!(values_omitted(&kept));
//! assert!(kept["athlete_id"]["hmac_sha256"].is_string());
//! assert!(!kept.to_string().contains("ath-104"));
//! assert_eq!(omit_args(&kept, mac), kept, "omitting twice changes nothing");
//!
//! assert_eq!(AuditValues::default(), AuditValues::Omitted);
//! assert!(AuditValues::Omitted < AuditValues::Masked && AuditValues::Masked < AuditValues::Full);
//! assert_eq!("masked".parse::<AuditValues>(), Ok(AuditValues::Masked));
//! ```

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;

/// How much of a call's argument and result values the audit records keep. Ordered from the
/// least kept to the most: a setting can always be narrowed (towards [`AuditValues::Omitted`]),
/// and widening it is a change a reviewer sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditValues {
    /// The arguments' names, each with a keyed digest of its value; the result's keyed digest.
    /// No value of a call is in the log (the default).
    #[default]
    Omitted,
    /// The arguments' values, those at secret positions masked; the result's keyed digest.
    Masked,
    /// The arguments as [`AuditValues::Masked`] keeps them, and the result's value (secret
    /// values masked in it too).
    Full,
}

impl AuditValues {
    /// Every setting, from the least kept to the most.
    pub const ALL: [AuditValues; 3] = [AuditValues::Omitted, AuditValues::Masked, AuditValues::Full];

    /// The snake_case name (`omitted`, `masked`, `full`).
    pub fn as_str(self) -> &'static str {
        match self {
            AuditValues::Omitted => "omitted",
            AuditValues::Masked => "masked",
            AuditValues::Full => "full",
        }
    }

    /// What the audit records keep under this setting, in one line (a manifest report's row).
    pub fn meaning(self) -> &'static str {
        match self {
            AuditValues::Omitted => {
                "omitted: records keep each argument's name with a keyed digest of its value, and the result's keyed digest; no value of a call"
            }
            AuditValues::Masked => {
                "masked: records keep the argument values (secrets masked) and the result's keyed digest"
            }
            AuditValues::Full => {
                "full: records keep the argument values and the result's value (secrets masked in both)"
            }
        }
    }

    /// Whether an agent that declares this setting lets a runtime run it under `used`: a
    /// runtime may keep as much as the agent declares or less, never more.
    pub fn admits(self, used: AuditValues) -> bool {
        used <= self
    }

    /// Whether it is [`AuditValues::Omitted`] (the default, left out of a manifest).
    pub fn is_omitted(&self) -> bool {
        *self == AuditValues::Omitted
    }

    /// The narrower of two settings: what a runtime keeps of an agent's calls when both the
    /// agent and the runtime say (neither can widen the other).
    pub fn narrowed_to(self, other: AuditValues) -> AuditValues {
        self.min(other)
    }
}

impl fmt::Display for AuditValues {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for AuditValues {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        AuditValues::ALL
            .into_iter()
            .find(|v| v.as_str() == s)
            .ok_or_else(|| format!("unknown audit values setting `{s}`; use one of: omitted, masked, full"))
    }
}

/// The member of an omitted value's object: `{"hmac_sha256": "<64 lowercase hex digits>"}`.
pub const DIGEST_MEMBER: &str = "hmac_sha256";

/// The text that stands for an argument's value in a record's texts (a reason) once values are
/// omitted.
pub const OMITTED: &str = "[omitted]";

/// Whether `value` is an omitted value: `{"hmac_sha256": "<64 lowercase hex digits>"}`.
pub fn is_value_digest(value: &Value) -> bool {
    match value {
        Value::Object(map) if map.len() == 1 => match map.get(DIGEST_MEMBER) {
            Some(Value::String(hex)) => {
                hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            }
            _ => false,
        },
        _ => false,
    }
}

/// Whether a record's `args` hold no value: an object of at least one argument, each a keyed
/// digest ([`omit_args`]). The arguments of a record written with values
/// ([`AuditValues::Masked`] or [`AuditValues::Full`], or before the setting existed) are not.
pub fn values_omitted(args: &Value) -> bool {
    match args {
        Value::Object(map) => !map.is_empty() && map.values().all(is_value_digest),
        _ => false,
    }
}

/// `args` with each argument's value replaced by its keyed digest: `mac` is given `value:`
/// followed by the value's canonical JSON. Arguments that are not an object (no tool takes
/// such) become one digest under the name `value`. Arguments already omitted are returned
/// as they are, so a record written again (a resumption's) is not digested twice.
pub fn omit_args(args: &Value, mac: impl Fn(&[u8]) -> [u8; 32]) -> Value {
    if values_omitted(args) {
        return args.clone();
    }
    // One buffer for every argument's `value:` text, grown once (each call's record has one).
    let mut text = String::with_capacity(64);
    let mut digest = |v: &Value| {
        text.clear();
        text.push_str("value:");
        crate::canonical::write_to(v, &mut text);
        let mut map = Map::new();
        map.insert(DIGEST_MEMBER.to_owned(), Value::String(crate::canonical::digest_hex(&mac(text.as_bytes()))));
        Value::Object(map)
    };
    match args {
        Value::Object(map) => {
            // Inserted in the map's own (sorted) order: no list collected and sorted again.
            let mut omitted = Map::new();
            for (k, v) in map {
                omitted.insert(k.clone(), digest(v));
            }
            Value::Object(omitted)
        }
        Value::Null => Value::Null,
        other => {
            let mut map = Map::new();
            map.insert("value".to_owned(), digest(other));
            Value::Object(map)
        }
    }
}

/// The shortest value (bytes of its text) [`omit_in_text`] replaces: shorter ones (a grade
/// `1`, a flag) would replace the same characters in ordinary words.
pub const MIN_OMITTED_BYTES: usize = 4;

/// `text` (a record's reason: a tool's error, a refusal) with every string or number value of
/// `args` at least [`MIN_OMITTED_BYTES`] long replaced by [`OMITTED`], longer values first.
///
/// ```
/// use agents_core::audit::omit_in_text;
/// use serde_json::json;
///
/// let args = json!({"athlete_id": "ath-101", "grade": 1});
/// assert_eq!(omit_in_text("not found: athlete ath-101", &args), "not found: athlete [omitted]");
/// ```
pub fn omit_in_text(text: &str, args: &Value) -> String {
    let mut values = Vec::new();
    leaves(args, &mut values);
    values.retain(|v| v.len() >= MIN_OMITTED_BYTES);
    values.sort_by_key(|v| std::cmp::Reverse(v.len()));
    values.dedup();
    let mut out = text.to_owned();
    for v in values {
        if out.contains(v.as_str()) {
            out = out.replace(v.as_str(), OMITTED);
        }
    }
    out
}

/// The string and number leaves of `value`, as text.
fn leaves(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) => out.push(s.clone()),
        Value::Number(n) => out.push(n.to_string()),
        Value::Array(items) => items.iter().for_each(|v| leaves(v, out)),
        Value::Object(map) => map.values().for_each(|v| leaves(v, out)),
        Value::Bool(_) | Value::Null => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn mac(text: &[u8]) -> [u8; 32] {
        use sha2::Digest;
        sha2::Sha256::digest(text).into()
    }

    #[test]
    fn every_value_is_replaced_and_every_name_kept() {
        let args = json!({"name": "Jane Doe", "dob": "1990-04-01", "notes": {"a": ["x"]}, "n": 17.5});
        let kept = omit_args(&args, mac);
        let text = kept.to_string();
        for value in ["Jane Doe", "1990-04-01", "17.5", "\"x\""] {
            assert!(!text.contains(value), "{value} in {text}");
        }
        let names: Vec<&String> = kept.as_object().unwrap().keys().collect();
        assert_eq!(names, ["dob", "n", "name", "notes"]);
        assert!(values_omitted(&kept));
        assert!(!values_omitted(&args));
    }

    #[test]
    fn the_digest_is_of_the_value_and_changes_with_it() {
        let a = omit_args(&json!({"dob": "1990-04-01"}), mac);
        let b = omit_args(&json!({"dob": "1990-04-02"}), mac);
        assert_ne!(a, b);
        let expected = crate::canonical::digest_hex(&mac(b"value:\"1990-04-01\""));
        assert_eq!(a["dob"][DIGEST_MEMBER], expected);
    }

    #[test]
    fn only_the_exact_shape_reads_as_omitted() {
        assert!(!values_omitted(&json!({})));
        assert!(!values_omitted(&json!({"a": {"hmac_sha256": "ab"}})));
        assert!(!values_omitted(&json!({"a": {"hmac_sha256": "A".repeat(64)}})));
        assert!(!values_omitted(&json!({"a": {"hmac_sha256": "a".repeat(64), "b": 1}})));
        assert!(values_omitted(&json!({"a": {"hmac_sha256": "a".repeat(64)}})));
        assert!(!values_omitted(&json!("x")));
    }

    #[test]
    fn texts_lose_the_values_but_not_short_words() {
        let args = json!({"id": "ath-104", "grade": 1, "note": "tight", "code": 4821});
        assert_eq!(omit_in_text("ath-104 grade 1: tight (4821)", &args), "[omitted] grade 1: [omitted] ([omitted])");
    }

    #[test]
    fn settings_parse_order_and_narrow() {
        for v in AuditValues::ALL {
            assert_eq!(v.as_str().parse::<AuditValues>(), Ok(v));
            assert_eq!(serde_json::to_value(v).unwrap(), json!(v.as_str()));
        }
        assert!("everything".parse::<AuditValues>().unwrap_err().contains("omitted, masked, full"));
        assert_eq!(AuditValues::Full.narrowed_to(AuditValues::Omitted), AuditValues::Omitted);
        assert_eq!(AuditValues::Masked.narrowed_to(AuditValues::Full), AuditValues::Masked);
    }
}
