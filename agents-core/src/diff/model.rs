//! The diff's model: how a change affects what the agent may do ([`ChangeKind`]), the rule
//! that classified it ([`Rule`]), one classified difference ([`Change`]) and all of them
//! ([`ManifestDiff`]), each rendered for a reader.

use crate::terminal::escape;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::fmt;

/// How a change affects what the agent may do.
///
/// Non-exhaustive: a finer kind may be added (a change a reviewer must look at that is not
/// known to widen). Code outside this crate that matches on a kind needs an arm for the others,
/// and a gate should fail on a kind it does not know.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ChangeKind {
    /// The agent may do something it could not do before. A baseline gate must fail.
    Widening,
    /// The agent may do less than before.
    Narrowing,
    /// Nothing the agent may do changed; shown so a reviewer sees every difference.
    Neutral,
}

impl ChangeKind {
    /// The lowercase name.
    pub const fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Widening => "widening",
            ChangeKind::Narrowing => "narrowing",
            ChangeKind::Neutral => "neutral",
        }
    }
}

impl fmt::Display for ChangeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The rule that classified a change. Serialized in snake_case.
///
/// Non-exhaustive: every new field of the manifest brings its rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Rule {
    /// A tool was granted.
    ToolAdded,
    /// A tool is no longer granted.
    ToolRemoved,
    /// A tool's permission changed.
    PermissionChanged,
    /// A tool is no longer `mutating`: its calls no longer wait for a person.
    MutatingRemoved,
    /// A tool became `mutating`.
    MutatingAdded,
    /// A tool is no longer `isolated`: its policy binds only cooperating code.
    IsolationRemoved,
    /// A tool became `isolated`: the kernel enforces its policy in a confined process.
    IsolationAdded,
    /// A tool is no longer marked `egress`: values copied from tool results into its
    /// arguments no longer wait for a person (unless it declares a host).
    EgressRemoved,
    /// A tool became `egress`: its calls' arguments are checked for where they came from.
    EgressAdded,
    /// A tool's tier moved towards `read` (handoff → action → read).
    TierLowered,
    /// A tool's tier moved towards `handoff`.
    TierRaised,
    /// A tool's declared risk went down.
    RiskLowered,
    /// A tool's declared risk went up.
    RiskRaised,
    /// A policy entry (glob, host, variable) was added that no old entry covers.
    PolicyAdded,
    /// A policy entry was replaced by a broader one.
    PolicyBroadened,
    /// A policy entry was removed and nothing new covers it.
    PolicyRemoved,
    /// A policy entry was replaced by a narrower one.
    PolicyNarrowed,
    /// A policy entry was added or removed, but what it covers was and is covered.
    PolicyCovered,
    /// A parameter stopped being secret (`#[secret]` removed, or its type no longer names
    /// `Secret`): its values will appear unmasked.
    SecretRemoved,
    /// A parameter became secret.
    SecretAdded,
    /// A parameter was added: the model controls a new input.
    ParameterAdded,
    /// A parameter was removed.
    ParameterRemoved,
    /// A parameter's type changed: a widening, since the manifest holds only the type's name
    /// and so cannot show that the new type admits no new values.
    ParameterTypeChanged,
    /// The parameters were reordered.
    ParametersReordered,
    /// A tool now invokes another tool.
    UsesAdded,
    /// A tool no longer invokes another tool.
    UsesRemoved,
    /// A tool's confirm-dialog title changed.
    TitleChanged,
    /// A tool's description changed.
    DescriptionChanged,
    /// The agent's permission ceiling was removed.
    CeilingRemoved,
    /// The agent gained a permission ceiling.
    CeilingAdded,
    /// A permission was added to the ceiling.
    CeilingRaised,
    /// A permission was removed from the ceiling.
    CeilingLowered,
    /// A default limit went up.
    LimitRaised,
    /// A default limit went down.
    LimitLowered,
    /// A skill was added, removed or regrouped.
    SkillsChanged,
    /// The agent's name changed.
    AgentRenamed,
    /// The agent's description changed.
    AgentDescriptionChanged,
    /// The agent's input or output type changed.
    IoTypeChanged,
    /// An imported tool's pin, server or name on its server changed (or a tool became or
    /// stopped being imported): the text the model reads and the schema it fills come from
    /// elsewhere now.
    ImportChanged,
    /// The agent's declared models were removed: it may run on any provider.
    ModelsAny,
    /// The agent declared its models, where any provider was allowed.
    ModelsDeclared,
    /// A model was added to the declared ones (or one admits more hosts).
    ModelAdded,
    /// A model was removed from the declared ones (or one admits fewer hosts).
    ModelRemoved,
    /// A model was added or removed, but what it admits was and is admitted.
    ModelCovered,
    /// A budget cap per run was removed.
    BudgetCapRemoved,
    /// A budget cap per run was declared.
    BudgetCapDeclared,
    /// A budget cap per run went up.
    BudgetCapRaised,
    /// A budget cap per run went down.
    BudgetCapLowered,
    /// A skill offers an action tool it did not offer: a new skill reaching an action, an
    /// action tool moved into a skill, or one shared with every skill by `unskilled: shared`.
    SkillReachesAction,
    /// The agent's `unskilled` changed: `none` → `shared` (neutral: the actions it shares are
    /// each a [`Rule::SkillReachesAction`]), `shared` → `none` (narrowing).
    UnskilledChanged,
    /// A knowledge source was declared: new text reaches the model.
    KnowledgeAdded,
    /// A knowledge source was removed.
    KnowledgeRemoved,
    /// A knowledge source's contents changed (its SHA-256): text a reviewer has not read
    /// reaches the model.
    KnowledgeChanged,
    /// A knowledge source's path changed, its contents (SHA-256) the same.
    KnowledgeMoved,
    /// The audit records may keep more of a call's values (omitted → masked → full).
    AuditValuesWidened,
    /// The audit records keep less of a call's values.
    AuditValuesNarrowed,
    /// A composite gained a node (a wrap is [`Rule::GuardAdded`]).
    NodeAdded,
    /// A composite lost a node (a wrap is [`Rule::GuardRemoved`]).
    NodeRemoved,
    /// A composite gained an edge: widening when a run entering its target may reach an
    /// action or a handoff.
    EdgeAdded,
    /// A composite lost an edge.
    EdgeRemoved,
    /// An agent node's manifest SHA-256 changed and its manifests were not given, so what
    /// changed was not inspected.
    NodeManifestChanged,
    /// A composite (or one of its agent nodes) gained a tool, action, handoff or permission.
    CapabilityAdded,
    /// A composite (or one of its agent nodes) lost a tool, action, handoff or permission.
    CapabilityRemoved,
    /// A wrap node, or one of its steps, was removed: a guard no longer runs.
    GuardRemoved,
    /// A wrap node, or a step of one, was added.
    GuardAdded,
    /// A branch's router changed: code → model (widening: text the model read may choose the
    /// arm) or model → code.
    RouterChanged,
    /// A parallel's failure policy changed: fail_fast → collect (widening: the other members
    /// run on after one fails) or collect → fail_fast.
    FailurePolicyChanged,
    /// A parallel's join changed.
    JoinChanged,
    /// Tools are imported from an MCP server the old manifest did not name.
    McpServerAdded,
    /// No tool is imported from an MCP server any more.
    McpServerRemoved,
    /// An MCP server is reached at another endpoint (another program, host, scheme or path).
    McpEndpointChanged,
    /// The agent may be served over MCP in a way it could not (a transport, or HTTP behind
    /// another kind of authentication).
    McpExposureAdded,
    /// The agent is no longer served over MCP in a way it was.
    McpExposureRemoved,
    /// A composite's run starts at another node.
    EntryChanged,
}

impl Rule {
    /// The snake_case name (as serialized).
    pub const fn as_str(self) -> &'static str {
        match self {
            Rule::ToolAdded => "tool_added",
            Rule::ToolRemoved => "tool_removed",
            Rule::PermissionChanged => "permission_changed",
            Rule::MutatingRemoved => "mutating_removed",
            Rule::MutatingAdded => "mutating_added",
            Rule::IsolationRemoved => "isolation_removed",
            Rule::IsolationAdded => "isolation_added",
            Rule::EgressRemoved => "egress_removed",
            Rule::EgressAdded => "egress_added",
            Rule::TierLowered => "tier_lowered",
            Rule::TierRaised => "tier_raised",
            Rule::RiskLowered => "risk_lowered",
            Rule::RiskRaised => "risk_raised",
            Rule::PolicyAdded => "policy_added",
            Rule::PolicyBroadened => "policy_broadened",
            Rule::PolicyRemoved => "policy_removed",
            Rule::PolicyNarrowed => "policy_narrowed",
            Rule::PolicyCovered => "policy_covered",
            Rule::SecretRemoved => "secret_removed",
            Rule::SecretAdded => "secret_added",
            Rule::ParameterAdded => "parameter_added",
            Rule::ParameterRemoved => "parameter_removed",
            Rule::ParameterTypeChanged => "parameter_type_changed",
            Rule::ParametersReordered => "parameters_reordered",
            Rule::UsesAdded => "uses_added",
            Rule::UsesRemoved => "uses_removed",
            Rule::TitleChanged => "title_changed",
            Rule::DescriptionChanged => "description_changed",
            Rule::CeilingRemoved => "ceiling_removed",
            Rule::CeilingAdded => "ceiling_added",
            Rule::CeilingRaised => "ceiling_raised",
            Rule::CeilingLowered => "ceiling_lowered",
            Rule::LimitRaised => "limit_raised",
            Rule::LimitLowered => "limit_lowered",
            Rule::SkillsChanged => "skills_changed",
            Rule::AgentRenamed => "agent_renamed",
            Rule::AgentDescriptionChanged => "agent_description_changed",
            Rule::IoTypeChanged => "io_type_changed",
            Rule::ImportChanged => "import_changed",
            Rule::ModelsAny => "models_any",
            Rule::ModelsDeclared => "models_declared",
            Rule::ModelAdded => "model_added",
            Rule::ModelRemoved => "model_removed",
            Rule::ModelCovered => "model_covered",
            Rule::BudgetCapRemoved => "budget_cap_removed",
            Rule::BudgetCapDeclared => "budget_cap_declared",
            Rule::BudgetCapRaised => "budget_cap_raised",
            Rule::BudgetCapLowered => "budget_cap_lowered",
            Rule::SkillReachesAction => "skill_reaches_action",
            Rule::UnskilledChanged => "unskilled_changed",
            Rule::KnowledgeAdded => "knowledge_added",
            Rule::KnowledgeRemoved => "knowledge_removed",
            Rule::KnowledgeChanged => "knowledge_changed",
            Rule::KnowledgeMoved => "knowledge_moved",
            Rule::AuditValuesWidened => "audit_values_widened",
            Rule::AuditValuesNarrowed => "audit_values_narrowed",
            Rule::NodeAdded => "node_added",
            Rule::NodeRemoved => "node_removed",
            Rule::EdgeAdded => "edge_added",
            Rule::EdgeRemoved => "edge_removed",
            Rule::NodeManifestChanged => "node_manifest_changed",
            Rule::CapabilityAdded => "capability_added",
            Rule::CapabilityRemoved => "capability_removed",
            Rule::GuardRemoved => "guard_removed",
            Rule::GuardAdded => "guard_added",
            Rule::RouterChanged => "router_changed",
            Rule::FailurePolicyChanged => "failure_policy_changed",
            Rule::JoinChanged => "join_changed",
            Rule::McpServerAdded => "mcp_server_added",
            Rule::McpServerRemoved => "mcp_server_removed",
            Rule::McpEndpointChanged => "mcp_endpoint_changed",
            Rule::McpExposureAdded => "mcp_exposure_added",
            Rule::McpExposureRemoved => "mcp_exposure_removed",
            Rule::EntryChanged => "entry_changed",
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One classified difference.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// Widening, narrowing or neutral.
    pub kind: ChangeKind,
    /// The rule that decided the kind.
    pub rule: Rule,
    /// The tool the change is about, or `None` for the agent itself.
    pub tool: Option<String>,
    /// The manifest field, for example `policy.fs.read` (of a tool) or `limits.max_iterations`
    /// (of the agent); `tool` when a whole tool was added or removed.
    pub field: String,
    /// The old value, when there is one.
    pub old: Option<String>,
    /// The new value, when there is one.
    pub new: Option<String>,
    /// What changed and why it is classified so, in a sentence.
    pub reason: String,
    /// In a composite's graph manifest: the node the change is about (`tool` is then a tool
    /// of that node's agent), or `None` for the composite itself or an edge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
}

impl Change {
    /// `tool `name`` or `agent`: what the change is about; in a composite, `node `id``
    /// before it (`node `id` tool `name``), or `composite` for a change of a `composite.*` or
    /// `capabilities.*` field.
    pub fn subject(&self) -> String {
        match (&self.node, &self.tool) {
            (None, Some(t)) => format!("tool `{t}`"),
            (None, None) if self.field.starts_with("composite") || self.field.starts_with("capabilities.") => {
                "composite".to_owned()
            }
            (None, None) => "agent".to_owned(),
            (Some(n), Some(t)) => format!("node `{n}` tool `{t}`"),
            (Some(n), None) => format!("node `{n}`"),
        }
    }
}

impl Change {
    /// The subject and field: `tool `x` policy.fs.read`, `agent ceiling`, or `tool `x`` when
    /// the change is about the whole tool.
    pub fn location(&self) -> String {
        if self.field == "tool" { self.subject() } else { format!("{} {}", self.subject(), self.field) }
    }
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}] {}: {}", self.kind, escape(&self.location()), escape(&self.reason))
    }
}

/// Every classified difference between two manifests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestDiff {
    /// Canonical SHA-256 of the old manifest.
    pub old_sha256: String,
    /// Canonical SHA-256 of the new manifest.
    pub new_sha256: String,
    /// The changes: agent-level first, then tools by name.
    pub changes: Vec<Change>,
}

impl ManifestDiff {
    /// Whether nothing differs.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// Whether any change widens what the agent may do.
    pub fn has_widening(&self) -> bool {
        self.changes.iter().any(|c| c.kind == ChangeKind::Widening)
    }

    /// The number of changes of one kind.
    pub fn count(&self, kind: ChangeKind) -> usize {
        self.changes.iter().filter(|c| c.kind == kind).count()
    }

    /// The changes of one kind, in order.
    pub fn of_kind(&self, kind: ChangeKind) -> impl Iterator<Item = &Change> + '_ {
        self.changes.iter().filter(move |c| c.kind == kind)
    }

    /// Names of tools with at least one widening change (new tools included).
    pub fn widened_tools(&self) -> BTreeSet<&str> {
        self.of_kind(ChangeKind::Widening).filter_map(|c| c.tool.as_deref()).collect()
    }

    /// A one-line summary: `2 widening, 1 narrowing, 0 neutral`.
    pub fn summary(&self) -> String {
        format!(
            "{} widening, {} narrowing, {} neutral",
            self.count(ChangeKind::Widening),
            self.count(ChangeKind::Narrowing),
            self.count(ChangeKind::Neutral)
        )
    }
}

/// One line per change; every value that came from a manifest is shown with
/// [`crate::terminal::escape`], so a name or entry cannot hide or reorder a line.
impl fmt::Display for ManifestDiff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return writeln!(f, "no capability or description differences");
        }
        writeln!(f, "{}", self.summary())?;
        for kind in [ChangeKind::Widening, ChangeKind::Narrowing, ChangeKind::Neutral] {
            let mut changes = self.of_kind(kind).peekable();
            if changes.peek().is_none() {
                continue;
            }
            writeln!(f, "{}:", kind.as_str().to_uppercase())?;
            for c in changes {
                writeln!(f, "  - {}: {}", escape(&c.location()), escape(&c.reason))?;
            }
        }
        Ok(())
    }
}

/// A change of `kind` by `rule` to `field` of `tool` (`None`: the agent), from `old` to `new`.
pub(crate) fn change(
    kind: ChangeKind,
    rule: Rule,
    tool: Option<&str>,
    field: &str,
    old: Option<String>,
    new: Option<String>,
    reason: String,
) -> Change {
    Change { kind, rule, tool: tool.map(str::to_owned), field: field.to_owned(), old, new, reason, node: None }
}

/// A manifest's text (a description, a title) as a change's reason quotes it: debug-escaped,
/// cut after 120 characters.
pub(crate) fn quote(s: &str) -> String {
    const MAX: usize = 120;
    let mut t: String = s.chars().take(MAX).collect();
    if s.chars().count() > MAX {
        t.push('…');
    }
    format!("{t:?}")
}
