//! The agents an agent grants (`agents`): a granted agent added is a widening (the model may
//! now run another agent, with every tool it reaches); one removed, a narrowing; one whose
//! manifest SHA-256 changed, a widening, since what changed inside it is not shown here and
//! must be reviewed in its own manifest's diff. The agent a handoff tool hands the run to
//! is diffed the same way: a target added or changed, a widening; removed, a narrowing.

use super::model::{Change, ChangeKind, change};
use super::rule::Rule;
use crate::manifest::ToolEntry;
use crate::subagent::SubAgentEntry;

/// A granted agent as a change shows it: `name sha256:<first 12 hex>`.
fn shown(e: &SubAgentEntry) -> String {
    format!("{} sha256:{}", e.name, e.sha256.get(..12).unwrap_or(&e.sha256))
}

/// Every change of the granted agents, by name.
pub(super) fn diff_agents(old: &[SubAgentEntry], new: &[SubAgentEntry], out: &mut Vec<Change>) {
    let field = |e: &SubAgentEntry| format!("agents.{}", e.name);
    for a in old {
        match new.iter().find(|b| b.name == a.name) {
            None => out.push(change(
                ChangeKind::Narrowing,
                Rule::AgentUngranted,
                None,
                &field(a),
                Some(shown(a)),
                None,
                format!("agent `{}` is no longer granted", a.name),
            )),
            Some(b) if a.sha256 != b.sha256 => out.push(change(
                ChangeKind::Widening,
                Rule::GrantedAgentChanged,
                None,
                &field(a),
                Some(shown(a)),
                Some(shown(b)),
                format!(
                    "granted agent `{}` changed (its manifest SHA-256): review the diff of its own manifest, whatever it reaches the model may now run",
                    a.name
                ),
            )),
            Some(_) => {}
        }
    }
    for b in new.iter().filter(|b| !old.iter().any(|a| a.name == b.name)) {
        out.push(change(
            ChangeKind::Widening,
            Rule::AgentGranted,
            None,
            &field(b),
            None,
            Some(shown(b)),
            format!(
                "agent `{}` granted: the model may run it as a tool, and with it every tool it reaches (review its manifest)",
                b.name
            ),
        ));
    }
}

/// The agent a handoff tool hands the run to: named where none was, a widening (the model may
/// now start that agent, with every tool it reaches); another agent or another SHA-256 of it,
/// a widening (review its own manifest's diff); no longer named, a narrowing (the call only
/// files a record).
pub(super) fn handoff_target(a: &ToolEntry, b: &ToolEntry) -> Option<Change> {
    let (kind, rule, why) = match (&a.handoff, &b.handoff) {
        (None, None) => return None,
        (Some(x), Some(y)) if x == y => return None,
        (None, Some(y)) => (
            ChangeKind::Widening,
            Rule::HandoffTargetAdded,
            format!(
                "a call now hands the run to the agent `{}`, with every tool it reaches (review its manifest)",
                y.name
            ),
        ),
        (Some(x), Some(y)) => (
            ChangeKind::Widening,
            Rule::HandoffTargetChanged,
            format!(
                "the agent a call hands the run to changed from `{}` to `{}` (its manifest SHA-256): review the diff of its own manifest",
                x.name, y.name
            ),
        ),
        (Some(x), None) => (
            ChangeKind::Narrowing,
            Rule::HandoffTargetRemoved,
            format!("a call no longer hands the run to the agent `{}`", x.name),
        ),
    };
    Some(change(
        kind,
        rule,
        Some(&a.name),
        "handoff",
        a.handoff.as_ref().map(shown),
        b.handoff.as_ref().map(shown),
        why,
    ))
}
