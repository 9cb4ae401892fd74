//! Audit records: append-only, event-sourced, chained.
//!
//! Each status change of a tool call is a new record. Every record carries the `hash` of the
//! previous one and the agent's `MANIFEST_SHA256`, so a record joins back to the reviewed
//! manifest. A chain is sealed in one of two modes, and they prove different things:
//!
//! | mode | a record's `hash` | detects | against whom |
//! | --- | --- | --- | --- |
//! | plain (default) | SHA-256 of its canonical JSON without `hash` | accidental damage: a flipped byte, a lost or duplicated line, a torn write | nobody: anyone who can write the file can edit a record and re-hash everything after it, or cut the end off |
//! | keyed ([`keyed`]) | HMAC-SHA-256 of the same text under the key of its `epoch`, the key stepping one way every epoch | any edit, insertion, deletion, reordering, re-sealing or record from another chain | someone with write access but no key, and someone who steals the writer's key at epoch `k`, for every record of an epoch before `k` |
//! | keyed + [`checkpoint`]s | as keyed, plus Ed25519-signed statements of the head published elsewhere | also a log cut below (or rewritten up to) the last checkpoint | as keyed, as long as the published checkpoints are out of the attacker's reach |
//!
//! Records appended after the last checkpoint can be cut off without a trace in any mode; how
//! often the writer publishes checkpoints bounds that loss.

pub mod checkpoint;
pub mod filter;
pub mod keyed;
pub mod lines;
pub mod severe;
#[cfg(feature = "sqlite")]
pub mod sqlite;

use crate::tool::Tier;
use crate::{SharedStr, SharedValue};
pub use checkpoint::{CHECKPOINT_FORMAT, Checkpoint, CheckpointError, CheckpointSigningKey, CheckpointVerifyingKey};
pub use filter::{RecordFilter, Selected};
pub use keyed::{ChainKey, EpochKey, EpochPolicy, KeyError, MAX_EPOCH_GAP, TIMESTAMP_GRACE, unix_seconds};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

/// The `prev_hash` of the first record of a chain.
pub const GENESIS_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// What happened: the status one record carries.
///
/// Not every record moves a tool call: a run's start and end, a notice and an interceptor's
/// modified arguments stand beside the calls. Where a call stands at a run's end is the
/// runtime's `CallStatus`, the statuses here that move a call under the same names, kept as a
/// type of its own on purpose so that code over a call's status has no case for a state no call
/// can be in (`CallStatus::of_audit` maps this type onto it).
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
    /// Every status, in declaration order (`ALL[s as usize] == s`).
    pub const ALL: [AuditStatus; 13] = [
        AuditStatus::RunStarted,
        AuditStatus::RunFinished,
        AuditStatus::Proposed,
        AuditStatus::Confirmed,
        AuditStatus::Executed,
        AuditStatus::Failed,
        AuditStatus::Rejected,
        AuditStatus::Skipped,
        AuditStatus::Denied,
        AuditStatus::HandedOff,
        AuditStatus::Modified,
        AuditStatus::Substituted,
        AuditStatus::Notice,
    ];

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
    /// A 32-byte digest of the result's canonical JSON, written `{"sha256": "<hex>"}`: plain
    /// SHA-256 from [`AuditResult::sha256_of`]; the runtime's records carry HMAC-SHA-256 under
    /// the runtime's key instead (`agents_runtime::token::TokenStore::result_mac`), so a
    /// low-entropy result cannot be recovered from the log by hashing candidates.
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

/// Where the call of a tool imported from an MCP server went, in its records
/// ([`AuditRecord::import`]): which server, which of its tools, and the pin checked.
///
/// ```
/// use agents_core::audit::AuditImport;
///
/// let import = AuditImport {
///     server: "tracker".to_owned(),
///     source: Some("stdio: tracker-mcp --stdio".to_owned()),
///     tool: "create_issue".to_owned(),
///     sha256: "a".repeat(64),
///     listed_sha256: None,
/// };
/// let json = import.to_value();
/// assert_eq!(json["source"], "stdio: tracker-mcp --stdio");
/// assert!(json.get("listed_sha256").is_none(), "absent, not null, while the pin matches");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditImport {
    /// The server's name, as `mcp_import!` and the lock file give it.
    pub server: String,
    /// Where the server is reached: `stdio: <program> <args>` or `http: <url>`, without a
    /// token, an environment value or a URL's user information. Absent when the runtime has no
    /// such server configured (the call was refused before anything was sent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The server's name for the tool.
    pub tool: String,
    /// The SHA-256 pin of the tool's name, description and input schema the call was checked
    /// against (from the lock file, compiled into the manifest).
    pub sha256: String,
    /// What the server's `tools/list` gave for the tool when it no longer matched the pin: the
    /// call was refused and nothing was sent. Absent while the pin matches (and when the
    /// server no longer lists the tool; the record's reason says so).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listed_sha256: Option<String>,
}

impl AuditImport {
    /// As JSON, as the record holds it.
    pub fn to_value(&self) -> Value {
        let mut map = serde_json::Map::new();
        if let Some(listed) = &self.listed_sha256 {
            map.insert("listed_sha256".to_owned(), Value::String(listed.clone()));
        }
        map.insert("server".to_owned(), Value::String(self.server.clone()));
        map.insert("sha256".to_owned(), Value::String(self.sha256.clone()));
        if let Some(source) = &self.source {
            map.insert("source".to_owned(), Value::String(source.clone()));
        }
        map.insert("tool".to_owned(), Value::String(self.tool.clone()));
        Value::Object(map)
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
    /// The sealing key's epoch, in a keyed chain; absent (not `null`) in a plain chain, so a
    /// plain record's JSON and hash do not depend on the keyed mode existing. Set by the sink.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epoch: Option<u64>,
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
    /// For a tool imported from an MCP server: the server, its name for the tool, and the pin
    /// the call was checked against. Absent (not `null`) for every other record, so records
    /// written before imported tools existed keep their JSON and hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub import: Option<AuditImport>,
    /// The agent's `MANIFEST_SHA256`.
    pub manifest_sha256: SharedStr,
    /// The `hash` of the previous record, or [`GENESIS_HASH`].
    pub prev_hash: String,
    /// The record's seal over its canonical JSON without the `hash` field: SHA-256 in a plain
    /// chain, HMAC-SHA-256 under the key of `epoch` in a keyed one (lowercase hex either way).
    pub hash: String,
}

impl AuditRecord {
    /// The plain hash this record should carry: SHA-256 of its canonical JSON without `hash`.
    pub fn compute_hash(&self) -> String {
        crate::canonical::digest_hex(&self.members().digest(self.chain(), None))
    }

    /// The keyed seal this record should carry: HMAC-SHA-256 of its canonical JSON without
    /// `hash` under `key` (the key of the record's `epoch`).
    pub fn compute_mac(&self, key: &EpochKey) -> String {
        crate::canonical::digest_hex(&self.members().digest(self.chain(), Some(key)))
    }

    /// Sets `seq`, `prev_hash` and a plain `hash` (and clears `epoch`) so the record follows
    /// `prev` in a plain chain.
    pub fn seal(&mut self, seq: u64, prev_hash: &str) {
        self.seq = seq;
        self.epoch = None;
        prev_hash.clone_into(&mut self.prev_hash);
        self.hash = self.compute_hash();
    }

    /// Sets `seq`, `prev_hash`, `epoch` and a keyed `hash` so the record follows `prev` in a
    /// keyed chain, sealed with `key`.
    pub fn seal_keyed(&mut self, seq: u64, prev_hash: &str, key: &EpochKey) {
        self.seq = seq;
        self.epoch = Some(key.epoch());
        prev_hash.clone_into(&mut self.prev_hash);
        self.hash = self.compute_mac(key);
    }

    /// The canonical JSON line (without the newline).
    pub fn to_line(&self) -> String {
        self.members().write_line(self.chain(), Some(&self.hash)).0
    }

    fn chain(&self) -> Chain<'_> {
        Chain { seq: self.seq, prev_hash: &self.prev_hash, epoch: self.epoch }
    }

    /// Renders every member except the four the chain decides (`epoch`, `hash`, `prev_hash`,
    /// `seq`), in canonical key order, split where those go.
    ///
    /// Consecutive records share most members (a run's ids; a call's arguments, tool and
    /// title), so each thread keeps the text of the last record it rendered: a member equal to
    /// the one there is copied from it, runs of such members in one piece, and only the others
    /// are written. Equal means the same text for a string (kept when it needed no escape), the
    /// same shared value for the arguments, both absent for the rest; the bytes are the same
    /// either way.
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
            epoch: _,
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
            import,
            manifest_sha256,
            prev_hash: _,
            hash: _,
        } = self;
        let members: [Member<'_>; MEMBERS] = [
            Member::Shared(Some(agent)),
            Member::Args(args.as_ref()),
            Member::Str(args_hash.as_deref()),
            Member::Shared(call_id.as_ref()),
            Member::Import(import.as_ref()),
            Member::Shared(Some(manifest_sha256)),
            Member::Shared(Some(org_id)),
            Member::Str(reason.as_deref()),
            Member::Shared(Some(request_id)),
            Member::Result(result.as_ref()),
            Member::Shared(Some(role)),
            Member::Shared(Some(run_id)),
            Member::Shared(Some(session_id)),
            Member::Word(Some(status.as_str())),
            Member::Word(tier.map(Tier::as_str)),
            Member::Shared(title.as_ref()),
            Member::Shared(tool.as_ref()),
            Member::Str(Some(ts)),
            Member::Shared(Some(user_id)),
        ];
        let rendered = LAST_RENDERED.try_with(|last| match last.try_borrow_mut() {
            Ok(mut last) => render_members(&members, args.as_ref(), Some(&mut last)),
            Err(_) => render_members(&members, args.as_ref(), None),
        });
        rendered.unwrap_or_else(|_| render_members(&members, args.as_ref(), None))
    }
}

/// The members a record renders besides the chain's, in canonical key order.
const MEMBERS: usize = 19;

/// Each member's key as written: its comma, the quoted name and the colon (the first member,
/// `agent`, always present, has no comma).
const KEYS: [&str; MEMBERS] = [
    "\"agent\":",
    ",\"args\":",
    ",\"args_hash\":",
    ",\"call_id\":",
    ",\"import\":",
    ",\"manifest_sha256\":",
    ",\"org_id\":",
    ",\"reason\":",
    ",\"request_id\":",
    ",\"result\":",
    ",\"role\":",
    ",\"run_id\":",
    ",\"session_id\":",
    ",\"status\":",
    ",\"tier\":",
    ",\"title\":",
    ",\"tool\":",
    ",\"ts\":",
    ",\"user_id\":",
];

/// Where the chain's members go: `epoch` and `hash` after `call_id`, `prev_hash` after
/// `org_id`, `seq` after `run_id` (indices into [`KEYS`]).
const CUT_AFTER: [usize; 3] = [3, 6, 11];

/// The largest members text (bytes) a thread keeps to copy unchanged members from.
const LAST_KEPT: usize = 16 * 1024;

thread_local! {
    static LAST_RENDERED: std::cell::RefCell<LastRendered> = std::cell::RefCell::new(LastRendered::default());
}

/// One member's value, as the renderer reads it.
enum Member<'a> {
    /// A string, or `null`.
    Str(Option<&'a str>),
    /// A string the records of a run or call share, or `null`.
    Shared(Option<&'a crate::SharedStr>),
    /// A name from a fixed set (a status, a tier): lowercase letters and `_`, or `null`.
    Word(Option<&'static str>),
    Args(Option<&'a crate::SharedValue>),
    Result(Option<&'a AuditResult>),
    /// Absent, not `null`, when there is none.
    Import(Option<&'a AuditImport>),
}

/// How a member's text was written, to tell whether another value writes the same.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
enum Written {
    /// Anything else: written again.
    #[default]
    Other,
    /// `null`.
    Null,
    /// Nothing (an absent `import`).
    Absent,
    /// A string without escapes: `"`, the string, `"`.
    Verbatim,
    /// The arguments [`LastRendered::args`] holds.
    Args,
}

/// The members text of the last record this thread rendered, with where each member ends and
/// how it was written.
#[derive(Default)]
struct LastRendered {
    text: String,
    ends: [usize; MEMBERS],
    written: [Written; MEMBERS],
    /// The arguments written, shared (their allocation is what a later record's are compared
    /// with; held, so it cannot be reused for other arguments meanwhile).
    args: Option<crate::SharedValue>,
    /// The shared strings written verbatim, by member: one a later record holds a clone of is
    /// the same text without comparing it.
    shared: [Option<crate::SharedStr>; MEMBERS],
    valid: bool,
}

impl LastRendered {
    /// Whether member `i` with value `m` writes exactly the text this record has for it.
    fn same(&self, i: usize, m: &Member<'_>) -> bool {
        let written = self.written[i];
        match m {
            Member::Str(None)
            | Member::Shared(None)
            | Member::Word(None)
            | Member::Result(None)
            | Member::Args(None) => written == Written::Null,
            Member::Shared(Some(s)) => {
                written == Written::Verbatim
                    && (self.shared[i].as_ref().is_some_and(|kept| kept.ptr_eq(s)) || self.same_text(i, s))
            }
            Member::Str(Some(v)) | Member::Word(Some(v)) => written == Written::Verbatim && self.same_text(i, v),
            Member::Args(Some(a)) => written == Written::Args && self.args.as_ref().is_some_and(|b| b.ptr_eq(a)),
            Member::Import(None) => written == Written::Absent,
            Member::Result(Some(_)) | Member::Import(Some(_)) => false,
        }
    }

    /// Whether member `i`, written verbatim, holds the string `v`.
    fn same_text(&self, i: usize, v: &str) -> bool {
        let start = if i == 0 { OPEN } else { self.ends[i - 1] };
        // `key"value"`: the value sits between the key's colon and the last quote.
        self.text.get(start + KEYS[i].len() + 1..self.ends[i] - 1) == Some(v)
    }
}

/// Writes member `i` with its key; how it was written.
fn write_member(out: &mut String, i: usize, m: &Member<'_>) -> Written {
    let key = KEYS[i];
    match m {
        Member::Import(None) => return Written::Absent,
        Member::Import(Some(import)) => {
            out.push_str(key);
            crate::canonical::write_to(&import.to_value(), out);
            return Written::Other;
        }
        _ => {}
    }
    out.push_str(key);
    match m {
        Member::Str(None) | Member::Shared(None) | Member::Word(None) | Member::Result(None) | Member::Args(None) => {
            out.push_str("null");
            Written::Null
        }
        Member::Shared(Some(v)) => {
            if crate::canonical::write_string_verbatim(v, out) {
                Written::Verbatim
            } else {
                Written::Other
            }
        }
        Member::Str(Some(v)) => {
            if crate::canonical::write_string_verbatim(v, out) {
                Written::Verbatim
            } else {
                Written::Other
            }
        }
        Member::Word(Some(v)) => {
            debug_assert!(v.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'), "{v}");
            out.push('"');
            out.push_str(v);
            out.push('"');
            Written::Verbatim
        }
        Member::Args(Some(args)) => {
            crate::canonical::write_to(args, out);
            Written::Args
        }
        Member::Result(Some(AuditResult::Sha256(digest))) => {
            // `{"sha256":"<hex>"}`, as the canonical writer renders the value.
            out.push_str("{\"sha256\":\"");
            crate::canonical::write_digest_hex(digest, out);
            out.push_str("\"}");
            Written::Other
        }
        Member::Result(Some(AuditResult::Value(value))) => {
            crate::canonical::write_to(value, out);
            Written::Other
        }
        Member::Import(_) => unreachable!("written above"),
    }
}

/// Renders the members, copying those equal to `last`'s from its text (then keeping this
/// record's text there for the next one).
fn render_members(
    members: &[Member<'_>; MEMBERS],
    args: Option<&crate::SharedValue>,
    last: Option<&mut LastRendered>,
) -> Members {
    // Room for a call's record with small arguments and a result digest (about 600 bytes),
    // so the text is not moved while it is written.
    let mut out = String::with_capacity(1024);
    out.push('{');
    let mut ends = [0usize; MEMBERS];
    let mut written = [Written::Other; MEMBERS];
    let Some(last) = last else {
        for (i, m) in members.iter().enumerate() {
            write_member(&mut out, i, m);
            ends[i] = out.len();
        }
        return Members { text: out, cuts: CUT_AFTER.map(|i| ends[i]) };
    };
    // The range of `last.text` still to be copied: members equal to its own, contiguous there.
    let mut copy: Option<std::ops::Range<usize>> = None;
    for (i, m) in members.iter().enumerate() {
        if last.valid && last.same(i, m) {
            let start = if i == 0 { OPEN } else { last.ends[i - 1] };
            copy = Some(copy.map_or(start, |c| c.start)..last.ends[i]);
            written[i] = last.written[i];
            ends[i] = out.len() + copy.as_ref().map_or(0, |c| c.len());
        } else {
            if let Some(c) = copy.take() {
                out.push_str(&last.text[c]);
            }
            written[i] = write_member(&mut out, i, m);
            ends[i] = out.len();
        }
    }
    if let Some(c) = copy.take() {
        out.push_str(&last.text[c]);
    }
    last.keep(&out, ends, written, args, members);
    Members { text: out, cuts: CUT_AFTER.map(|i| ends[i]) }
}

impl LastRendered {
    /// Keeps a record's members text as the one the next record copies from.
    fn keep(
        &mut self,
        text: &str,
        ends: [usize; MEMBERS],
        written: [Written; MEMBERS],
        args: Option<&crate::SharedValue>,
        members: &[Member<'_>; MEMBERS],
    ) {
        if text.len() > LAST_KEPT {
            *self = LastRendered::default();
            return;
        }
        for ((kept, m), w) in self.shared.iter_mut().zip(members).zip(written) {
            match m {
                Member::Shared(Some(s)) if w == Written::Verbatim => {
                    if !kept.as_ref().is_some_and(|k| k.ptr_eq(s)) {
                        *kept = Some((*s).clone());
                    }
                }
                _ => *kept = None,
            }
        }
        self.text.clear();
        self.text.push_str(text);
        self.ends = ends;
        self.written = written;
        let same_args = matches!((&self.args, args), (Some(a), Some(b)) if a.ptr_eq(b));
        if written[1] != Written::Args {
            self.args = None;
        } else if !same_args {
            self.args = args.cloned();
        }
        self.valid = true;
    }
}

/// A record's members other than `hash`, `prev_hash` and `seq`, rendered as canonical
/// `"key":value` pairs joined by commas after the record's opening `{`, with the offsets where
/// the three chain members go. Every segment is non-empty (each holds at least one member that
/// is always present).
struct Members {
    text: String,
    cuts: [usize; 3],
}

/// The members text opens with the record's `{`; its first member starts here.
const OPEN: usize = 1;

/// The members the chain decides: `seq`, `prev_hash` and `epoch` (absent in a plain chain).
#[derive(Clone, Copy)]
struct Chain<'a> {
    seq: u64,
    prev_hash: &'a str,
    epoch: Option<u64>,
}

impl Members {
    /// Writes the record's whole canonical line in one pass over the rendered members, with
    /// `hash` as the `hash` member (none: the text the seal covers); returns it with the byte
    /// range of that member (`,"hash":"…"`, empty without one), which the seal does not cover.
    fn write_line(&self, chain: Chain<'_>, hash: Option<&str>) -> (String, std::ops::Range<usize>) {
        let mut line = String::with_capacity(self.text.len() + chain.prev_hash.len() + 64 + 80);
        let [a, b, c] = self.cuts;
        let t = &self.text;
        line.push_str(&t[..a]);
        if let Some(epoch) = chain.epoch {
            line.push_str(",\"epoch\":");
            crate::canonical::write_u64(epoch, &mut line);
        }
        let hash_at = line.len();
        if let Some(hash) = hash {
            line.push_str(",\"hash\":");
            crate::canonical::write_str_to(hash, &mut line);
        }
        let after_hash = line.len();
        line.push_str(&t[a..b]);
        line.push_str(",\"prev_hash\":");
        crate::canonical::write_str_to(chain.prev_hash, &mut line);
        line.push_str(&t[b..c]);
        line.push_str(",\"seq\":");
        // Through the canonical number writer: beyond 2^53 a number is written as a double.
        crate::canonical::write_u64(chain.seq, &mut line);
        line.push_str(&t[c..]);
        line.push('}');
        (line, hash_at..after_hash)
    }

    /// SHA-256 (no key) or HMAC-SHA-256 (`key`) of the record's canonical JSON without `hash`.
    fn digest(&self, chain: Chain<'_>, key: Option<&EpochKey>) -> [u8; 32] {
        let (line, hash) = self.write_line(chain, None);
        digest_around(&line, hash, key)
    }

    /// Seals in one pass, in the members' own text: the chain's members are spliced in where
    /// they go (`seq`, then `prev_hash`, then `epoch`, each moving only the text after it), the
    /// digest is fed the text around the place of `hash` (exactly the text the seal covers), and
    /// the `hash` member is spliced in there. Returns the hex and the line.
    fn seal(self, chain: Chain<'_>, key: Option<&EpochKey>) -> (String, String) {
        thread_local! {
            static BITS: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
        }
        let Members { text: mut line, cuts: [a, b, c] } = self;
        let hex = BITS
            .try_with(|bits| match bits.try_borrow_mut() {
                Ok(mut bits) => splice_chain(&mut line, &mut bits, [a, b, c], chain, key),
                Err(_) => splice_chain(&mut line, &mut String::new(), [a, b, c], chain, key),
            })
            .unwrap_or_else(|_| splice_chain(&mut line, &mut String::new(), [a, b, c], chain, key));
        (hex, line)
    }
}

/// [`Members::seal`] in `line` (the members text, cut at `a`, `b`, `c`), with `bits` as room
/// for each member it splices in; the seal's hex.
fn splice_chain(
    line: &mut String,
    bits: &mut String,
    [a, b, c]: [usize; 3],
    chain: Chain<'_>,
    key: Option<&EpochKey>,
) -> String {
    // The line's own length plus the hash member, so no splice moves it elsewhere.
    line.reserve(chain.prev_hash.len() + 2 * 20 + 90);
    bits.clear();
    bits.push_str(",\"seq\":");
    // Through the canonical number writer: beyond 2^53 a number is written as a double.
    crate::canonical::write_u64(chain.seq, bits);
    line.insert_str(c, bits);
    bits.clear();
    bits.push_str(",\"prev_hash\":");
    crate::canonical::write_str_to(chain.prev_hash, bits);
    line.insert_str(b, bits);
    let mut hash_at = a;
    if let Some(epoch) = chain.epoch {
        bits.clear();
        bits.push_str(",\"epoch\":");
        crate::canonical::write_u64(epoch, bits);
        line.insert_str(a, bits);
        hash_at += bits.len();
    }
    line.push('}');
    // Everything before `prev_hash`: the next record of the same call repeats it.
    let (head, tail) = line.as_bytes().split_at(hash_at);
    let digest = digest_sealed(head, tail, hash_at + (b - a), key);
    bits.clear();
    bits.push_str(",\"hash\":\"");
    crate::canonical::write_digest_hex(&digest, bits);
    bits.push('"');
    line.insert_str(hash_at, bits);
    let hex = bits[",\"hash\":\"".len()..bits.len() - 1].to_owned();
    if bits.capacity() > BITS_KEPT {
        *bits = String::new();
    }
    hex
}

/// The largest buffer (bytes) a thread keeps for the chain members it splices in.
const BITS_KEPT: usize = 4 * 1024;

/// SHA-256 (no key) or HMAC-SHA-256 (`key`) of `before` followed by `after`.
fn digest_parts(before: &[u8], after: &[u8], key: Option<&EpochKey>) -> [u8; 32] {
    match key {
        None => {
            use sha2::Digest;
            sha2::Sha256::new().chain_update(before).chain_update(after).finalize().into()
        }
        Some(key) => {
            use hmac::Mac;
            let mut mac = key.mac().clone();
            mac.update(before);
            mac.update(after);
            mac.finalize().into_bytes().into()
        }
    }
}

/// The most bytes of a record's opening whose hash state is kept for the next record.
const PREFIX_KEPT: usize = 64 * 1024;

thread_local! {
    /// The plain chain's kept state (see [`digest_sealed`]).
    static PLAIN_PREFIX: std::cell::RefCell<Option<(Vec<u8>, sha2::Sha256)>> = const { std::cell::RefCell::new(None) };
}

/// [`digest_parts`] of a record about to be sealed, whose first `stable` bytes the next record
/// of the same call repeats (everything before `prev_hash`: its arguments, ids, tool). The
/// hash state after the whole blocks of those bytes is kept (per thread in the plain chain,
/// with the epoch's key in the keyed one), with the bytes; a record that opens with exactly
/// those bytes resumes from it instead of hashing them again. The digest is the same.
fn digest_sealed(before: &[u8], after: &[u8], stable: usize, key: Option<&EpochKey>) -> [u8; 32] {
    use sha2::digest::FixedOutput;
    let shared = (stable.min(before.len() + after.len()) / 64 * 64).min(PREFIX_KEPT);
    if shared == 0 {
        return digest_parts(before, after, key);
    }
    match key {
        None => {
            let kept = PLAIN_PREFIX.try_with(|kept| {
                let mut kept = kept.try_borrow_mut().ok()?;
                Some(resume(&mut kept, sha2::Sha256::default, before, after, shared).finalize_fixed().into())
            });
            kept.ok().flatten().unwrap_or_else(|| digest_parts(before, after, None))
        }
        Some(key) => match key.prefix() {
            Some(mut kept) => resume(&mut kept, || key.mac().clone(), before, after, shared).finalize_fixed().into(),
            None => digest_parts(before, after, Some(key)),
        },
    }
}

/// A hasher fed `before` then `after`, resumed from `kept` when that holds the state after
/// exactly their first `shared` bytes; otherwise `kept` takes the state after them.
fn resume<H: Clone + sha2::digest::Update>(
    kept: &mut Option<(Vec<u8>, H)>,
    fresh: impl FnOnce() -> H,
    before: &[u8],
    after: &[u8],
    shared: usize,
) -> H {
    let head = &before[..shared.min(before.len())];
    let rest = &after[..shared - head.len()];
    let hit = matches!(&*kept, Some((bytes, _)) if bytes.len() == shared && bytes[..head.len()] == *head && bytes[head.len()..] == *rest);
    let mut h = match kept {
        Some((_, state)) if hit => state.clone(),
        _ => {
            let mut h = fresh();
            h.update(head);
            h.update(rest);
            let mut bytes = kept.take().map(|(bytes, _)| bytes).unwrap_or_default();
            bytes.clear();
            bytes.extend_from_slice(head);
            bytes.extend_from_slice(rest);
            *kept = Some((bytes, h.clone()));
            h
        }
    };
    h.update(&before[head.len()..]);
    h.update(&after[rest.len()..]);
    h
}

/// SHA-256 (no key) or HMAC-SHA-256 (`key`) of `line` without the bytes in `skip`.
fn digest_around(line: &str, skip: std::ops::Range<usize>, key: Option<&EpochKey>) -> [u8; 32] {
    digest_parts(&line.as_bytes()[..skip.start], &line.as_bytes()[skip.end..], key)
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

    /// The record as it was given (its `ts` decides its epoch in a keyed chain).
    pub fn record(&self) -> &AuditRecord {
        &self.record
    }

    /// Seals the record after `prev_hash` as number `seq` in a plain chain; returns it with its
    /// line.
    pub fn seal(self, seq: u64, prev_hash: &str) -> (AuditRecord, String) {
        self.seal_with(seq, prev_hash, None)
    }

    /// Seals the record after `prev_hash` as number `seq` with `key` in a keyed chain (`None`:
    /// plain); returns it with its line. The canonical text is rendered once (in
    /// [`PreparedRecord::new`]); sealing feeds it to the hash or MAC and writes the line once.
    pub fn seal_with(self, seq: u64, prev_hash: &str, key: Option<&EpochKey>) -> (AuditRecord, String) {
        let PreparedRecord { mut record, members } = self;
        let epoch = key.map(EpochKey::epoch);
        let (hash, line) = members.seal(Chain { seq, prev_hash, epoch }, key);
        record.seq = seq;
        record.epoch = epoch;
        prev_hash.clone_into(&mut record.prev_hash);
        record.hash = hash;
        (record, line)
    }
}

/// Where a chain stops being trustworthy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
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
    /// The record's content does not match its keyed seal: it was edited, forged, re-sealed
    /// without the key, or sealed with another key.
    #[error("line {line}: the record does not match its keyed seal (edited, forged, or sealed with another key)")]
    SealMismatch {
        /// 1-based line number.
        line: usize,
    },
    /// A key was given but the record is not sealed with one, or the chain switches between
    /// plain and keyed records: records were replaced or re-sealed with the plain hash.
    #[error("line {line}: the record is {found}, but {expected} (records replaced or re-sealed)")]
    ModeMismatch {
        /// 1-based line number.
        line: usize,
        /// What the record is (`a plain record`, `a keyed record`).
        found: &'static str,
        /// What the chain needs.
        expected: &'static str,
    },
    /// The record's epoch is not the one its sequence number and time give (it was re-sealed
    /// with a later key, or the verifier uses another epoch policy than the writer).
    #[error(
        "line {line}: the record says sealing epoch {found}, but its sequence number and time give epoch {expected} \
         (after epoch {previous}): re-sealed with another epoch's key, or the writer used another epoch policy"
    )]
    Epoch {
        /// 1-based line number.
        line: usize,
        /// The record's epoch.
        found: u64,
        /// The epoch its sequence number and time give.
        expected: u64,
        /// The previous record's epoch.
        previous: u64,
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
    /// A signed checkpoint names this record with another hash: the chain was rewritten.
    #[error(
        "line {line}: record {seq} does not have the hash signed checkpoint {number} names ({hash}): the chain was rewritten"
    )]
    CheckpointMismatch {
        /// 1-based line number.
        line: usize,
        /// The record's sequence number.
        seq: u64,
        /// 1-based number of the checkpoint, in sequence order.
        number: usize,
        /// The hash the checkpoint names.
        hash: String,
    },
    /// The log ends before a record a signed checkpoint names: records were cut off.
    #[error(
        "line {line}: the log ends after {records} record(s), but signed checkpoint {number} names record {seq}: records were cut off the end"
    )]
    Truncated {
        /// 1-based number of the first missing line.
        line: usize,
        /// Records the log holds.
        records: u64,
        /// The sequence number the checkpoint names.
        seq: u64,
        /// 1-based number of the checkpoint, in sequence order.
        number: usize,
    },
}

impl ChainError {
    /// The 1-based line where the chain breaks.
    pub fn line(&self) -> usize {
        match self {
            ChainError::Malformed { line, .. }
            | ChainError::HashMismatch { line }
            | ChainError::SealMismatch { line }
            | ChainError::ModeMismatch { line, .. }
            | ChainError::Epoch { line, .. }
            | ChainError::BrokenLink { line }
            | ChainError::Sequence { line, .. }
            | ChainError::TornTail { line }
            | ChainError::ManifestMismatch { line, .. }
            | ChainError::CheckpointMismatch { line, .. }
            | ChainError::Truncated { line, .. } => *line,
        }
    }

    /// A short stable name of the kind of break (`hash_mismatch`, `truncated`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            ChainError::Malformed { .. } => "malformed",
            ChainError::HashMismatch { .. } => "hash_mismatch",
            ChainError::SealMismatch { .. } => "seal_mismatch",
            ChainError::ModeMismatch { .. } => "mode_mismatch",
            ChainError::Epoch { .. } => "epoch",
            ChainError::BrokenLink { .. } => "broken_link",
            ChainError::Sequence { .. } => "sequence",
            ChainError::TornTail { .. } => "torn_tail",
            ChainError::ManifestMismatch { .. } => "manifest_mismatch",
            ChainError::CheckpointMismatch { .. } => "checkpoint_mismatch",
            ChainError::Truncated { .. } => "truncated",
        }
    }
}

/// How a verified chain's seals were checked: what its verification proves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SealCheck {
    /// No record.
    Empty,
    /// A plain chain, every SHA-256 checked: integrity against accidents only.
    Integrity,
    /// A keyed chain verified without its key: links and form only, not the seals.
    KeyedUnchecked {
        /// The last record's epoch.
        last_epoch: u64,
    },
    /// A keyed chain, every seal checked with the key.
    Keyed {
        /// The last record's epoch.
        last_epoch: u64,
    },
}

/// What a verified chain holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainSummary {
    /// Number of records.
    pub records: usize,
    /// Hash of the last record ([`GENESIS_HASH`] when empty).
    pub last_hash: String,
    /// The last record's epoch (keyed chains).
    pub last_epoch: Option<u64>,
    /// How the seals were checked.
    pub seals: SealCheck,
    /// Signed checkpoints the chain matched, and the sequence number the last of them names.
    pub checkpoints: Option<(usize, u64)>,
    /// The first record's time in seconds since 1970 (keyed chains: epochs count from it).
    pub first_ts: Option<i64>,
}

impl ChainSummary {
    /// The summary of an empty chain.
    pub fn empty() -> Self {
        ChainSummary {
            records: 0,
            last_hash: GENESIS_HASH.to_owned(),
            last_epoch: None,
            seals: SealCheck::Empty,
            checkpoints: None,
            first_ts: None,
        }
    }

    /// The summary of a plain chain of `records` records ending in `last_hash`, no checkpoint.
    pub fn plain(records: usize, last_hash: impl Into<String>) -> Self {
        ChainSummary {
            records,
            last_hash: last_hash.into(),
            last_epoch: None,
            seals: if records == 0 { SealCheck::Empty } else { SealCheck::Integrity },
            checkpoints: None,
            first_ts: None,
        }
    }

    /// The guarantee the verification gave, in words: `integrity only`, `keyed through epoch
    /// 3`, `keyed through epoch 3; matches checkpoint 2 (record 2000)`.
    pub fn guarantee(&self) -> String {
        let mut out = match self.seals {
            SealCheck::Empty => "empty log".to_owned(),
            SealCheck::Integrity => {
                "integrity only (plain SHA-256 chain: detects accidents, not someone who can write the log)".to_owned()
            }
            SealCheck::KeyedUnchecked { last_epoch } => format!(
                "links only (keyed chain through epoch {last_epoch}; no key was given, so the seals were not checked)"
            ),
            SealCheck::Keyed { last_epoch } => format!("keyed through epoch {last_epoch}"),
        };
        match self.checkpoints {
            Some((n, seq)) => out.push_str(&format!("; matches checkpoint {n} (record {seq})")),
            None if self.records > 0 => out.push_str("; no checkpoint (records cut off the end would go unnoticed)"),
            None => {}
        }
        out
    }
}

/// Checks a chain record by record, in order, holding only the previous record's hash and the
/// current epoch's key: a log of any length verifies in constant memory.
///
/// Every record must be exactly its canonical JSON line (for text logs), match its seal, link to
/// the previous record and carry the next sequence number. With a [`ChainKey`], every record
/// must be keyed and its HMAC must verify under its epoch's key; without one, a plain chain's
/// SHA-256 seals are checked, and a keyed chain's links only. Optionally every record names one
/// manifest, and signed checkpoints (already checked with [`Checkpoint::verify`]) must name
/// records of this chain.
///
/// ```
/// use agents_core::audit::{ChainVerifier, SealCheck};
/// let mut v = ChainVerifier::new();
/// assert_eq!(v.finish().unwrap().seals, SealCheck::Empty);
/// ```
#[derive(Debug)]
pub struct ChainVerifier {
    prev: String,
    count: u64,
    manifest: Option<String>,
    keys: Option<keyed::EpochKeys>,
    policy: EpochPolicy,
    /// Seconds since 1970 of the first record's `ts` (keyed chains).
    first_ts: Option<i64>,
    /// Whether the chain's records are keyed (set by the first record).
    keyed: Option<bool>,
    last_epoch: Option<u64>,
    /// Checkpoints by sequence number: (1-based number, hash).
    checkpoints: std::collections::BTreeMap<u64, (usize, String)>,
    matched: Option<(usize, u64)>,
}

impl Default for ChainVerifier {
    fn default() -> Self {
        Self::new()
    }
}

impl ChainVerifier {
    /// A verifier of a chain from its first record.
    pub fn new() -> Self {
        ChainVerifier {
            prev: GENESIS_HASH.to_owned(),
            count: 0,
            manifest: None,
            keys: None,
            policy: EpochPolicy::default(),
            first_ts: None,
            keyed: None,
            last_epoch: None,
            checkpoints: Default::default(),
            matched: None,
        }
    }

    /// Requires every record to name this manifest hash.
    pub fn manifest(mut self, manifest_sha256: impl Into<String>) -> Self {
        self.manifest = Some(manifest_sha256.into());
        self
    }

    /// Checks every seal with the chain's key (and requires a keyed chain).
    pub fn key(mut self, key: &ChainKey) -> Self {
        self.keys = Some(keyed::EpochKeys::new(key));
        self
    }

    /// The writer's epoch policy (default: [`EpochPolicy::default`]): every keyed record's
    /// epoch must be the one its sequence number and time give.
    pub fn epochs(mut self, policy: EpochPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Requires the chain to match these checkpoints (whose signatures the caller checked).
    /// Several checkpoints naming one record must agree; the later one wins otherwise.
    pub fn checkpoints(mut self, checkpoints: impl IntoIterator<Item = Checkpoint>) -> Self {
        for c in checkpoints {
            self.checkpoints.insert(c.seq, (0, c.hash));
        }
        for (i, (_, (n, _))) in self.checkpoints.iter_mut().enumerate() {
            *n = i + 1;
        }
        self
    }

    /// Records verified so far.
    pub fn records(&self) -> u64 {
        self.count
    }

    /// Verifies one line of a JSONL log (without its newline) as line `line`, and returns its
    /// record.
    pub fn line(&mut self, text: &str, line: usize) -> Result<AuditRecord, ChainError> {
        let record: AuditRecord =
            serde_json::from_str(text).map_err(|e| ChainError::Malformed { line, detail: e.to_string() })?;
        let key = self.check_mode(&record, line)?;
        // The record's canonical line, written once: its seal is checked over it, then it must
        // be the given text.
        let (canonical, hash) = record.members().write_line(record.chain(), Some(&record.hash));
        // A keyed record's seal needs the key; without it only its form and links are checked.
        if (key.is_some() || record.epoch.is_none())
            && crate::canonical::digest_hex(&digest_around(&canonical, hash, key.as_ref())) != record.hash
        {
            return Err(self.seal_error(line));
        }
        // The seal covers the parsed record, so a line re-encoded without changing its meaning
        // (`1E+21` for `1e+21`, an escaped letter) would still match it: require the exact bytes.
        if canonical != text {
            return Err(ChainError::Malformed {
                line,
                detail: "the line is not the record's canonical JSON (it was re-encoded after it was written)"
                    .to_owned(),
            });
        }
        self.link(&record, line)?;
        Ok(record)
    }

    /// Verifies one record read from a store that keeps fields, not lines (a database row), as
    /// the `line`-th record.
    pub fn record(&mut self, record: &AuditRecord, line: usize) -> Result<(), ChainError> {
        let key = self.check_mode(record, line)?;
        if (key.is_some() || record.epoch.is_none())
            && crate::canonical::digest_hex(&record.members().digest(record.chain(), key.as_ref())) != record.hash
        {
            return Err(self.seal_error(line));
        }
        self.link(record, line)
    }

    /// After the last record: the summary, or where a checkpoint names a record the chain does
    /// not reach.
    pub fn finish(&self) -> Result<ChainSummary, ChainError> {
        if let Some((&seq, (number, _))) = self.checkpoints.range(self.count + 1..).next() {
            return Err(ChainError::Truncated {
                line: self.count as usize + 1,
                records: self.count,
                seq,
                number: *number,
            });
        }
        let seals = match (self.keyed, self.last_epoch) {
            (None, _) => SealCheck::Empty,
            (Some(false), _) => SealCheck::Integrity,
            (Some(true), epoch) if self.keys.is_some() => SealCheck::Keyed { last_epoch: epoch.unwrap_or(0) },
            (Some(true), epoch) => SealCheck::KeyedUnchecked { last_epoch: epoch.unwrap_or(0) },
        };
        Ok(ChainSummary {
            records: self.count as usize,
            last_hash: self.prev.clone(),
            last_epoch: self.last_epoch,
            seals,
            checkpoints: self.matched,
            first_ts: self.first_ts,
        })
    }

    fn seal_error(&self, line: usize) -> ChainError {
        if self.keys.is_some() { ChainError::SealMismatch { line } } else { ChainError::HashMismatch { line } }
    }

    /// Checks the record's mode and epoch; the key to check its seal with (`None`: the plain
    /// hash, or a keyed record without a key, whose links only are checked).
    fn check_mode(&mut self, record: &AuditRecord, line: usize) -> Result<Option<EpochKey>, ChainError> {
        let keyed = record.epoch.is_some();
        let expected_keyed = self.keys.is_some() || self.keyed == Some(true);
        if (self.keyed.is_some() || self.keys.is_some()) && keyed != expected_keyed {
            let (found, expected) = if keyed {
                ("a keyed record", "the chain's records are plain")
            } else if self.keys.is_some() {
                ("a plain record", "a key was given, so every record must be keyed")
            } else {
                ("a plain record", "the chain's records are keyed")
            };
            return Err(ChainError::ModeMismatch { line, found, expected });
        }
        let Some(epoch) = record.epoch else {
            return Ok(None);
        };
        let ts = unix_seconds(&record.ts).ok_or_else(|| ChainError::Malformed {
            line,
            detail: format!("`ts` {:?} is not an RFC 3339 time, so the record's epoch cannot be checked", record.ts),
        })?;
        let first_ts = *self.first_ts.get_or_insert(ts);
        let expected = self.policy.epoch_of(record.seq, ts, first_ts);
        let previous = self.last_epoch.unwrap_or(0);
        // Concurrent producers stamp records before they queue: one may reach the writer just
        // after the clock's step, one epoch behind the previous record.
        let behind = TIMESTAMP_GRACE.as_secs() / self.policy.seconds.max(1) + 1;
        // Without the key the seals are not checked, and neither is which epoch sealed a record
        // (that needs the writer's policy); the order of epochs still is.
        let misplaced = self.keys.is_some() && epoch != expected;
        if misplaced || epoch.saturating_add(behind) < previous || epoch - previous.min(epoch) > MAX_EPOCH_GAP {
            return Err(ChainError::Epoch { line, found: epoch, expected, previous });
        }
        Ok(self.keys.as_mut().map(|keys| keys.at(epoch, epoch.saturating_sub(behind))))
    }

    /// Checks links, sequence, manifest and checkpoints, then moves the chain's head on.
    fn link(&mut self, record: &AuditRecord, line: usize) -> Result<(), ChainError> {
        if record.prev_hash != self.prev {
            return Err(ChainError::BrokenLink { line });
        }
        let expected = self.count + 1;
        if record.seq != expected {
            return Err(ChainError::Sequence { line, found: record.seq, expected });
        }
        if let Some(m) = &self.manifest
            && record.manifest_sha256 != m.as_str()
        {
            return Err(ChainError::ManifestMismatch {
                line,
                found: record.manifest_sha256.to_string(),
                expected: m.clone(),
            });
        }
        if let Some((number, hash)) = self.checkpoints.get(&record.seq) {
            if *hash != record.hash {
                return Err(ChainError::CheckpointMismatch {
                    line,
                    seq: record.seq,
                    number: *number,
                    hash: hash.clone(),
                });
            }
            self.matched = Some((*number, record.seq));
        }
        self.keyed = Some(record.epoch.is_some());
        self.last_epoch = record.epoch.or(self.last_epoch);
        record.hash.clone_into(&mut self.prev);
        self.count = expected;
        Ok(())
    }
}

/// Verifies a JSONL audit log held in memory with a [`ChainVerifier`] (no key, no
/// checkpoints): every line parses, is exactly the record's canonical JSON, matches its seal,
/// links to the previous one and has the next sequence number; optionally every record names
/// `manifest_sha256`. Reports the first bad line; an unterminated last line is
/// [`ChainError::TornTail`].
pub fn verify_jsonl(text: &str, manifest_sha256: Option<&str>) -> Result<ChainSummary, ChainError> {
    let mut verifier = ChainVerifier::new();
    if let Some(m) = manifest_sha256 {
        verifier = verifier.manifest(m);
    }
    let ends_with_newline = text.is_empty() || text.ends_with('\n');
    let mut lines = text.split_terminator('\n').enumerate().peekable();
    while let Some((i, line)) = lines.next() {
        let lineno = i + 1;
        if lines.peek().is_none() && !ends_with_newline {
            return Err(ChainError::TornTail { line: lineno });
        }
        verifier.line(line, lineno)?;
    }
    verifier.finish()
}
