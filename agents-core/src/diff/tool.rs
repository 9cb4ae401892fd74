//! A tool's changes: added, removed, or field by field (its permission, tier, import, policy,
//! confirmation, risk, policy lists, parameters, the tools it uses, its texts).

use super::lists::{ListItem, any_host, env_covers, glob_covers, host_covers, list_diff};
use super::model::{Change, ChangeKind, change, quote};
use super::params::diff_params;
use super::rule::Rule;
use crate::manifest::{ImportEntry, Manifest, ToolEntry};
use crate::tool::{Risk, Tier};
use std::collections::{BTreeMap, BTreeSet};

/// Every change of the tools, by name: a tool added, removed, or changed.
pub(super) fn diff_tools(old: &Manifest, new: &Manifest, out: &mut Vec<Change>) {
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
            (Some(a), Some(b)) => diff_tool(a, b, out),
            (None, None) => {}
        }
    }
}

/// A new tool's policy lists, for its change's reason: `; fs read `/a/**`; net `x.com``.
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

/// The comparison of one field of a tool in the old and the new manifest: its change, if it
/// differs.
type FieldComparison = fn(&ToolEntry, &ToolEntry) -> Option<Change>;

/// The fields that hold one value, compared in this order (the order of their changes).
const FIELDS: [FieldComparison; 7] = [permission, tier, import, isolated, egress, mutating, risk];

/// The fields that hold text only a reviewer reads: neutral, compared last.
const TEXTS: [FieldComparison; 2] = [title, description];

/// Every change of a tool both manifests hold.
fn diff_tool(a: &ToolEntry, b: &ToolEntry, out: &mut Vec<Change>) {
    out.extend(FIELDS.iter().filter_map(|compare| compare(a, b)));
    diff_policy_lists(a, b, out);
    diff_params(&a.name, &a.parameters, &b.parameters, out);
    diff_uses(a, b, out);
    out.extend(super::agents::handoff_target(a, b));
    out.extend(TEXTS.iter().filter_map(|compare| compare(a, b)));
}

/// To `public`: widening; from `public`: narrowing; otherwise widening, because other roles
/// may hold the new permission.
fn permission(a: &ToolEntry, b: &ToolEntry) -> Option<Change> {
    if a.permission == b.permission {
        return None;
    }
    let public = crate::Public::NAME_STR;
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
    Some(change(
        kind,
        Rule::PermissionChanged,
        Some(&a.name),
        "permission",
        Some(a.permission.clone()),
        Some(b.permission.clone()),
        format!("permission changed from `{}` to `{}`: {why}", a.permission, b.permission),
    ))
}

/// Strictness of a tier: read < action < handoff.
fn tier_rank(t: Tier) -> u8 {
    match t {
        Tier::Read => 0,
        Tier::Action => 1,
        Tier::Handoff => 2,
    }
}

/// Lowered (towards `read`): widening; raised: narrowing.
fn tier(a: &ToolEntry, b: &ToolEntry) -> Option<Change> {
    if a.tier == b.tier {
        return None;
    }
    let (kind, rule, why) = if tier_rank(b.tier) < tier_rank(a.tier) {
        let why = if b.tier == Tier::Read {
            "calls now run without a person's approval"
        } else {
            "calls can now execute after approval instead of becoming a handoff record"
        };
        (ChangeKind::Widening, Rule::TierLowered, why)
    } else {
        let why = if b.tier == Tier::Handoff {
            "calls no longer execute; they become handoff records"
        } else {
            "calls now wait for a person's approval"
        };
        (ChangeKind::Narrowing, Rule::TierRaised, why)
    };
    Some(change(
        kind,
        rule,
        Some(&a.name),
        "tier",
        Some(a.tier.to_string()),
        Some(b.tier.to_string()),
        format!("tier changed from {} to {}: {why}", a.tier, b.tier),
    ))
}

/// An imported tool's pin (server, remote name, hash): any change is a widening. An
/// `own_server` change shows as `policy.egress`.
fn import(a: &ToolEntry, b: &ToolEntry) -> Option<Change> {
    fn pin(i: &Option<ImportEntry>) -> Option<(&str, &str, &str)> {
        i.as_ref().map(|i| (i.server.as_str(), i.tool.as_str(), i.sha256.as_str()))
    }
    if pin(&a.import) == pin(&b.import) {
        return None;
    }
    let show = |i: &Option<ImportEntry>| i.as_ref().map(|i| format!("{}/{} pin {}", i.server, i.tool, i.sha256));
    let said = |v: &Option<String>| v.clone().unwrap_or_else(|| "a tool written in Rust".to_owned());
    let (old, new) = (show(&a.import), show(&b.import));
    Some(change(
        ChangeKind::Widening,
        Rule::ImportChanged,
        Some(&a.name),
        "import",
        old.clone(),
        new.clone(),
        format!(
            "imported from {} before, {} now: the server's description and input schema were re-pinned; review the lock file's diff (what the model reads and fills in)",
            said(&old),
            said(&new)
        ),
    ))
}

/// `isolated` removed: widening; added: narrowing.
fn isolated(a: &ToolEntry, b: &ToolEntry) -> Option<Change> {
    if a.policy.isolated == b.policy.isolated {
        return None;
    }
    let (kind, rule, why) = if a.policy.isolated {
        (
            ChangeKind::Widening,
            Rule::IsolationRemoved,
            "`isolated` removed: the policy no longer binds a body that ignores it (no confined process)",
        )
    } else {
        (ChangeKind::Narrowing, Rule::IsolationAdded, "`isolated` added: the kernel now enforces the policy")
    };
    Some(change(
        kind,
        rule,
        Some(&a.name),
        "policy.isolated",
        Some(a.policy.isolated.to_string()),
        Some(b.policy.isolated.to_string()),
        why.to_owned(),
    ))
}

/// `egress` removed: widening; added: narrowing.
fn egress(a: &ToolEntry, b: &ToolEntry) -> Option<Change> {
    if a.policy.egress == b.policy.egress {
        return None;
    }
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
    Some(change(
        kind,
        rule,
        Some(&a.name),
        "policy.egress",
        Some(a.policy.egress.to_string()),
        Some(b.policy.egress.to_string()),
        why,
    ))
}

/// `mutating` removed (calls no longer wait for a person): widening; added: narrowing.
fn mutating(a: &ToolEntry, b: &ToolEntry) -> Option<Change> {
    if a.mutating == b.mutating {
        return None;
    }
    let (kind, rule, why) = if a.mutating {
        (ChangeKind::Widening, Rule::MutatingRemoved, "`mutating` removed: calls no longer require confirmation")
    } else {
        (ChangeKind::Narrowing, Rule::MutatingAdded, "`mutating` added: calls now require confirmation")
    };
    Some(change(
        kind,
        rule,
        Some(&a.name),
        "mutating",
        Some(a.mutating.to_string()),
        Some(b.mutating.to_string()),
        why.to_owned(),
    ))
}

/// Strictness of a risk: low < medium < high < critical.
fn risk_rank(r: Risk) -> u8 {
    match r {
        Risk::Low => 0,
        Risk::Medium => 1,
        Risk::High => 2,
        Risk::Critical => 3,
    }
}

/// Risk lowered: widening; raised: narrowing.
fn risk(a: &ToolEntry, b: &ToolEntry) -> Option<Change> {
    if a.risk == b.risk {
        return None;
    }
    let (kind, rule, verb) = if risk_rank(b.risk) < risk_rank(a.risk) {
        (ChangeKind::Widening, Rule::RiskLowered, "lowered")
    } else {
        (ChangeKind::Narrowing, Rule::RiskRaised, "raised")
    };
    Some(change(
        kind,
        rule,
        Some(&a.name),
        "risk",
        Some(a.risk.to_string()),
        Some(b.risk.to_string()),
        format!("risk {verb} from {} to {}", a.risk, b.risk),
    ))
}

/// `covers(wide, narrow)`: whether every value `narrow` allows is also allowed by `wide`.
type Covers = fn(&str, &str) -> bool;

/// A policy list to compare: field, what its entries are, (old, new), how entries cover.
type PolicyList<'a> = (&'static str, &'static str, (&'a [String], &'a [String]), Covers);

/// The filesystem globs, network hosts and environment variables, entry by entry.
fn diff_policy_lists(a: &ToolEntry, b: &ToolEntry, out: &mut Vec<Change>) {
    let (pa, pb) = (&a.policy, &b.policy);
    let policies: [PolicyList<'_>; 4] = [
        ("policy.fs.read", "filesystem read glob", (&pa.fs.read, &pb.fs.read), glob_covers),
        ("policy.fs.write", "filesystem write glob", (&pa.fs.write, &pb.fs.write), glob_covers),
        ("policy.net.hosts", "network host", (&pa.net.hosts, &pb.net.hosts), host_covers),
        ("policy.env.vars", "environment variable", (&pa.env.vars, &pb.env.vars), env_covers),
    ];
    for (field, what, (x, y), covers) in policies {
        out.extend(list_diff(x, y, covers).into_iter().map(|item| policy_change(&a.name, field, what, item)));
    }
}

/// One difference of a policy list of tool `tool`, `field`, whose entries are `what`.
fn policy_change(tool: &str, field: &str, what: &str, item: ListItem<'_>) -> Change {
    let name = Some(tool);
    match item {
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
    }
}

/// The tools it invokes: one added is a widening, one removed a narrowing.
fn diff_uses(a: &ToolEntry, b: &ToolEntry, out: &mut Vec<Change>) {
    let name = Some(a.name.as_str());
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
}

/// The confirm dialog's title: neutral.
fn title(a: &ToolEntry, b: &ToolEntry) -> Option<Change> {
    let show = |t: &Option<String>| t.as_deref().map_or_else(|| "none".to_owned(), quote);
    (a.title != b.title).then(|| {
        change(
            ChangeKind::Neutral,
            Rule::TitleChanged,
            Some(&a.name),
            "title",
            a.title.clone(),
            b.title.clone(),
            format!("confirm-dialog title changed from {} to {}", show(&a.title), show(&b.title)),
        )
    })
}

/// The description: neutral.
fn description(a: &ToolEntry, b: &ToolEntry) -> Option<Change> {
    (a.description != b.description).then(|| {
        change(
            ChangeKind::Neutral,
            Rule::DescriptionChanged,
            Some(&a.name),
            "description",
            Some(a.description.clone()),
            Some(b.description.clone()),
            format!("description changed from {} to {}", quote(&a.description), quote(&b.description)),
        )
    })
}
