//! Classified differences between two graph manifests, in the agent diff's terms
//! ([`Change`], [`ChangeKind`], [`Rule`]): each change says whether a run of the new graph
//! may reach more than a run of the old one.

use super::reach::Reach;
use super::{GraphManifest, NameLists, Node, NodeKind, OnFailure, Router};
use crate::diff::{Change, ChangeKind, ManifestDiff, Rule, change, quote};
use crate::manifest::Manifest;
use std::collections::{BTreeMap, BTreeSet};

/// The agent manifests a reviewer gives beside two graph manifests, found by their canonical
/// SHA-256, so that an agent node whose hash changed is classified by the agent diff.
#[derive(Debug, Clone, Default)]
pub struct NodeManifests {
    by_sha256: BTreeMap<String, Manifest>,
}

impl NodeManifests {
    /// No manifests: every changed node hash is a widening not inspected.
    pub fn new() -> Self {
        NodeManifests::default()
    }

    /// Adds a manifest, under its canonical SHA-256 (returned).
    pub fn insert(&mut self, manifest: Manifest) -> String {
        let sha = manifest.sha256();
        self.by_sha256.insert(sha.clone(), manifest);
        sha
    }

    /// The manifest whose canonical SHA-256 is `sha256`.
    pub fn get(&self, sha256: &str) -> Option<&Manifest> {
        self.by_sha256.get(sha256)
    }
}

/// One change of a graph: `node` the node it is about (`None`: the composite).
struct At<'a> {
    node: Option<&'a str>,
    out: &'a mut Vec<Change>,
}

impl At<'_> {
    fn push(
        &mut self,
        kind: ChangeKind,
        rule: Rule,
        field: &str,
        old: Option<String>,
        new: Option<String>,
        reason: String,
    ) {
        let mut c = change(kind, rule, None, field, old, new, reason);
        c.node = self.node.map(str::to_owned);
        self.out.push(c);
    }
}

/// Compares two graph manifests and classifies every difference; `manifests` holds the agent
/// manifests the reviewer gave (see [`NodeManifests`]).
///
/// | change | kind |
/// | --- | --- |
/// | a node added / removed (a wrap: see below) | widening / narrowing |
/// | an edge added into a node from which a run may reach an action or a handoff / any other edge added | widening / neutral |
/// | an edge removed | narrowing |
/// | an agent node's manifest SHA-256 changed, both manifests given | each change of the agent diff, under the node |
/// | an agent node's manifest SHA-256 changed, a manifest missing | widening (not inspected) |
/// | a tool, action, handoff or permission added to / removed from a node or the union | widening / narrowing |
/// | a wrap, or a wrap's step, removed / added | widening / narrowing |
/// | a loop's `max_iterations` or a forum's `rounds` raised / lowered | widening / narrowing |
/// | a router changed from code to model / from model to code | widening / narrowing |
/// | a parallel's `on_failure` from fail_fast to collect / the reverse | widening / narrowing |
/// | a node's agent name, a parallel's join, the composite's name, description or types | neutral |
///
/// A node whose id changed is a removal and an addition (an id is the only name a node has);
/// so is a node whose kind changed.
///
/// What it guarantees: when [`ManifestDiff::has_widening`] is `false`, the new graph has no
/// node (other than a wrap) the old one lacked, no edge through which a run reaches an agent
/// node's action or handoff it did not reach through that edge before, no tool, action,
/// handoff or permission a node lacked, no agent node whose manifest changed uninspected (or
/// inspected and widened), no higher loop bound or forum rounds, no router moved to a model,
/// no parallel that runs on after a failure where it stopped, and every wrap step of the old
/// graph. The crate's tests check this verdict against an independent computation of those
/// sets on random graphs and random mutations.
///
/// ```
/// use agents_core::graph::{CompositeEntry, GraphManifest, Node, NodeKind, NodeManifests, diff};
///
/// let looped = |n| vec![Node { id: "again".into(), kind: NodeKind::Loop { max_iterations: n } }];
/// let old = GraphManifest::from_parts(CompositeEntry::default(), looped(3), vec![]).unwrap();
/// let new = GraphManifest::from_parts(CompositeEntry::default(), looped(5), vec![]).unwrap();
/// let d = diff(&old, &new, &NodeManifests::new());
/// assert!(d.has_widening());
/// assert!(!diff(&new, &old, &NodeManifests::new()).has_widening());
/// ```
pub fn diff(old: &GraphManifest, new: &GraphManifest, manifests: &NodeManifests) -> ManifestDiff {
    let mut out = Vec::new();
    composite(old, new, &mut At { node: None, out: &mut out });
    lists("capabilities.", &old.capabilities, &new.capabilities, &mut At { node: None, out: &mut out });
    nodes(old, new, manifests, &mut out);
    edges(old, new, &mut out);
    ManifestDiff { old_sha256: old.sha256(), new_sha256: new.sha256(), changes: out }
}

fn composite(old: &GraphManifest, new: &GraphManifest, at: &mut At<'_>) {
    let (a, b) = (&old.composite, &new.composite);
    let fields = [
        ("composite.name", &a.name, &b.name, Rule::AgentRenamed),
        ("composite.description", &a.description, &b.description, Rule::AgentDescriptionChanged),
        ("composite.input", &a.input, &b.input, Rule::IoTypeChanged),
        ("composite.output", &a.output, &b.output, Rule::IoTypeChanged),
    ];
    for (field, x, y, rule) in fields {
        if x != y {
            let reason = format!("changed from {} to {}", quote(x), quote(y));
            at.push(ChangeKind::Neutral, rule, field, Some(x.clone()), Some(y.clone()), reason);
        }
    }
    if a.entry != b.entry {
        let reason = "a run starts at another node, and may reach what it could not from the old one".to_owned();
        at.push(ChangeKind::Widening, Rule::EntryChanged, "composite.entry", a.entry.clone(), b.entry.clone(), reason);
    }
}

/// Names added to / removed from the four lists (`prefix` before each field's name).
fn lists(prefix: &str, old: &NameLists, new: &NameLists, at: &mut At<'_>) {
    for ((field, a), (_, b)) in old.fields().into_iter().zip(new.fields()) {
        let (a, b): (BTreeSet<&String>, BTreeSet<&String>) = (a.iter().collect(), b.iter().collect());
        let field = format!("{prefix}{field}");
        for name in b.difference(&a) {
            let reason = format!("`{name}` added to {field}: a run may reach it");
            at.push(ChangeKind::Widening, Rule::CapabilityAdded, &field, None, Some((*name).clone()), reason);
        }
        for name in a.difference(&b) {
            let reason = format!("`{name}` removed from {field}");
            at.push(ChangeKind::Narrowing, Rule::CapabilityRemoved, &field, Some((*name).clone()), None, reason);
        }
    }
}

fn nodes(old: &GraphManifest, new: &GraphManifest, manifests: &NodeManifests, out: &mut Vec<Change>) {
    let olds: BTreeMap<&str, &Node> = old.nodes.iter().map(|n| (n.id.as_str(), n)).collect();
    let news: BTreeMap<&str, &Node> = new.nodes.iter().map(|n| (n.id.as_str(), n)).collect();
    let ids: BTreeSet<&str> = olds.keys().chain(news.keys()).copied().collect();
    for id in ids {
        let mut at = At { node: Some(id), out: &mut *out };
        match (olds.get(id), news.get(id)) {
            (Some(a), Some(b)) if a.kind.name() == b.kind.name() => same_kind(a, b, manifests, &mut at),
            (a, b) => {
                if let Some(a) = a {
                    removed(a, &mut at);
                }
                if let Some(b) = b {
                    added(b, &mut at);
                }
            }
        }
    }
}

fn removed(n: &Node, at: &mut At<'_>) {
    let old = Some(n.kind.name().to_owned());
    if let NodeKind::Wrap { steps } = &n.kind {
        let reason = format!("wrap removed: its steps ({}) no longer run around its inner node", steps.join(", "));
        return at.push(ChangeKind::Widening, Rule::GuardRemoved, "node", old, None, reason);
    }
    at.push(ChangeKind::Narrowing, Rule::NodeRemoved, "node", old, None, format!("{} node removed", n.kind.name()));
}

fn added(n: &Node, at: &mut At<'_>) {
    let new = Some(n.kind.name().to_owned());
    let reason = match &n.kind {
        NodeKind::Wrap { steps } => {
            let reason = format!("wrap added: its steps ({}) run around its inner node", steps.join(", "));
            return at.push(ChangeKind::Narrowing, Rule::GuardAdded, "node", None, new, reason);
        }
        NodeKind::Agent(a) => {
            format!("agent node `{}` added: a run may reach its tools (it reaches {})", a.agent, a.reaches)
        }
        other => format!("{} node added", other.name()),
    };
    at.push(ChangeKind::Widening, Rule::NodeAdded, "node", None, new, reason);
}

fn same_kind(a: &Node, b: &Node, manifests: &NodeManifests, at: &mut At<'_>) {
    use ChangeKind::{Narrowing, Neutral, Widening};
    match (&a.kind, &b.kind) {
        (NodeKind::Agent(x), NodeKind::Agent(y)) => {
            if x.agent != y.agent {
                let reason = format!("agent renamed from `{}` to `{}`", x.agent, y.agent);
                at.push(Neutral, Rule::AgentRenamed, "agent", Some(x.agent.clone()), Some(y.agent.clone()), reason);
            }
            if x.manifest_sha256 != y.manifest_sha256 {
                agent_manifest(&x.manifest_sha256, &y.manifest_sha256, manifests, at);
            }
            lists("", &x.lists, &y.lists, at);
        }
        (NodeKind::Branch { router: r }, NodeKind::Branch { router: s }) if r != s => {
            let (kind, why) = match s {
                Router::Model => (Widening, "a model now chooses the arm: text it read may steer the run"),
                Router::Code => (Narrowing, "code now chooses the arm, no longer a model"),
            };
            at.push(kind, Rule::RouterChanged, "router", Some(r.as_str().into()), Some(s.as_str().into()), why.into());
        }
        (NodeKind::Loop { max_iterations: m }, NodeKind::Loop { max_iterations: n }) => {
            bound("max_iterations", *m, *n, at)
        }
        (NodeKind::Forum { rounds: m }, NodeKind::Forum { rounds: n }) => bound("rounds", *m, *n, at),
        (NodeKind::Parallel { join: j, on_failure: f }, NodeKind::Parallel { join: k, on_failure: g }) => {
            if j != k {
                let reason = format!("join changed from `{j}` to `{k}`");
                at.push(Neutral, Rule::JoinChanged, "join", Some(j.clone()), Some(k.clone()), reason);
            }
            if f != g {
                let (kind, why) = match g {
                    OnFailure::Collect => (Widening, "the other members now run on after one fails"),
                    OnFailure::FailFast => (Narrowing, "the other members are now stopped when one fails"),
                };
                at.push(
                    kind,
                    Rule::FailurePolicyChanged,
                    "on_failure",
                    Some(f.as_str().into()),
                    Some(g.as_str().into()),
                    why.into(),
                );
            }
        }
        (NodeKind::Wrap { steps: s }, NodeKind::Wrap { steps: t }) => {
            for step in s.iter().filter(|x| !t.contains(x)) {
                let reason = format!("step `{step}` removed: it no longer runs around the inner node");
                at.push(Widening, Rule::GuardRemoved, "steps", Some(step.clone()), None, reason);
            }
            for step in t.iter().filter(|x| !s.contains(x)) {
                let reason = format!("step `{step}` added around the inner node");
                at.push(Narrowing, Rule::GuardAdded, "steps", None, Some(step.clone()), reason);
            }
        }
        _ => {}
    }
}

fn bound(field: &str, old: u64, new: u64, at: &mut At<'_>) {
    let (kind, rule, verb) = match new.cmp(&old) {
        std::cmp::Ordering::Greater => (ChangeKind::Widening, Rule::LimitRaised, "raised"),
        std::cmp::Ordering::Less => (ChangeKind::Narrowing, Rule::LimitLowered, "lowered"),
        std::cmp::Ordering::Equal => return,
    };
    at.push(
        kind,
        rule,
        field,
        Some(old.to_string()),
        Some(new.to_string()),
        format!("{field} {verb} from {old} to {new}"),
    );
}

/// An agent node's manifest changed: the agent diff's changes when both manifests were given,
/// else one widening that says which to give.
fn agent_manifest(old: &str, new: &str, manifests: &NodeManifests, at: &mut At<'_>) {
    let node = at.node.map(str::to_owned);
    if let (Some(a), Some(b)) = (manifests.get(old), manifests.get(new)) {
        for mut c in crate::diff::diff(a, b).changes {
            c.node.clone_from(&node);
            at.out.push(c);
        }
        return;
    }
    let missing: Vec<&str> = [old, new].into_iter().filter(|s| manifests.get(s).is_none()).collect();
    let reason = format!(
        "the agent's manifest changed and was not inspected: give the node manifests (missing sha256 {})",
        missing.join(" and ")
    );
    at.push(
        ChangeKind::Widening,
        Rule::NodeManifestChanged,
        "manifest_sha256",
        Some(old.into()),
        Some(new.into()),
        reason,
    );
}

fn edges(old: &GraphManifest, new: &GraphManifest, out: &mut Vec<Change>) {
    let reach = Reach::new(new);
    for e in new.edges.iter().filter(|e| !old.edges.contains(e)) {
        let tier = reach.from(&e.to);
        let mut at = At { node: Some(&e.from), out: &mut *out };
        let (kind, why) = if tier.is_action() {
            (ChangeKind::Widening, format!("edge {e} added: a run entering `{}` may reach {tier}", e.to))
        } else {
            (ChangeKind::Neutral, format!("edge {e} added: a run entering `{}` reaches {tier} at most", e.to))
        };
        at.push(kind, Rule::EdgeAdded, "edges", None, Some(e.to_string()), why);
    }
    for e in old.edges.iter().filter(|e| !new.edges.contains(e)) {
        let mut at = At { node: Some(&e.from), out: &mut *out };
        at.push(
            ChangeKind::Narrowing,
            Rule::EdgeRemoved,
            "edges",
            Some(e.to_string()),
            None,
            format!("edge {e} removed"),
        );
    }
}
