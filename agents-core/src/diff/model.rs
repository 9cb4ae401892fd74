//! The diff's model: how a change affects what the agent may do ([`ChangeKind`]), the rule
//! that classified it ([`Rule`]), one classified difference ([`Change`]) and all of them
//! ([`ManifestDiff`]), each rendered for a reader.

use super::rule::Rule;
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
