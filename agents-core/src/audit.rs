//! Audit records: append-only, event-sourced, hash-chained.
//!
//! Each status change of a tool call is a new record. Every record carries the hash of the
//! previous one, so a verifier can detect an edited, deleted, reordered or inserted record,
//! and the agent's `MANIFEST_SHA256`, so a record joins back to the reviewed manifest.

use crate::tool::Tier;
use crate::{SharedStr, SharedValue};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

/// The `prev_hash` of the first record of a chain.
pub const GENESIS_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditStatus {
    /// A run started (the availability snapshot is in `result`).
    RunStarted,
    /// A run ended (the outcome is in `reason`).
    RunFinished,
    /// A call was accepted by the gate and is about to run or to wait for a person.
    Proposed,
    /// A person approved the exact arguments.
    Confirmed,
    /// The tool ran and returned.
    Executed,
    /// The tool ran and failed, or a check after approval failed.
    Failed,
    /// A person declined.
    Rejected,
    /// No decision in time, or the run was stopped.
    Skipped,
    /// Refused before anything ran: unknown or unavailable name, bad arguments, an
    /// interceptor's deny, a refused token.
    Denied,
    /// A handoff tool's call became a record for a human queue.
    HandedOff,
    /// An interceptor replaced the arguments.
    Modified,
    /// An interceptor answered in place of the tool.
    Substituted,
    /// Something the record must show that is not a call: a fallback, a budget halt.
    Notice,
}

impl AuditStatus {
    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            AuditStatus::RunStarted => "run_started",
            AuditStatus::RunFinished => "run_finished",
            AuditStatus::Proposed => "proposed",
            AuditStatus::Confirmed => "confirmed",
            AuditStatus::Executed => "executed",
            AuditStatus::Failed => "failed",
            AuditStatus::Rejected => "rejected",
            AuditStatus::Skipped => "skipped",
            AuditStatus::Denied => "denied",
            AuditStatus::HandedOff => "handed_off",
            AuditStatus::Modified => "modified",
            AuditStatus::Substituted => "substituted",
            AuditStatus::Notice => "notice",
        }
    }
}

impl fmt::Display for AuditStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a record holds of a tool's result: by default its SHA-256, or, when raw results are
/// opted in, the (redacted) value itself. The run's own records hold values too (the tools
/// available at its start, its cost at the end).
///
/// Written as JSON either way: a digest as `{"sha256":"<lowercase hex>"}`, a value as itself.
/// Read back, that one shape is a digest and anything else a value, so a record's JSON and
/// hash are the same whichever way it was built.
///
/// ```
/// use agents_core::audit::AuditResult;
/// use serde_json::json;
///
/// let digest = AuditResult::sha256_of(b"{}");
/// let text = serde_json::to_string(&digest).unwrap();
/// assert_eq!(text, r#"{"sha256":"44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"}"#);
/// assert_eq!(serde_json::from_str::<AuditResult>(&text).unwrap(), digest);
///
/// let value = AuditResult::from(json!({"available_tools": ["a"]}));
/// assert_eq!(value.value().unwrap()["available_tools"], json!(["a"]));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum AuditResult {
    /// SHA-256 of the result's canonical JSON.
    Sha256([u8; 32]),
    /// The value itself.
    Value(Value),
}

impl AuditResult {
    /// The digest of `canonical_json` (a result's canonical JSON text).
    pub fn sha256_of(canonical_json: &[u8]) -> Self {
        use sha2::Digest;
        AuditResult::Sha256(sha2::Sha256::digest(canonical_json).into())
    }

    /// The value, when the record holds one (not a digest).
    pub fn value(&self) -> Option<&Value> {
        match self {
            AuditResult::Value(v) => Some(v),
            AuditResult::Sha256(_) => None,
        }
    }

    /// The lowercase hex of the digest, when the record holds one.
    pub fn sha256_hex(&self) -> Option<String> {
        match self {
            AuditResult::Sha256(d) => Some(crate::canonical::digest_hex(d)),
            AuditResult::Value(_) => None,
        }
    }

    /// As JSON: `{"sha256": "<hex>"}` for a digest, the value itself otherwise.
    pub fn to_value(&self) -> Value {
        match self {
            AuditResult::Sha256(d) => {
                let mut map = serde_json::Map::new();
                map.insert("sha256".to_owned(), Value::String(crate::canonical::digest_hex(d)));
                Value::Object(map)
            }
            AuditResult::Value(v) => v.clone(),
        }
    }
}

impl From<Value> for AuditResult {
    /// `{"sha256": "<64 lowercase hex digits>"}` is a digest; any other value is a value.
    fn from(value: Value) -> Self {
        if let Value::Object(map) = &value
            && map.len() == 1
            && let Some(Value::String(hex)) = map.get("sha256")
            && hex.len() == 64
            && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            let mut digest = [0u8; 32];
            if hex::decode_to_slice(hex, &mut digest).is_ok() {
                return AuditResult::Sha256(digest);
            }
        }
        AuditResult::Value(value)
    }
}

impl Serialize for AuditResult {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            AuditResult::Sha256(d) => {
                use serde::ser::SerializeMap;
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry("sha256", &crate::canonical::digest_hex(d))?;
                map.end()
            }
            AuditResult::Value(v) => v.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for AuditResult {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(AuditResult::from)
    }
}

/// One audit record. `seq`, `prev_hash` and `hash` are set by the sink when it appends.
///
/// The ids and names that every record of a run or call repeats are [`SharedStr`]s: the
/// records share one copy of each, and they read and compare like `&str`
/// (`record.user_id == "emp-1"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditRecord {
    /// Position in the chain, from 1.
    pub seq: u64,
    /// RFC 3339 UTC timestamp.
    pub ts: String,
    /// The run.
    pub run_id: SharedStr,
    /// The session (conversation).
    pub session_id: SharedStr,
    /// The request that started the run.
    pub request_id: SharedStr,
    /// The tool call this record is about, when it is about one.
    pub call_id: Option<SharedStr>,
    /// The user the run acts for.
    pub user_id: SharedStr,
    /// The user's organisation.
    pub org_id: SharedStr,
    /// The user's role.
    pub role: SharedStr,
    /// The agent's name.
    pub agent: SharedStr,
    /// The tool's name.
    pub tool: Option<SharedStr>,
    /// The tool's tier.
    pub tier: Option<Tier>,
    /// What happened.
    pub status: AuditStatus,
    /// Why (a denial reason, a failure message, an outcome).
    pub reason: Option<String>,
    /// The tool's title, as shown to the person confirming.
    pub title: Option<SharedStr>,
    /// Redacted arguments (shared by the records of one call).
    pub args: Option<SharedValue>,
    /// HMAC-SHA-256 (server key) of the canonical real arguments of an action call: joins a
    /// proposal, its approval and its execution without storing the values (`None` for
    /// read and handoff calls, whose records join by `call_id`).
    pub args_hash: Option<String>,
    /// The result (redacted), only when raw results are opted in; otherwise its SHA-256.
    pub result: Option<AuditResult>,
    /// The agent's `MANIFEST_SHA256`.
    pub manifest_sha256: SharedStr,
    /// The `hash` of the previous record, or [`GENESIS_HASH`].
    pub prev_hash: String,
    /// SHA-256 of the canonical JSON of this record without its `hash` field.
    pub hash: String,
}

impl AuditRecord {
    /// The hash this record should carry: SHA-256 of its canonical JSON without `hash`.
    pub fn compute_hash(&self) -> String {
        let parts = self.members();
        crate::canonical::sha256_hex(parts.hashed(self.seq, &self.prev_hash).as_bytes())
    }

    /// Sets `seq`, `prev_hash` and `hash` so the record follows `prev` in a chain.
    pub fn seal(&mut self, seq: u64, prev_hash: &str) {
        self.seq = seq;
        prev_hash.clone_into(&mut self.prev_hash);
        self.hash = self.compute_hash();
    }

    /// The canonical JSON line (without the newline).
    pub fn to_line(&self) -> String {
        let parts = self.members();
        parts.line(&parts.hashed(self.seq, &self.prev_hash), &self.hash)
    }

    /// Renders every member except the three the chain decides (`hash`, `prev_hash`, `seq`),
    /// in canonical key order, split where those three go.
    fn members(&self) -> Members {
        // Exhaustive on purpose: a new field must be added below, in key order, or this does
        // not compile, rather than hash something other than the record's canonical JSON.
        let AuditRecord {
            seq: _,
            ts,
            run_id,
            session_id,
            request_id,
            call_id,
            user_id,
            org_id,
            role,
            agent,
            tool,
            tier,
            status,
            reason,
            title,
            args,
            args_hash,
            result,
            manifest_sha256,
            prev_hash: _,
            hash: _,
        } = self;
        let mut w = MemberWriter(String::with_capacity(512));
        w.string("agent", agent);
        w.json("args", args.as_deref());
        w.opt_string("args_hash", args_hash.as_deref());
        w.opt_string("call_id", call_id.as_deref());
        let before_hash = w.0.len();
        w.string("manifest_sha256", manifest_sha256);
        w.string("org_id", org_id);
        let before_prev = w.0.len();
        w.opt_string("reason", reason.as_deref());
        w.string("request_id", request_id);
        w.result(result.as_ref());
        w.string("role", role);
        w.string("run_id", run_id);
        let before_seq = w.0.len();
        w.string("session_id", session_id);
        w.string("status", status.as_str());
        w.opt_string("tier", tier.map(Tier::as_str));
        w.opt_string("title", title.as_deref());
        w.opt_string("tool", tool.as_deref());
        w.string("ts", ts);
        w.string("user_id", user_id);
        Members { text: w.0, cuts: [before_hash, before_prev, before_seq] }
    }
}

/// A record's members other than `hash`, `prev_hash` and `seq`, rendered as canonical
/// `"key":value` pairs joined by commas, with the offsets where the three chain members go.
/// Every segment is non-empty (each holds at least one member that is always present).
struct Members {
    text: String,
    cuts: [usize; 3],
}

impl Members {
    /// The text that is hashed: the record's canonical JSON without `hash`.
    fn hashed(&self, seq: u64, prev_hash: &str) -> String {
        let [a, b, c] = self.cuts;
        let t = &self.text;
        let mut out = String::with_capacity(t.len() + prev_hash.len() + 48);
        out.push('{');
        out.push_str(&t[..a]);
        out.push_str(&t[a..b]);
        out.push_str(",\"prev_hash\":");
        crate::canonical::write_str_to(prev_hash, &mut out);
        out.push_str(&t[b..c]);
        out.push_str(",\"seq\":");
        // Through the canonical number writer: beyond 2^53 a number is written as a double.
        crate::canonical::write_to(&Value::from(seq), &mut out);
        out.push_str(&t[c..]);
        out.push('}');
        out
    }

    /// The full line: the hashed text with `hash` spliced in after the members before it.
    fn line(&self, hashed: &str, hash: &str) -> String {
        let at = 1 + self.cuts[0];
        let mut out = String::with_capacity(hashed.len() + hash.len() + 10);
        out.push_str(&hashed[..at]);
        out.push_str(",\"hash\":");
        crate::canonical::write_str_to(hash, &mut out);
        out.push_str(&hashed[at..]);
        out
    }
}

struct MemberWriter(String);

impl MemberWriter {
    fn key(&mut self, key: &str) {
        if !self.0.is_empty() {
            self.0.push(',');
        }
        self.0.push('"');
        self.0.push_str(key);
        self.0.push_str("\":");
    }

    fn string(&mut self, key: &str, value: &str) {
        self.key(key);
        crate::canonical::write_str_to(value, &mut self.0);
    }

    fn opt_string(&mut self, key: &str, value: Option<&str>) {
        match value {
            Some(value) => self.string(key, value),
            None => self.json(key, None),
        }
    }

    fn result(&mut self, result: Option<&AuditResult>) {
        match result {
            Some(AuditResult::Sha256(digest)) => {
                self.key("result");
                // `{"sha256":"<hex>"}`, as the canonical writer renders the value.
                self.0.push_str("{\"sha256\":\"");
                crate::canonical::write_digest_hex(digest, &mut self.0);
                self.0.push_str("\"}");
            }
            Some(AuditResult::Value(value)) => self.json("result", Some(value)),
            None => self.json("result", None),
        }
    }

    fn json(&mut self, key: &str, value: Option<&Value>) {
        self.key(key);
        match value {
            Some(value) => crate::canonical::write_to(value, &mut self.0),
            None => self.0.push_str("null"),
        }
    }
}

/// A record rendered before it is sealed, so that whoever keeps the chain (often a single
/// writer thread) only splices in `seq` and `prev_hash` and hashes.
///
/// The result is byte for byte what [`AuditRecord::seal`] and [`AuditRecord::to_line`] give.
///
/// ```
/// use agents_core::audit::{PreparedRecord, GENESIS_HASH};
/// # fn record() -> agents_core::audit::AuditRecord {
/// #     serde_json::from_value(serde_json::json!({
/// #         "seq": 0, "ts": "2026-01-01T00:00:00Z", "run_id": "r", "session_id": "s",
/// #         "request_id": "q", "call_id": null, "user_id": "u", "org_id": "o", "role": "x",
/// #         "agent": "a", "tool": null, "tier": null, "status": "notice", "reason": null,
/// #         "title": null, "args": null, "args_hash": null, "result": null,
/// #         "manifest_sha256": "m", "prev_hash": "", "hash": ""})).unwrap()
/// # }
/// let (sealed, line) = PreparedRecord::new(record()).seal(1, GENESIS_HASH);
/// assert_eq!(sealed.hash, sealed.compute_hash());
/// assert_eq!(line, sealed.to_line());
/// ```
pub struct PreparedRecord {
    record: AuditRecord,
    members: Members,
}

impl fmt::Debug for PreparedRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PreparedRecord").field("record", &self.record).finish_non_exhaustive()
    }
}

impl PreparedRecord {
    /// Renders everything but the chain members.
    pub fn new(record: AuditRecord) -> Self {
        let members = record.members();
        PreparedRecord { record, members }
    }

    /// Seals the record after `prev_hash` as number `seq`; returns it with its line.
    pub fn seal(self, seq: u64, prev_hash: &str) -> (AuditRecord, String) {
        let PreparedRecord { mut record, members } = self;
        let hashed = members.hashed(seq, prev_hash);
        let hash = crate::canonical::sha256_hex(hashed.as_bytes());
        let line = members.line(&hashed, &hash);
        record.seq = seq;
        prev_hash.clone_into(&mut record.prev_hash);
        record.hash = hash;
        (record, line)
    }
}

/// Where a chain stops being trustworthy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChainError {
    /// The line is not an audit record.
    #[error("line {line}: not an audit record: {detail}")]
    Malformed {
        /// 1-based line number.
        line: usize,
        /// What the parser said.
        detail: String,
    },
    /// The record's content does not match its hash: it was edited.
    #[error("line {line}: the record does not match its hash (edited)")]
    HashMismatch {
        /// 1-based line number.
        line: usize,
    },
    /// The record does not follow the previous one: a record was deleted, inserted or moved.
    #[error("line {line}: the record does not follow the previous one (deleted, inserted or reordered records)")]
    BrokenLink {
        /// 1-based line number.
        line: usize,
    },
    /// The sequence number is not the next one.
    #[error("line {line}: sequence number {found}, expected {expected}")]
    Sequence {
        /// 1-based line number.
        line: usize,
        /// What the record says.
        found: u64,
        /// What the chain needs.
        expected: u64,
    },
    /// The last line has no newline and does not parse: a write was cut off by a crash.
    #[error("line {line}: torn last line (a write was cut off); nothing after line {} is trustworthy", line - 1)]
    TornTail {
        /// 1-based line number.
        line: usize,
    },
    /// The record names another manifest.
    #[error("line {line}: manifest hash {found} is not the expected {expected}")]
    ManifestMismatch {
        /// 1-based line number.
        line: usize,
        /// What the record says.
        found: String,
        /// What the caller expected.
        expected: String,
    },
}

impl ChainError {
    /// The 1-based line where the chain breaks.
    pub fn line(&self) -> usize {
        match self {
            ChainError::Malformed { line, .. }
            | ChainError::HashMismatch { line }
            | ChainError::BrokenLink { line }
            | ChainError::Sequence { line, .. }
            | ChainError::TornTail { line }
            | ChainError::ManifestMismatch { line, .. } => *line,
        }
    }
}

/// What a verified chain holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainSummary {
    /// Number of records.
    pub records: usize,
    /// Hash of the last record ([`GENESIS_HASH`] when empty).
    pub last_hash: String,
}

/// Verifies a JSONL audit log held in memory: every line parses, is exactly the record's
/// canonical JSON, matches its hash, links to the previous one and has the next sequence
/// number; optionally every record names
/// `manifest_sha256`. Reports the first bad line.
pub fn verify_jsonl(text: &str, manifest_sha256: Option<&str>) -> Result<ChainSummary, ChainError> {
    let mut prev = GENESIS_HASH.to_owned();
    let mut count = 0usize;
    let ends_with_newline = text.is_empty() || text.ends_with('\n');
    let lines: Vec<&str> = text.split_terminator('\n').collect();
    for (i, line) in lines.iter().enumerate() {
        let lineno = i + 1;
        let last = i + 1 == lines.len();
        let record: AuditRecord = match serde_json::from_str(line) {
            Ok(r) => r,
            Err(e) => {
                if last && !ends_with_newline {
                    return Err(ChainError::TornTail { line: lineno });
                }
                return Err(ChainError::Malformed { line: lineno, detail: e.to_string() });
            }
        };
        if last && !ends_with_newline {
            return Err(ChainError::TornTail { line: lineno });
        }
        if record.compute_hash() != record.hash {
            return Err(ChainError::HashMismatch { line: lineno });
        }
        // The hash covers the parsed record, so a line re-encoded without changing its meaning
        // (`1E+21` for `1e+21`, an escaped letter) would still match it: require the exact bytes.
        if record.to_line() != *line {
            return Err(ChainError::Malformed {
                line: lineno,
                detail: "the line is not the record's canonical JSON (it was re-encoded after it was written)"
                    .to_owned(),
            });
        }
        if record.prev_hash != prev {
            return Err(ChainError::BrokenLink { line: lineno });
        }
        let expected = count as u64 + 1;
        if record.seq != expected {
            return Err(ChainError::Sequence { line: lineno, found: record.seq, expected });
        }
        if let Some(m) = manifest_sha256
            && record.manifest_sha256 != m
        {
            return Err(ChainError::ManifestMismatch {
                line: lineno,
                found: record.manifest_sha256.to_string(),
                expected: m.to_owned(),
            });
        }
        prev = record.hash;
        count += 1;
    }
    Ok(ChainSummary { records: count, last_hash: prev })
}
