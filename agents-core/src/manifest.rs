//! The permission manifest: a deterministic, reviewable statement of everything an agent may
//! do. Canonical JSON (RFC 8785), tools sorted by name, lists sorted, never a secret value.
//! `agent!` computes it at expansion time; [`Manifest::from_specs`] computes the same bytes
//! from the runtime registry.

use crate::agent::{AgentSpec, Limits};
use crate::audit::AuditValues;
use crate::budget::BudgetEntry;
use crate::expose::ExposeEntry;
use crate::knowledge::KnowledgeEntry;
use crate::models::{ModelEntry, ModelEntryError};
pub use crate::skill::SkillEntry;
use crate::skill::{SkillIo, Unskilled};
use crate::subagent::SubAgentEntry;
use crate::tool::{Risk, Tier, ToolSpec};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// The value of the manifest's `format` field.
pub const FORMAT: &str = "agents.permission-manifest";
/// The manifest version this crate writes and reads.
pub const VERSION: u32 = 1;

/// A permission manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Always [`FORMAT`].
    pub format: String,
    /// Always [`VERSION`] for manifests this crate writes.
    pub version: u32,
    /// The agent's declaration.
    pub agent: AgentEntry,
    /// Every granted tool, sorted by name.
    pub tools: Vec<ToolEntry>,
}

/// The agent part of a manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentEntry {
    /// The agent's name.
    pub name: String,
    /// What it is for.
    pub description: String,
    /// Input type as written.
    pub input: String,
    /// Output type as written.
    pub output: String,
    /// Skills, sorted by name, each with sorted tool names.
    pub skills: Vec<SkillEntry>,
    /// The permission ceiling (sorted), or `null` when none is declared.
    pub ceiling: Option<Vec<String>>,
    /// Default limits.
    pub limits: LimitsEntry,
    /// The models it may run on, sorted; absent (read as "any provider") when it declares
    /// none, so a manifest without them keeps its bytes and hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub models: Option<Vec<ModelEntry>>,
    /// Its budget caps per run; absent when it declares none.
    #[serde(default, skip_serializing_if = "BudgetEntry::is_empty")]
    pub budget: BudgetEntry,
    /// Whether the granted tools no skill lists are offered under every skill; absent when
    /// `none` (the default), so a manifest without it keeps its bytes and hash.
    #[serde(default, skip_serializing_if = "Unskilled::is_none")]
    pub unskilled: Unskilled,
    /// Its knowledge sources, sorted by name (see [`crate::knowledge`]); absent when it
    /// declares none, so a manifest without them keeps its bytes and hash.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub knowledge: Vec<KnowledgeEntry>,
    /// The most of a call's values its audit records may keep; absent when it is [`AuditValues::Omitted`] (the
    /// default, the least), so a manifest that does not widen it keeps its bytes and hash, and one that does shows
    /// `"audit_values": "masked"` or `"full"`.
    #[serde(default, skip_serializing_if = "AuditValues::is_omitted")]
    pub audit_values: AuditValues,
    /// How it may be served ([`crate::expose`]): `{"mcp": ["stdio", ...]}`; absent when it
    /// declares no way, so a manifest without it keeps its bytes and hash, and the agent is
    /// then not served over MCP.
    #[serde(default, skip_serializing_if = "ExposeEntry::is_empty")]
    pub expose: ExposeEntry,
    /// The agents it grants ([`crate::subagent`]), sorted by name; absent when it grants none,
    /// so a manifest without them keeps its bytes and hash.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<SubAgentEntry>,
}

/// Limits in a manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsEntry {
    /// Model iterations per run.
    pub max_iterations: u32,
    /// Seconds per provider call.
    pub provider_timeout_secs: u64,
    /// Seconds a confirmation may wait.
    pub confirm_timeout_secs: u64,
    /// Concurrent runs per user.
    pub max_concurrent_runs: u32,
    /// Seconds a confirmation token stays valid.
    pub token_ttl_secs: u64,
    /// Messages of history replayed.
    pub history_messages: u32,
}

impl From<Limits> for LimitsEntry {
    fn from(l: Limits) -> Self {
        LimitsEntry {
            max_iterations: l.max_iterations,
            provider_timeout_secs: l.provider_timeout_secs,
            confirm_timeout_secs: l.confirm_timeout_secs,
            max_concurrent_runs: l.max_concurrent_runs,
            token_ttl_secs: l.token_ttl_secs,
            history_messages: l.history_messages,
        }
    }
}

/// A tool in a manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolEntry {
    /// The name the model calls.
    pub name: String,
    /// The confirm-dialog title.
    pub title: Option<String>,
    /// The doc comment.
    pub description: String,
    /// `area.action` or `public`.
    pub permission: String,
    /// Read, action or handoff.
    pub tier: Tier,
    /// Whether it changes something.
    pub mutating: bool,
    /// Declared risk.
    pub risk: Risk,
    /// Declared capabilities.
    pub policy: PolicyEntry,
    /// Parameters in declaration order.
    pub parameters: Vec<ParamEntry>,
    /// Other tools it invokes, sorted.
    pub uses: Vec<String>,
    /// For a tool imported from an MCP server: the server, the tool's name there and its pin.
    /// Written only for imported tools, so a manifest without them keeps its bytes and hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub import: Option<ImportEntry>,
    /// A handoff tool's target agent ([`crate::subagent`]); absent for other tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff: Option<SubAgentEntry>,
}

/// Where an imported tool comes from, in a manifest (see [`crate::mcp_lock`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportEntry {
    /// The name the application gives the MCP server.
    pub server: String,
    /// The tool's name on that server.
    pub tool: String,
    /// The pin: SHA-256 of the name, description and input schema the server gave.
    pub sha256: String,
    /// The reason the application gave for treating the server as its own (`own_server = "..."` in `mcp_import!`):
    /// the tool's arguments are then not egress (`policy.egress` is absent) and copied values go to it without a
    /// person. Written only when given; without it an imported tool's policy is `egress`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_server: Option<String>,
    /// Where the server is reached ([`crate::mcp_lock::endpoint`] of the lock file's `source`: `stdio: desk-server`,
    /// `http: https://wiki.example.com/mcp`; never a credential). Every tool of one server names the same endpoint,
    /// and the runtime refuses to call the server at another. Absent only in manifests written before it was
    /// recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
}

/// A policy in a manifest; every list sorted and without duplicates.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyEntry {
    /// Filesystem globs.
    pub fs: FsPolicyEntry,
    /// Network hosts.
    pub net: NetPolicyEntry,
    /// Environment variables.
    pub env: EnvPolicyEntry,
    /// Enforced by the kernel in a confined child process (`#[tool(isolated)]`). Written only
    /// when `true`, so a manifest without isolated tools keeps its bytes and its hash.
    #[serde(default, skip_serializing_if = "is_false")]
    pub isolated: bool,
    /// Its arguments leave the application (`#[tool(egress)]`): each call's arguments are
    /// checked for values copied from tool results. Written only when `true`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub egress: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Filesystem part of a policy.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FsPolicyEntry {
    /// Globs that may be read.
    pub read: Vec<String>,
    /// Globs that may be written.
    pub write: Vec<String>,
}

/// Network part of a policy.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetPolicyEntry {
    /// Hosts that may be reached.
    pub hosts: Vec<String>,
}

/// Environment part of a policy.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvPolicyEntry {
    /// Variables that may be read.
    pub vars: Vec<String>,
}

/// A parameter in a manifest. Names and types only: never a value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParamEntry {
    /// The JSON key.
    pub name: String,
    /// The Rust type as written.
    #[serde(rename = "type")]
    pub rust_type: String,
    /// Marked `#[secret]`.
    pub secret: bool,
}

impl ParamEntry {
    /// Whether the parameter's values are masked: marked `#[secret]`, or of a type that names
    /// [`crate::Secret`] (see [`type_names_secret`]).
    pub fn is_secret(&self) -> bool {
        self.secret || type_names_secret(&self.rust_type)
    }
}

/// Whether a type, as written, names `Secret` in any path segment or generic argument
/// (`Secret<String>`, `Option<agents::Secret<u64>>`, `Vec<Secret<T>>`): such a parameter's
/// values are masked wherever they appear, so the manifest records it as secret however the
/// secrecy was declared.
pub fn type_names_secret(rust_type: &str) -> bool {
    rust_type.split(|c: char| !(c.is_alphanumeric() || c == '_')).any(|ident| ident == "Secret")
}

/// Why a manifest cannot be built or read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ManifestError {
    /// Two granted tools share a name.
    #[error("two tools are named `{0}`; tool names must be unique within an agent")]
    DuplicateTool(String),
    /// A skill lists a tool the agent does not grant.
    #[error("skill `{skill}` lists `{tool}`, which the agent does not grant")]
    SkillToolNotGranted {
        /// The skill.
        skill: String,
        /// The tool.
        tool: String,
    },
    /// The text is not JSON or not a manifest.
    #[error("not a permission manifest: {0}")]
    NotAManifest(String),
    /// The format field is wrong.
    #[error("unknown manifest format `{0}`; expected `{FORMAT}`")]
    WrongFormat(String),
    /// Another version.
    #[error("manifest version {0} is not supported; this build reads version {VERSION}")]
    WrongVersion(u64),
    /// A key appears twice in one object: readers would disagree on which one counts.
    #[error(
        "duplicate key `{key}` at line {line} column {column} (`{path}`); each key may appear only once in an object, or the manifest has two readings"
    )]
    DuplicateKey {
        /// JSON pointer of the repeated member.
        path: String,
        /// The key.
        key: String,
        /// 1-based line.
        line: usize,
        /// 1-based column (the end of the repeated key).
        column: usize,
    },
    /// Two tools (or skills, or parameters of one tool) share a name.
    #[error(
        "two {kind}s are named `{name}` (the second at line {line} column {column}); each {kind} may appear only once, or the manifest has two readings"
    )]
    DuplicateName {
        /// `tool`, `skill` or `parameter`.
        kind: &'static str,
        /// The repeated name.
        name: String,
        /// 1-based line of the second occurrence.
        line: usize,
        /// 1-based column of the second occurrence (the end of its name).
        column: usize,
    },
    /// A policy entry that [`crate::policy`] refuses.
    #[error("tool `{tool}` {field} entry `{entry}` is refused: {reason}")]
    InvalidPolicyEntry {
        /// The tool.
        tool: String,
        /// `policy.fs.read`, `policy.fs.write`, `policy.net.hosts` or `policy.env.vars`.
        field: &'static str,
        /// The entry as written.
        entry: String,
        /// Why.
        reason: String,
    },
    /// The text reads as a manifest but is not that manifest's canonical text.
    #[error(
        "the text is not in canonical form (it does not round-trip to its own canonical bytes: formatting, order or repeated list entries differ), so its SHA-256 is not the manifest's hash"
    )]
    NotCanonical,
    /// A declared model does not fit its kind.
    #[error(transparent)]
    InvalidModel(#[from] ModelEntryError),
    /// `models` is an empty list: no provider could run the agent.
    #[error(
        "`agent.models` is an empty list, so no provider could run the agent; declare at least one model, or leave `models` out to allow any provider"
    )]
    NoModels,
    /// A budget cap the manifest cannot hold.
    #[error("{0}")]
    InvalidBudget(String),
    /// Fields of one tool contradict each other.
    #[error("tool `{tool}` says `mutating: {mutating}` with tier `{tier}`; an action tool is mutating and no other is")]
    MutatingMismatch {
        /// The tool.
        tool: String,
        /// What the file says.
        mutating: bool,
        /// The tier.
        tier: Tier,
    },
    /// Two knowledge sources share a name.
    #[error("two knowledge sources are named `{0}`; give each source its own name")]
    DuplicateKnowledge(String),
    /// Two tools imported from one MCP server name two endpoints for it.
    #[error(
        "MCP server `{server}` is named with two endpoints (`{first}` and `{second}`); a server has one endpoint: pin its tools from one place (`agents mcp pin`) and import them from one lock file"
    )]
    ServerEndpoints {
        /// The server's name.
        server: String,
        /// One endpoint.
        first: String,
        /// The other.
        second: String,
    },
    /// A reviewed manifest document (see [`crate::reviewed`]) that cannot be read.
    #[error("not a reviewed manifest document: {0}")]
    InvalidReviewed(String),
    /// Two granted agents share a name.
    #[error("two granted agents are named `{0}`; the agents an agent grants must have distinct names")]
    DuplicateAgent(String),
}

impl ToolEntry {
    /// The manifest entry of a tool spec.
    pub fn from_spec(spec: &ToolSpec) -> Self {
        ToolEntry {
            name: spec.name.to_owned(),
            title: spec.title.map(str::to_owned),
            description: spec.description.to_owned(),
            permission: spec.permission.to_owned(),
            tier: spec.tier,
            mutating: spec.mutating(),
            risk: spec.risk,
            policy: PolicyEntry {
                fs: FsPolicyEntry { read: owned(spec.policy.fs_read), write: owned(spec.policy.fs_write) },
                net: NetPolicyEntry { hosts: owned(spec.policy.net_hosts) },
                env: EnvPolicyEntry { vars: owned(spec.policy.env_vars) },
                isolated: spec.policy.isolated,
                egress: spec.policy.egress,
            },
            parameters: spec
                .params
                .iter()
                .map(|p| ParamEntry { name: p.name.to_owned(), rust_type: p.rust_type.to_owned(), secret: p.secret })
                .collect(),
            uses: owned(spec.uses),
            import: spec.import.map(|i| ImportEntry {
                server: i.server.to_owned(),
                tool: i.tool.to_owned(),
                sha256: i.sha256.to_owned(),
                own_server: i.own_server.map(str::to_owned),
                endpoint: Some(i.endpoint.to_owned()),
            }),
            handoff: spec.handoff.as_ref().map(SubAgentEntry::from_spec),
        }
        .normalized()
    }

    /// Sorts and deduplicates every list whose order carries no meaning.
    pub fn normalized(mut self) -> Self {
        sort_dedup(&mut self.policy.fs.read);
        sort_dedup(&mut self.policy.fs.write);
        sort_dedup(&mut self.policy.net.hosts);
        sort_dedup(&mut self.policy.env.vars);
        sort_dedup(&mut self.uses);
        self.mutating = self.tier == Tier::Action;
        self
    }
}

impl ToolEntry {
    /// Refuses policy entries that [`crate::policy`] refuses.
    pub fn check_policy(&self) -> Result<(), ManifestError> {
        use crate::policy::{Glob, HostPattern, check_env_var};
        let p = &self.policy;
        let bad =
            |field: &'static str, entry: &str, e: crate::policy::PolicyEntryError| ManifestError::InvalidPolicyEntry {
                tool: self.name.clone(),
                field,
                entry: entry.to_owned(),
                reason: e.reason().to_owned(),
            };
        for (field, list) in [("policy.fs.read", &p.fs.read), ("policy.fs.write", &p.fs.write)] {
            for g in list {
                Glob::parse(g).map_err(|e| bad(field, g, e))?;
            }
        }
        for h in &p.net.hosts {
            HostPattern::parse(h).map_err(|e| bad("policy.net.hosts", h, e))?;
        }
        for v in &p.env.vars {
            check_env_var(v).map_err(|e| bad("policy.env.vars", v, e))?;
        }
        Ok(())
    }
}

impl AgentEntry {
    /// The entry of an agent that declares nothing beyond its name and description: `String`
    /// in and out, no skills, no ceiling, the default limits, any model, no budget caps, no
    /// knowledge, no values kept by its audit records, not served over MCP. For building
    /// manifests by hand (tests, tools); change a field with struct update syntax.
    ///
    /// ```
    /// use agents_core::manifest::AgentEntry;
    /// let agent = AgentEntry { input: "Question".into(), ..AgentEntry::new("desk", "Answers.") };
    /// assert_eq!(agent.output, "String");
    /// ```
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        AgentEntry {
            name: name.into(),
            description: description.into(),
            input: "String".into(),
            output: "String".into(),
            skills: Vec::new(),
            unskilled: Unskilled::default(),
            ceiling: None,
            limits: LimitsEntry::from(crate::Limits::DEFAULT),
            models: None,
            budget: Default::default(),
            knowledge: Vec::new(),
            audit_values: AuditValues::default(),
            expose: ExposeEntry::default(),
            agents: Vec::new(),
        }
    }

    /// The manifest entry of an agent spec.
    pub fn from_spec(spec: &AgentSpec) -> Self {
        AgentEntry {
            name: spec.name.to_owned(),
            description: spec.description.to_owned(),
            input: spec.input.to_owned(),
            output: spec.output.to_owned(),
            skills: spec
                .skills
                .iter()
                .map(|s| SkillEntry::of(s.name, owned(s.tools), s.io.map(SkillIo::from_spec)))
                .collect(),
            ceiling: spec.ceiling.map(owned),
            limits: spec.limits.into(),
            models: spec.models.map(|m| m.iter().map(ModelEntry::from_spec).collect()),
            budget: spec.budget.into(),
            unskilled: spec.unskilled,
            knowledge: spec.knowledge.iter().map(KnowledgeEntry::from_spec).collect(),
            audit_values: spec.audit_values,
            expose: ExposeEntry { mcp: spec.expose_mcp.to_vec() },
            agents: Vec::new(),
        }
    }
}

impl AgentEntry {
    /// Refuses a declared model that does not fit its kind, an empty list of models and a
    /// budget cap of 0.
    pub fn check_surface(&self) -> Result<(), ManifestError> {
        if let Some(models) = &self.models {
            if models.is_empty() {
                return Err(ManifestError::NoModels);
            }
            models.iter().try_for_each(ModelEntry::check)?;
        }
        self.budget.check().map_err(ManifestError::InvalidBudget)
    }
}

impl Manifest {
    /// Builds a manifest from entries: sorts tools, skills and every unordered list, and
    /// refuses duplicate tool names and skills naming ungranted tools.
    pub fn from_entries(mut agent: AgentEntry, tools: Vec<ToolEntry>) -> Result<Self, ManifestError> {
        let mut tools: Vec<ToolEntry> = tools.into_iter().map(ToolEntry::normalized).collect();
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        if let Some(w) = tools.windows(2).find(|w| w[0].name == w[1].name) {
            return Err(ManifestError::DuplicateTool(w[0].name.clone()));
        }
        check_server_endpoints(&tools)?;
        let names: BTreeSet<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        for skill in &mut agent.skills {
            sort_dedup(&mut skill.tools);
            if let Some(t) = skill.tools.iter().find(|t| !names.contains(t.as_str())) {
                return Err(ManifestError::SkillToolNotGranted { skill: skill.name.clone(), tool: t.clone() });
            }
        }
        agent.skills.sort_by(|a, b| a.name.cmp(&b.name));
        if let Some(c) = &mut agent.ceiling {
            sort_dedup(c);
        }
        if let Some(m) = &mut agent.models {
            sort_dedup(m);
        }
        sort_dedup(&mut agent.expose.mcp);
        crate::subagent::sort_granted(&mut agent.agents).map_err(ManifestError::DuplicateAgent)?;
        agent.knowledge.sort();
        if let Some(w) = agent.knowledge.windows(2).find(|w| w[0].name == w[1].name) {
            return Err(ManifestError::DuplicateKnowledge(w[0].name.clone()));
        }
        Ok(Manifest { format: FORMAT.to_owned(), version: VERSION, agent, tools })
    }

    /// The manifest of an agent spec and its tool specs, as the runtime sees them.
    pub fn from_specs(agent: &AgentSpec, tools: &[&ToolSpec]) -> Result<Self, ManifestError> {
        Self::from_specs_granting(agent, &[], tools)
    }

    /// The canonical JSON text: exactly the bytes `MANIFEST` holds.
    pub fn to_canonical_string(&self) -> String {
        let value = serde_json::to_value(self).expect("a manifest always serializes");
        crate::canonical::to_string(&value)
    }

    /// Lowercase hex SHA-256 of the canonical text.
    pub fn sha256(&self) -> String {
        crate::canonical::sha256_hex(self.to_canonical_string().as_bytes())
    }

    /// Reads a manifest: the one reading every command and the baseline gate use.
    ///
    /// Checks the format and version first, so that the error says what is wrong; refuses a key repeated in any
    /// object and a tool, skill or parameter name repeated in its list (each with its line and column), numbers
    /// beyond ±2^53, unknown fields, policy entries that [`crate::policy`] refuses and a `mutating` flag that
    /// contradicts the tier. The result is normalized as [`Manifest::from_entries`] does (tools and unordered lists
    /// sorted, duplicates in those lists removed), so a file that is not in that form does not equal its own
    /// [`Manifest::to_canonical_string`]; [`Manifest::is_canonical_text`] says whether it is.
    pub fn parse(text: &str) -> Result<Self, ManifestError> {
        let value = read_strict(text)?;
        let obj = value
            .as_object()
            .ok_or_else(|| ManifestError::NotAManifest("the top level is not a JSON object".into()))?;
        match obj.get("format").and_then(|f| f.as_str()) {
            Some(FORMAT) => {}
            Some(other) => return Err(ManifestError::WrongFormat(other.to_owned())),
            None => return Err(ManifestError::NotAManifest("no `format` field".into())),
        }
        match obj.get("version").and_then(|v| v.as_u64()) {
            Some(v) if v == u64::from(VERSION) => {}
            Some(v) => return Err(ManifestError::WrongVersion(v)),
            None => return Err(ManifestError::NotAManifest("no numeric `version` field".into())),
        }
        names::check_unique(text)?;
        let parsed: Manifest = serde_json::from_value(value).map_err(|e| ManifestError::NotAManifest(e.to_string()))?;
        parsed.agent.check_surface()?;
        for t in &parsed.tools {
            t.check_policy()?;
            if t.mutating != (t.tier == Tier::Action) {
                return Err(ManifestError::MutatingMismatch {
                    tool: t.name.clone(),
                    mutating: t.mutating,
                    tier: t.tier,
                });
            }
        }
        Manifest::from_entries(parsed.agent, parsed.tools)
    }

    /// Whether `text` is exactly this manifest's canonical text (so that its SHA-256 is the
    /// agent's `MANIFEST_SHA256`). A file that [`Manifest::parse`] reads but that is not
    /// canonical (formatting, order, repeated list entries) is reported as such by every
    /// command.
    pub fn is_canonical_text(&self, text: &[u8]) -> bool {
        text == self.to_canonical_string().as_bytes()
    }

    /// A tool by name.
    pub fn tool(&self, name: &str) -> Option<&ToolEntry> {
        self.tools.iter().find(|t| t.name == name)
    }
}

/// Reads JSON text with [`crate::strict`] (a repeated key refused with its line and column),
/// its errors said as a manifest's.
pub(crate) fn read_strict(text: &str) -> Result<serde_json::Value, ManifestError> {
    crate::strict::parse_args(text).map_err(|e| match e {
        crate::strict::StrictError::DuplicateKey { path, key, line, column } => {
            ManifestError::DuplicateKey { path, key, line, column }
        }
        crate::strict::StrictError::NotAnObject { .. } => {
            ManifestError::NotAManifest("the top level is not a JSON object".into())
        }
        crate::strict::StrictError::Syntax { line, column, detail, .. } => {
            ManifestError::NotAManifest(format!("{detail} at line {line} column {column}"))
        }
        crate::strict::StrictError::TrailingCharacters { line, column } => ManifestError::NotAManifest(format!(
            "unexpected characters after the manifest object at line {line} column {column}"
        )),
        other => ManifestError::NotAManifest(other.to_string()),
    })
}

/// Refuses tools of one MCP server that name two endpoints for it.
fn check_server_endpoints(tools: &[ToolEntry]) -> Result<(), ManifestError> {
    let mut seen: std::collections::BTreeMap<&str, &str> = std::collections::BTreeMap::new();
    for import in tools.iter().filter_map(|t| t.import.as_ref()) {
        let Some(endpoint) = import.endpoint.as_deref() else { continue };
        match seen.insert(&import.server, endpoint) {
            Some(first) if first != endpoint => {
                return Err(ManifestError::ServerEndpoints {
                    server: import.server.clone(),
                    first: first.to_owned(),
                    second: endpoint.to_owned(),
                });
            }
            _ => {}
        }
    }
    Ok(())
}

fn owned(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

fn sort_dedup<T: Ord>(v: &mut Vec<T>) {
    v.sort();
    v.dedup();
}

/// The second look at a manifest's text: names repeated in a list of named objects, found
/// where they are written so the error can give the line and column.
mod names {
    use super::ManifestError;
    use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
    use std::cell::RefCell;
    use std::collections::BTreeSet;
    use std::fmt;

    /// The repetition found, kept beside serde's error (which carries the position).
    #[derive(Default)]
    struct Found(RefCell<Option<(&'static str, String)>>);

    pub(super) fn check_unique(text: &str) -> Result<(), ManifestError> {
        let found = Found::default();
        let mut de = serde_json::Deserializer::from_str(text);
        match (Walk { found: &found, list: None }).deserialize(&mut de) {
            Ok(()) => Ok(()),
            Err(e) => match found.0.into_inner() {
                Some((kind, name)) => {
                    Err(ManifestError::DuplicateName { kind, name, line: e.line(), column: e.column() })
                }
                // The strict parse before this one already accepted the text.
                None => Err(ManifestError::NotAManifest(e.to_string())),
            },
        }
    }

    /// Any value; `list` names what an array under the current key holds.
    #[derive(Clone, Copy)]
    struct Walk<'a> {
        found: &'a Found,
        list: Option<&'static str>,
    }

    /// One element of a list of named objects.
    struct Element<'a> {
        found: &'a Found,
        kind: &'static str,
        seen: &'a RefCell<BTreeSet<String>>,
    }

    /// The visits of scalars, which hold no repeated name: the same for every visitor here.
    macro_rules! scalars_are_not_names {
        () => {
            fn visit_bool<E>(self, _: bool) -> Result<(), E> {
                Ok(())
            }
            fn visit_i64<E>(self, _: i64) -> Result<(), E> {
                Ok(())
            }
            fn visit_u64<E>(self, _: u64) -> Result<(), E> {
                Ok(())
            }
            fn visit_f64<E>(self, _: f64) -> Result<(), E> {
                Ok(())
            }
            fn visit_str<E>(self, _: &str) -> Result<(), E> {
                Ok(())
            }
            fn visit_unit<E>(self) -> Result<(), E> {
                Ok(())
            }
        };
    }

    fn kind_of(key: &str) -> Option<&'static str> {
        match key {
            "tools" => Some("tool"),
            "skills" => Some("skill"),
            "parameters" => Some("parameter"),
            _ => None,
        }
    }

    impl<'de> DeserializeSeed<'de> for Walk<'_> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_any(self)
        }
    }

    impl<'de> Visitor<'de> for Walk<'_> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a JSON value")
        }
        scalars_are_not_names!();
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
            match self.list {
                Some(kind) => {
                    let seen = RefCell::new(BTreeSet::new());
                    while seq.next_element_seed(Element { found: self.found, kind, seen: &seen })?.is_some() {}
                }
                None => while seq.next_element_seed(Walk { found: self.found, list: None })?.is_some() {},
            }
            Ok(())
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<String>()? {
                map.next_value_seed(Walk { found: self.found, list: kind_of(&key) })?;
            }
            Ok(())
        }
    }

    impl<'de> DeserializeSeed<'de> for Element<'_> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_any(self)
        }
    }

    impl<'de> Visitor<'de> for Element<'_> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a JSON value")
        }
        scalars_are_not_names!();
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(())
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<String>()? {
                if key == "name" {
                    let value: serde_json::Value = map.next_value()?;
                    if let Some(name) = value.as_str()
                        && !self.seen.borrow_mut().insert(name.to_owned())
                    {
                        *self.found.0.borrow_mut() = Some((self.kind, name.to_owned()));
                        return Err(de::Error::custom(format!("two {}s are named `{name}`", self.kind)));
                    }
                } else {
                    map.next_value_seed(Walk { found: self.found, list: kind_of(&key) })?;
                }
            }
            Ok(())
        }
    }
}
