//! The audit record and the values it holds: what happened ([`AuditStatus`]), what a record
//! keeps of a result ([`AuditResult`]) and of an imported tool's call ([`AuditImport`]).

use crate::tool::Tier;
use crate::{SharedStr, SharedValue};
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
///
/// Non-exhaustive: new kinds of record are added as the runtime learns to show more (the run
/// records and notices were). Code outside this crate that matches on a status needs an arm
/// for the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
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
    /// The skill a run works within was chosen (its name, who chose it and the tools it
    /// offers are in `result`; see `agents_core::skill`).
    SkillChosen,
    /// A person approved a proposal the application's policy asks a second confirmation of
    /// (a value in it came from content the user did not write): nothing runs yet; the same
    /// person must approve again, acknowledging the warning (the `confirmed` record that
    /// follows says so). Not a final record.
    FirstApproval,
}

impl AuditStatus {
    /// Every status, in declaration order (`ALL[s as usize] == s`).
    pub const ALL: [AuditStatus; 15] = [
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
        AuditStatus::SkillChosen,
        AuditStatus::FirstApproval,
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
            AuditStatus::SkillChosen => "skill_chosen",
            AuditStatus::FirstApproval => "first_approval",
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

/// Where a record's run sits in a composite's run tree ([`AuditRecord::node`]): the tree's
/// own records name the composite alone; a node's records name the tree's run and the node's
/// path from the composite.
///
/// ```
/// use agents_core::audit::AuditNode;
///
/// let node = AuditNode { parent_run_id: Some("run-1".into()), path: "kyc-pipeline/kyc-reviewer".into() };
/// assert_eq!(node.to_value(), serde_json::json!({"parent_run_id": "run-1", "path": "kyc-pipeline/kyc-reviewer"}));
/// let root = AuditNode { parent_run_id: None, path: "kyc-pipeline".into() };
/// assert!(root.to_value().get("parent_run_id").is_none(), "absent, not null, on the tree's own records");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditNode {
    /// The run id of the tree (its root run); absent on the tree's own records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_run_id: Option<String>,
    /// The node's path from the composite's name, ids joined by `/`
    /// (`kyc-pipeline/kyc-reviewer`); the composite's name alone on the tree's own records.
    pub path: String,
}

impl AuditNode {
    /// As JSON, as the record holds it.
    pub fn to_value(&self) -> Value {
        let mut map = serde_json::Map::new();
        if let Some(parent) = &self.parent_run_id {
            map.insert("parent_run_id".to_owned(), Value::String(parent.clone()));
        }
        map.insert("path".to_owned(), Value::String(self.path.clone()));
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
    /// The arguments (shared by the records of one call), as the run's
    /// [`AuditValues`](super::AuditValues) setting keeps them: by default each argument's name
    /// with a keyed digest of its value ([`values_omitted`](super::values_omitted) tells), or
    /// the values with secret positions masked.
    pub args: Option<SharedValue>,
    /// HMAC-SHA-256 (server key) of the canonical real arguments of an action call: joins a
    /// proposal, its approval and its execution without storing the values (`None` for
    /// read and handoff calls, whose records join by `call_id`).
    pub args_hash: Option<String>,
    /// The result (redacted), only when [`AuditValues::Full`](super::AuditValues::Full) is
    /// opted in; otherwise its keyed digest.
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
    /// For a record of a composite's run tree: the tree's run and the node's path. Absent (not
    /// `null`) for every other record, so records written before composites ran keep their
    /// JSON and hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<AuditNode>,
}

impl AuditRecord {
    /// Whether this record's arguments hold no value, only names and keyed digests (a record
    /// written under [`AuditValues::Omitted`](super::AuditValues::Omitted)): what readers
    /// show as "values omitted".
    pub fn values_omitted(&self) -> bool {
        self.args.as_ref().is_some_and(|a| super::values_omitted(a.as_value()))
    }
}
