//! The agent's `expose.mcp`: the ways it may be served over MCP. A way added (a new
//! transport, or HTTP behind another kind of authentication) lets new clients reach its tools:
//! a widening; a way removed: a narrowing.

use super::model::{Change, ChangeKind, change};
use super::rule::Rule;
use crate::expose::McpExposure;

/// Each way added or removed, in the manifest's order.
pub(super) fn diff_expose(old: &[McpExposure], new: &[McpExposure], out: &mut Vec<Change>) {
    for e in new.iter().filter(|e| !old.contains(e)) {
        let why = if old.is_empty() {
            "the agent was not served over MCP, and MCP clients may now reach its tools".to_owned()
        } else {
            format!("MCP clients may now reach its tools this way too (it was served as {})", listed(old))
        };
        out.push(change(
            ChangeKind::Widening,
            Rule::McpExposureAdded,
            None,
            "expose.mcp",
            None,
            Some(e.to_string()),
            format!("served over MCP as `{e}`: {why}"),
        ));
    }
    for e in old.iter().filter(|e| !new.contains(e)) {
        out.push(change(
            ChangeKind::Narrowing,
            Rule::McpExposureRemoved,
            None,
            "expose.mcp",
            Some(e.to_string()),
            None,
            format!("no longer served over MCP as `{e}`"),
        ));
    }
}

fn listed(ways: &[McpExposure]) -> String {
    ways.iter().map(|e| format!("`{e}`")).collect::<Vec<_>>().join(", ")
}
