//! Which tool fields a diff widened, for the report to mark.

use crate::diff::{ChangeKind, ManifestDiff, Rule};
use std::collections::{BTreeMap, BTreeSet};

/// Which tool fields a diff widened: tool name → field names.
pub(super) struct Widened<'a> {
    fields: BTreeMap<&'a str, BTreeSet<&'a str>>,
    pub(super) new_tools: BTreeSet<&'a str>,
}

impl<'a> Widened<'a> {
    pub(super) fn from(diff: Option<&'a ManifestDiff>) -> Self {
        let mut fields: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        let mut new_tools = BTreeSet::new();
        for c in diff.into_iter().flat_map(|d| d.of_kind(ChangeKind::Widening)) {
            if let Some(t) = c.tool.as_deref() {
                if c.rule == Rule::ToolAdded {
                    new_tools.insert(t);
                }
                let field = c.field.split('.').take(if c.field.starts_with("policy.") { 3 } else { 1 });
                let field = field.collect::<Vec<_>>().join(".");
                let stored: &str = match field.as_str() {
                    "policy.fs.read" => "policy.fs.read",
                    "policy.fs.write" => "policy.fs.write",
                    "policy.net.hosts" => "policy.net.hosts",
                    "policy.env.vars" => "policy.env.vars",
                    "permission" => "permission",
                    "tier" => "tier",
                    "mutating" => "mutating",
                    "risk" => "risk",
                    "parameters" => "parameters",
                    "uses" => "uses",
                    _ => "tool",
                };
                fields.entry(t).or_default().insert(stored);
            }
        }
        Widened { fields, new_tools }
    }

    pub(super) fn tool(&self, name: &str) -> bool {
        self.fields.contains_key(name)
    }

    pub(super) fn field(&self, name: &str, field: &str) -> bool {
        self.fields.get(name).is_some_and(|f| f.contains(field) || f.contains("tool"))
    }
}
