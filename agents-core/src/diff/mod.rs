//! Classified differences between two permission manifests.
//!
//! [`diff`] compares an old and a new [`Manifest`] and classifies every change as a
//! [`ChangeKind::Widening`] (the agent may do something it could not do before), a
//! [`ChangeKind::Narrowing`] (it may do less) or [`ChangeKind::Neutral`] (nothing it may do
//! changed, but a reviewer should still see it). Every [`Change`] names the [`Rule`] that
//! classified it and says why in plain words.
//!
//! The rules, per tool:
//!
//! | change | kind |
//! | --- | --- |
//! | a tool added / removed | widening / narrowing |
//! | the permission changed (to `public`: widening; from `public`: narrowing; otherwise widening, because other roles may hold the new permission) | see left |
//! | `mutating` removed / added | widening / narrowing |
//! | `isolated` removed / added (the kernel no longer / now enforces the policy) | widening / narrowing |
//! | `egress` removed / added (arguments copied from tool results no longer / now wait for a person) | widening / narrowing |
//! | tier lowered (handoff → action → read) / raised | widening / narrowing |
//! | risk lowered / raised | widening / narrowing |
//! | a filesystem glob or host added or broadened / removed or narrowed | widening / narrowing |
//! | an environment variable added / removed (variables are granted by exact name) | widening / narrowing |
//! | a policy entry added or removed that another entry covers | neutral |
//! | a parameter stops being secret (`#[secret]` removed, or its type no longer names `Secret`) / becomes secret | widening / narrowing |
//! | a parameter added / removed | widening / narrowing |
//! | a parameter's type changed | widening |
//! | parameters reordered | neutral |
//! | a tool it `uses` added / removed | widening / narrowing |
//! | title or description changed | neutral |
//! | an imported tool's pin, server or remote name changed, or a tool became / stopped being imported | widening |
//!
//! and for the agent:
//!
//! | change | kind |
//! | --- | --- |
//! | the permission ceiling removed / declared | widening / narrowing |
//! | a permission added to / removed from the ceiling | widening / narrowing |
//! | a limit raised / lowered (iterations, timeouts, concurrent runs, token lifetime, history) | widening / narrowing |
//! | skills regrouped, name, description, input or output type changed | neutral |
//!
//! # What the classification guarantees
//!
//! Against a contributor who edits tools, policies and agent declarations in any way (the
//! input is two manifests that [`Manifest::parse`] accepted, or that `agent!` generated):
//! when [`ManifestDiff::has_widening`] is `false`, then for every tool of the new manifest,
//! every path its filesystem policy admits, every host and port its network policy admits
//! and every variable its environment policy grants was admitted by the same tool in the old
//! manifest, as the runtime's own matchers decide ([`crate::policy`] defines them once, for
//! the runtime and for this module); no tool was added, lost its confirmation, lowered its
//! tier or risk, changed its permission, gained a parameter, changed a parameter's type or
//! stopped masking one; no limit went up; the ceiling did not grow.
//!
//! When whether a new entry is covered is not certain, the entry counts as a widening: the
//! "covers" decision ([`crate::policy::Glob::covers`], [`crate::policy::HostPattern::covers`])
//! is sound but not complete, so a reviewer may see a widening that is not one, never the
//! reverse. A policy entry that [`crate::policy`] refuses covers nothing.
//!
//! What it does not see: anything the manifest does not hold. A type keeps its name while its
//! definition changes (the manifest holds names only); what a tool's body does with its
//! capabilities is bounded by the runtime's handles, not by this diff.

use crate::manifest::{Manifest, ParamEntry, ToolEntry};
use crate::policy::{Glob, HostPattern};
use crate::terminal::escape;
use crate::tool::{Risk, Tier};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// How a change affects what the agent may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
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
}

impl Change {
    /// `tool `name`` or `agent`: what the change is about.
    pub fn subject(&self) -> String {
        match &self.tool {
            Some(t) => format!("tool `{t}`"),
            None => "agent".to_owned(),
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

/// Compares two manifests and classifies every difference.
pub fn diff(old: &Manifest, new: &Manifest) -> ManifestDiff {
    let mut out = Vec::new();
    diff_agent(old, new, &mut out);

    let old_tools: BTreeMap<&str, &ToolEntry> = old.tools.iter().map(|t| (t.name.as_str(), t)).collect();
    let new_tools: BTreeMap<&str, &ToolEntry> = new.tools.iter().map(|t| (t.name.as_str(), t)).collect();
    let names: BTreeSet<&str> = old_tools.keys().chain(new_tools.keys()).copied().collect();
    for name in names {
        match (old_tools.get(name), new_tools.get(name)) {
            (None, Some(t)) => out.push(change(
                ChangeKind::Widening,
                Rule::ToolAdded,
                Some(name),
                "tool",
                None,
                Some(name.to_owned()),
                format!(
                    "new tool: tier {}, risk {}, permission `{}`{}",
                    t.tier,
                    t.risk,
                    t.permission,
                    policy_summary(t)
                ),
            )),
            (Some(t), None) => out.push(change(
                ChangeKind::Narrowing,
                Rule::ToolRemoved,
                Some(name),
                "tool",
                Some(name.to_owned()),
                None,
                format!("tool removed (was tier {}, permission `{}`)", t.tier, t.permission),
            )),
            (Some(a), Some(b)) => diff_tool(a, b, &mut out),
            (None, None) => {}
        }
    }
    ManifestDiff { old_sha256: old.sha256(), new_sha256: new.sha256(), changes: out }
}

fn policy_summary(t: &ToolEntry) -> String {
    let mut parts = Vec::new();
    let p = &t.policy;
    for (label, list) in
        [("fs read", &p.fs.read), ("fs write", &p.fs.write), ("net", &p.net.hosts), ("env", &p.env.vars)]
    {
        if !list.is_empty() {
            parts.push(format!("{label} {}", list.iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(", ")));
        }
    }
    if parts.is_empty() { String::new() } else { format!("; {}", parts.join("; ")) }
}

fn change(
    kind: ChangeKind,
    rule: Rule,
    tool: Option<&str>,
    field: &str,
    old: Option<String>,
    new: Option<String>,
    reason: String,
) -> Change {
    Change { kind, rule, tool: tool.map(str::to_owned), field: field.to_owned(), old, new, reason }
}

fn diff_agent(old: &Manifest, new: &Manifest, out: &mut Vec<Change>) {
    let (a, b) = (&old.agent, &new.agent);
    if a.name != b.name {
        out.push(change(
            ChangeKind::Neutral,
            Rule::AgentRenamed,
            None,
            "name",
            Some(a.name.clone()),
            Some(b.name.clone()),
            format!("agent renamed from `{}` to `{}`", a.name, b.name),
        ));
    }
    if a.description != b.description {
        out.push(change(
            ChangeKind::Neutral,
            Rule::AgentDescriptionChanged,
            None,
            "description",
            Some(a.description.clone()),
            Some(b.description.clone()),
            format!("description changed from {} to {}", quote(&a.description), quote(&b.description)),
        ));
    }
    for (field, x, y) in [("input", &a.input, &b.input), ("output", &a.output, &b.output)] {
        if x != y {
            out.push(change(
                ChangeKind::Neutral,
                Rule::IoTypeChanged,
                None,
                field,
                Some(x.clone()),
                Some(y.clone()),
                format!("type changed from `{x}` to `{y}`"),
            ));
        }
    }

    match (&a.ceiling, &b.ceiling) {
        (Some(c), None) => out.push(change(
            ChangeKind::Widening,
            Rule::CeilingRemoved,
            None,
            "ceiling",
            Some(c.join(", ")),
            None,
            "permission ceiling removed: tools of any permission may now be granted".to_owned(),
        )),
        (None, Some(c)) => out.push(change(
            ChangeKind::Narrowing,
            Rule::CeilingAdded,
            None,
            "ceiling",
            None,
            Some(c.join(", ")),
            format!(
                "permission ceiling declared: {}",
                c.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(", ")
            ),
        )),
        (Some(x), Some(y)) => {
            for item in list_diff(x, y, |a, b| a == b) {
                match item {
                    ListItem::Added { new, .. } => out.push(change(
                        ChangeKind::Widening,
                        Rule::CeilingRaised,
                        None,
                        "ceiling",
                        None,
                        Some(new.clone()),
                        format!("ceiling raised: `{new}` added"),
                    )),
                    ListItem::Removed { old, .. } => out.push(change(
                        ChangeKind::Narrowing,
                        Rule::CeilingLowered,
                        None,
                        "ceiling",
                        Some(old.clone()),
                        None,
                        format!("ceiling lowered: `{old}` removed"),
                    )),
                    _ => {}
                }
            }
        }
        (None, None) => {}
    }

    let (la, lb) = (&a.limits, &b.limits);
    for (name, x, y) in [
        ("max_iterations", u64::from(la.max_iterations), u64::from(lb.max_iterations)),
        ("provider_timeout_secs", la.provider_timeout_secs, lb.provider_timeout_secs),
        ("confirm_timeout_secs", la.confirm_timeout_secs, lb.confirm_timeout_secs),
        ("max_concurrent_runs", u64::from(la.max_concurrent_runs), u64::from(lb.max_concurrent_runs)),
        ("token_ttl_secs", la.token_ttl_secs, lb.token_ttl_secs),
        ("history_messages", u64::from(la.history_messages), u64::from(lb.history_messages)),
    ] {
        if x == y {
            continue;
        }
        let (kind, rule, verb) = if y > x {
            (ChangeKind::Widening, Rule::LimitRaised, "raised")
        } else {
            (ChangeKind::Narrowing, Rule::LimitLowered, "lowered")
        };
        out.push(change(
            kind,
            rule,
            None,
            &format!("limits.{name}"),
            Some(x.to_string()),
            Some(y.to_string()),
            format!("limit {name} {verb} from {x} to {y}"),
        ));
    }

    if a.skills != b.skills {
        let show = |m: &Manifest| {
            m.agent
                .skills
                .iter()
                .map(|s| format!("{}: [{}]", s.name, s.tools.join(", ")))
                .collect::<Vec<_>>()
                .join("; ")
        };
        out.push(change(
            ChangeKind::Neutral,
            Rule::SkillsChanged,
            None,
            "skills",
            Some(show(old)),
            Some(show(new)),
            format!(
                "skills regrouped from {{{}}} to {{{}}} (skills group granted tools; grants are compared tool by tool)",
                show(old),
                show(new)
            ),
        ));
    }
}

/// Strictness of a tier: read < action < handoff.
fn tier_rank(t: Tier) -> u8 {
    match t {
        Tier::Read => 0,
        Tier::Action => 1,
        Tier::Handoff => 2,
    }
}

fn risk_rank(r: Risk) -> u8 {
    match r {
        Risk::Low => 0,
        Risk::Medium => 1,
        Risk::High => 2,
        Risk::Critical => 3,
    }
}

/// `covers(wide, narrow)`: whether every value `narrow` allows is also allowed by `wide`.
type Covers = fn(&str, &str) -> bool;

/// A policy list to compare: field, what its entries are, (old, new), how entries cover.
type PolicyList<'a> = (&'static str, &'static str, (&'a [String], &'a [String]), Covers);

fn diff_tool(a: &ToolEntry, b: &ToolEntry, out: &mut Vec<Change>) {
    let name = Some(a.name.as_str());
    let public = crate::Public::NAME_STR;

    if a.permission != b.permission {
        let (kind, why) = if b.permission == public {
            (ChangeKind::Widening, "every user may now call it")
        } else if a.permission == public {
            (ChangeKind::Narrowing, "it was callable by every user")
        } else {
            (
                ChangeKind::Widening,
                "roles holding the new permission may differ from those holding the old one; check who holds it",
            )
        };
        out.push(change(
            kind,
            Rule::PermissionChanged,
            name,
            "permission",
            Some(a.permission.clone()),
            Some(b.permission.clone()),
            format!("permission changed from `{}` to `{}`: {why}", a.permission, b.permission),
        ));
    }

    if a.tier != b.tier {
        let lowered = tier_rank(b.tier) < tier_rank(a.tier);
        let (kind, rule, why) = if lowered {
            (
                ChangeKind::Widening,
                Rule::TierLowered,
                if b.tier == Tier::Read {
                    "calls now run without a person's approval"
                } else {
                    "calls can now execute after approval instead of becoming a handoff record"
                },
            )
        } else {
            (
                ChangeKind::Narrowing,
                Rule::TierRaised,
                if b.tier == Tier::Handoff {
                    "calls no longer execute; they become handoff records"
                } else {
                    "calls now wait for a person's approval"
                },
            )
        };
        out.push(change(
            kind,
            rule,
            name,
            "tier",
            Some(a.tier.to_string()),
            Some(b.tier.to_string()),
            format!("tier changed from {} to {}: {why}", a.tier, b.tier),
        ));
    }

    // The pin (server, remote name, hash); an `own_server` change shows as `policy.egress`.
    fn pin(i: &Option<crate::manifest::ImportEntry>) -> Option<(&str, &str, &str)> {
        i.as_ref().map(|i| (i.server.as_str(), i.tool.as_str(), i.sha256.as_str()))
    }
    if pin(&a.import) != pin(&b.import) {
        let show = |i: &Option<crate::manifest::ImportEntry>| {
            i.as_ref().map(|i| format!("{}/{} pin {}", i.server, i.tool, i.sha256))
        };
        let said = |v: &Option<String>| v.clone().unwrap_or_else(|| "a tool written in Rust".to_owned());
        let (old, new) = (show(&a.import), show(&b.import));
        out.push(change(
            ChangeKind::Widening,
            Rule::ImportChanged,
            name,
            "import",
            old.clone(),
            new.clone(),
            format!(
                "imported from {} before, {} now: the server's description and input schema were re-pinned; review the lock file's diff (what the model reads and fills in)",
                said(&old),
                said(&new)
            ),
        ));
    }

    if a.policy.isolated != b.policy.isolated {
        let (kind, rule, why) = if a.policy.isolated {
            (
                ChangeKind::Widening,
                Rule::IsolationRemoved,
                "`isolated` removed: the policy no longer binds a body that ignores it (no confined process)",
            )
        } else {
            (ChangeKind::Narrowing, Rule::IsolationAdded, "`isolated` added: the kernel now enforces the policy")
        };
        out.push(change(
            kind,
            rule,
            name,
            "policy.isolated",
            Some(a.policy.isolated.to_string()),
            Some(b.policy.isolated.to_string()),
            why.to_owned(),
        ));
    }

    if a.policy.egress != b.policy.egress {
        let (kind, rule, mut why) = if a.policy.egress {
            (
                ChangeKind::Widening,
                Rule::EgressRemoved,
                "`egress` removed: values copied from tool results into its arguments no longer wait for a person"
                    .to_owned(),
            )
        } else {
            (
                ChangeKind::Narrowing,
                Rule::EgressAdded,
                "`egress` added: values copied from tool results into its arguments now wait for a person".to_owned(),
            )
        };
        if let Some(own) = b.import.as_ref().and_then(|i| i.own_server.as_deref()) {
            why.push_str(&format!(" (its MCP server is declared the application's own: {})", quote(own)));
        }
        out.push(change(
            kind,
            rule,
            name,
            "policy.egress",
            Some(a.policy.egress.to_string()),
            Some(b.policy.egress.to_string()),
            why,
        ));
    }

    if a.mutating != b.mutating {
        let (kind, rule, why) = if a.mutating {
            (ChangeKind::Widening, Rule::MutatingRemoved, "`mutating` removed: calls no longer require confirmation")
        } else {
            (ChangeKind::Narrowing, Rule::MutatingAdded, "`mutating` added: calls now require confirmation")
        };
        out.push(change(
            kind,
            rule,
            name,
            "mutating",
            Some(a.mutating.to_string()),
            Some(b.mutating.to_string()),
            why.to_owned(),
        ));
    }

    if a.risk != b.risk {
        let (kind, rule, verb) = if risk_rank(b.risk) < risk_rank(a.risk) {
            (ChangeKind::Widening, Rule::RiskLowered, "lowered")
        } else {
            (ChangeKind::Narrowing, Rule::RiskRaised, "raised")
        };
        out.push(change(
            kind,
            rule,
            name,
            "risk",
            Some(a.risk.to_string()),
            Some(b.risk.to_string()),
            format!("risk {verb} from {} to {}", a.risk, b.risk),
        ));
    }

    let (pa, pb) = (&a.policy, &b.policy);
    let policies: [PolicyList<'_>; 4] = [
        ("policy.fs.read", "filesystem read glob", (&pa.fs.read, &pb.fs.read), glob_covers),
        ("policy.fs.write", "filesystem write glob", (&pa.fs.write, &pb.fs.write), glob_covers),
        ("policy.net.hosts", "network host", (&pa.net.hosts, &pb.net.hosts), host_covers),
        ("policy.env.vars", "environment variable", (&pa.env.vars, &pb.env.vars), env_covers),
    ];
    for (field, what, (x, y), covers) in policies {
        for item in list_diff(x, y, covers) {
            out.push(match item {
                ListItem::Added { new } => change(
                    ChangeKind::Widening,
                    Rule::PolicyAdded,
                    name,
                    field,
                    None,
                    Some(new.clone()),
                    format!("{what} `{new}` added{}", any_host(field, new)),
                ),
                ListItem::Broadened { old, new } => change(
                    ChangeKind::Widening,
                    Rule::PolicyBroadened,
                    name,
                    field,
                    Some(old.clone()),
                    Some(new.clone()),
                    format!("{what} broadened from `{old}` to `{new}`{}", any_host(field, new)),
                ),
                ListItem::Removed { old } => change(
                    ChangeKind::Narrowing,
                    Rule::PolicyRemoved,
                    name,
                    field,
                    Some(old.clone()),
                    None,
                    format!("{what} `{old}` removed"),
                ),
                ListItem::Narrowed { old, new } => change(
                    ChangeKind::Narrowing,
                    Rule::PolicyNarrowed,
                    name,
                    field,
                    Some(old.clone()),
                    Some(new.clone()),
                    format!("{what} narrowed from `{old}` to `{new}`"),
                ),
                ListItem::AddedCovered { new, by } => change(
                    ChangeKind::Neutral,
                    Rule::PolicyCovered,
                    name,
                    field,
                    None,
                    Some(new.clone()),
                    format!("{what} `{new}` added, already covered by `{by}`"),
                ),
                ListItem::RemovedCovered { old, by } => change(
                    ChangeKind::Neutral,
                    Rule::PolicyCovered,
                    name,
                    field,
                    Some(old.clone()),
                    None,
                    format!("{what} `{old}` removed, still covered by `{by}`"),
                ),
            });
        }
    }

    diff_params(&a.name, &a.parameters, &b.parameters, out);

    for item in list_diff(&a.uses, &b.uses, |x, y| x == y) {
        match item {
            ListItem::Added { new } => out.push(change(
                ChangeKind::Widening,
                Rule::UsesAdded,
                name,
                "uses",
                None,
                Some(new.clone()),
                format!("now invokes tool `{new}`"),
            )),
            ListItem::Removed { old } => out.push(change(
                ChangeKind::Narrowing,
                Rule::UsesRemoved,
                name,
                "uses",
                Some(old.clone()),
                None,
                format!("no longer invokes tool `{old}`"),
            )),
            _ => {}
        }
    }

    if a.title != b.title {
        let show = |t: &Option<String>| t.as_deref().map_or_else(|| "none".to_owned(), quote);
        out.push(change(
            ChangeKind::Neutral,
            Rule::TitleChanged,
            name,
            "title",
            a.title.clone(),
            b.title.clone(),
            format!("confirm-dialog title changed from {} to {}", show(&a.title), show(&b.title)),
        ));
    }
    if a.description != b.description {
        out.push(change(
            ChangeKind::Neutral,
            Rule::DescriptionChanged,
            name,
            "description",
            Some(a.description.clone()),
            Some(b.description.clone()),
            format!("description changed from {} to {}", quote(&a.description), quote(&b.description)),
        ));
    }
}

fn diff_params(tool: &str, a: &[ParamEntry], b: &[ParamEntry], out: &mut Vec<Change>) {
    let name = Some(tool);
    let old: BTreeMap<&str, &ParamEntry> = a.iter().map(|p| (p.name.as_str(), p)).collect();
    let new: BTreeMap<&str, &ParamEntry> = b.iter().map(|p| (p.name.as_str(), p)).collect();
    let names: BTreeSet<&str> = old.keys().chain(new.keys()).copied().collect();
    for p in names {
        let field = format!("parameters.{p}");
        match (old.get(p), new.get(p)) {
            (None, Some(n)) => out.push(change(
                ChangeKind::Widening,
                Rule::ParameterAdded,
                name,
                &field,
                None,
                Some(n.rust_type.clone()),
                format!(
                    "parameter `{p}: {}`{} added: the model controls a new input",
                    n.rust_type,
                    if n.is_secret() { " (secret)" } else { "" }
                ),
            )),
            (Some(o), None) => out.push(change(
                ChangeKind::Narrowing,
                Rule::ParameterRemoved,
                name,
                &field,
                Some(o.rust_type.clone()),
                None,
                format!("parameter `{p}: {}` removed", o.rust_type),
            )),
            (Some(o), Some(n)) => {
                let (os, ns) = (o.is_secret(), n.is_secret());
                if os && !ns {
                    out.push(change(
                        ChangeKind::Widening,
                        Rule::SecretRemoved,
                        name,
                        &format!("{field}.secret"),
                        Some("true".into()),
                        Some("false".into()),
                        format!(
                            "`{p}` is no longer secret (`#[secret]` removed or its type no longer `Secret<..>`): its values will appear unmasked in audit records and confirm dialogs"
                        ),
                    ));
                } else if !os && ns {
                    out.push(change(
                        ChangeKind::Narrowing,
                        Rule::SecretAdded,
                        name,
                        &format!("{field}.secret"),
                        Some("false".into()),
                        Some("true".into()),
                        format!("`{p}` is now secret: its values will be masked"),
                    ));
                }
                if o.rust_type != n.rust_type {
                    out.push(change(
                        ChangeKind::Widening,
                        Rule::ParameterTypeChanged,
                        name,
                        &format!("{field}.type"),
                        Some(o.rust_type.clone()),
                        Some(n.rust_type.clone()),
                        format!(
                            "type of `{p}` changed from `{}` to `{}`: the manifest names types only, so that the new type admits no value the old one refused cannot be shown",
                            o.rust_type, n.rust_type
                        ),
                    ));
                }
            }
            (None, None) => {}
        }
    }
    let order = |ps: &[ParamEntry]| -> Vec<String> {
        ps.iter()
            .filter(|p| old.contains_key(p.name.as_str()) && new.contains_key(p.name.as_str()))
            .map(|p| p.name.clone())
            .collect()
    };
    let (oa, ob) = (order(a), order(b));
    if oa != ob {
        out.push(change(
            ChangeKind::Neutral,
            Rule::ParametersReordered,
            name,
            "parameters",
            Some(oa.join(", ")),
            Some(ob.join(", ")),
            format!("parameters reordered from ({}) to ({})", oa.join(", "), ob.join(", ")),
        ));
    }
}

fn quote(s: &str) -> String {
    const MAX: usize = 120;
    let mut t: String = s.chars().take(MAX).collect();
    if s.chars().count() > MAX {
        t.push('…');
    }
    format!("{t:?}")
}

/// One difference between two lists of policy-like entries.
#[derive(Debug, PartialEq, Eq)]
enum ListItem<'a> {
    /// New entry nothing old covers.
    Added { new: &'a String },
    /// New entry nothing old covers, broader than a removed one.
    Broadened { old: &'a String, new: &'a String },
    /// Removed entry nothing new covers.
    Removed { old: &'a String },
    /// Removed entry nothing new covers, replaced by a narrower one.
    Narrowed { old: &'a String, new: &'a String },
    /// New entry an old one already covers (and that no narrowing mentions).
    AddedCovered { new: &'a String, by: &'a String },
    /// Removed entry a new one still covers (and that no broadening mentions).
    RemovedCovered { old: &'a String, by: &'a String },
}

/// Compares two lists whose entries may cover one another (`covers(wide, narrow)`). An added
/// entry is a widening unless an old entry covers it; a removed entry is a narrowing unless
/// a new entry covers it. Entries that only appear in a broadened / narrowed pair are not
/// reported twice.
fn list_diff<'a>(old: &'a [String], new: &'a [String], covers: impl Fn(&str, &str) -> bool) -> Vec<ListItem<'a>> {
    let old_set: BTreeSet<&String> = old.iter().collect();
    let new_set: BTreeSet<&String> = new.iter().collect();
    let added: Vec<&String> = new_set.difference(&old_set).copied().collect();
    let removed: Vec<&String> = old_set.difference(&new_set).copied().collect();

    let mut items = Vec::new();
    let mut mentioned_removed: BTreeSet<&String> = BTreeSet::new();
    let mut mentioned_added: BTreeSet<&String> = BTreeSet::new();

    for &a in &added {
        if !old.iter().any(|o| covers(o, a)) {
            match removed.iter().find(|r| covers(a, r)) {
                Some(&r) => {
                    mentioned_removed.insert(r);
                    items.push(ListItem::Broadened { old: r, new: a });
                }
                None => items.push(ListItem::Added { new: a }),
            }
        }
    }
    for &r in &removed {
        if !new.iter().any(|n| covers(n, r)) {
            match added.iter().find(|a| covers(r, a)) {
                Some(&a) => {
                    mentioned_added.insert(a);
                    items.push(ListItem::Narrowed { old: r, new: a });
                }
                None => items.push(ListItem::Removed { old: r }),
            }
        }
    }
    for &a in &added {
        if mentioned_added.contains(a) {
            continue;
        }
        if let Some(by) = old.iter().find(|o| covers(o, a)) {
            items.push(ListItem::AddedCovered { new: a, by });
        }
    }
    for &r in &removed {
        if mentioned_removed.contains(r) {
            continue;
        }
        if let Some(by) = new.iter().find(|n| covers(n, r)) {
            items.push(ListItem::RemovedCovered { old: r, by });
        }
    }
    items
}

/// `covers` for filesystem globs: both must parse (an entry that does not parse covers
/// nothing and is covered by nothing, so adding one is a widening).
fn glob_covers(wide: &str, narrow: &str) -> bool {
    match (Glob::parse(wide), Glob::parse(narrow)) {
        (Ok(w), Ok(n)) => w.covers(&n),
        _ => false,
    }
}

/// What a change's reason adds for a network host entry that allows any host (`*`).
fn any_host(field: &str, entry: &str) -> &'static str {
    if field == "policy.net.hosts" && HostPattern::parse(entry).is_ok_and(|p| p.is_any_host()) {
        " (any host: the tool may reach every host this process can)"
    } else {
        ""
    }
}

/// `covers` for network hosts, by [`HostPattern::covers`].
fn host_covers(wide: &str, narrow: &str) -> bool {
    match (HostPattern::parse(wide), HostPattern::parse(narrow)) {
        (Ok(w), Ok(n)) => w.covers(&n),
        _ => false,
    }
}

/// `covers` for environment variables: the runtime grants a variable by its exact name.
fn env_covers(wide: &str, narrow: &str) -> bool {
    wide == narrow
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_cover_what_they_should() {
        assert!(glob_covers("/data/**", "/data/a/b.txt"));
        assert!(glob_covers("/data/**", "/data/*.txt"));
        assert!(glob_covers("/data/**", "/data/**/x"));
        assert!(glob_covers("/data/*", "/data/*.txt"));
        assert!(glob_covers("/data/*.txt", "/data/a?.txt"));
        assert!(glob_covers("/data/?.txt", "/data/[ab].txt"));
        assert!(glob_covers("/data/*", "/data/{a,b}"));
        assert!(glob_covers("**", "/anything/at/all"));
    }

    #[test]
    fn globs_do_not_cover_what_they_should_not() {
        assert!(!glob_covers("/data/*", "/data/a/b"));
        assert!(!glob_covers("/data/*", "/data/**"));
        assert!(!glob_covers("/data/*.txt", "/data/*"));
        assert!(!glob_covers("/data/a**", "/data/a/b"));
        assert!(!glob_covers("/data/?", "/data/ab"));
        assert!(!glob_covers("/data/**", "/etc/passwd"));
        assert!(!glob_covers("/data/[ab]", "/data/c"));
    }

    #[test]
    fn hosts_cover_ports_and_subdomains() {
        assert!(host_covers("api.example.com", "api.example.com:443"));
        assert!(!host_covers("api.example.com:443", "api.example.com"));
        assert!(!host_covers("api.example.com:443", "api.example.com:8443"));
        assert!(host_covers("*.example.com", "api.example.com"));
        assert!(host_covers("*.example.com", "*.eu.example.com"));
        assert!(!host_covers("*.example.com", "example.com"));
        assert!(!host_covers("*.example.com", "evilexample.com"));
        assert!(host_covers("[::1]", "[::1]:8080"));
        assert!(host_covers("API.Example.com", "api.example.com"));
    }

    #[test]
    fn list_diff_pairs_broadening_and_narrowing() {
        let s = |v: &[&str]| v.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
        let (o, n) = (s(&["/a/*.txt"]), s(&["/a/**"]));
        assert_eq!(list_diff(&o, &n, glob_covers), vec![ListItem::Broadened { old: &o[0], new: &n[0] }]);
        assert_eq!(list_diff(&n, &o, glob_covers), vec![ListItem::Narrowed { old: &n[0], new: &o[0] }]);
        // Narrowing one entry while keeping a broad one: nothing is reachable that was not.
        let (o, n) = (s(&["/a/**", "/b/*"]), s(&["/a/**", "/a/x/*"]));
        let items = list_diff(&o, &n, glob_covers);
        assert_eq!(items, vec![ListItem::Removed { old: &o[1] }, ListItem::AddedCovered { new: &n[1], by: &o[0] }]);
    }
}
