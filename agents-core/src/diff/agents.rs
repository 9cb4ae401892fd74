//! The agents an agent grants (`agents`): a granted agent added is a widening (the model may
//! now run another agent, with every tool it reaches); one removed, a narrowing; one whose
//! manifest SHA-256 changed, a widening, since what changed inside it is not shown here and
//! must be reviewed in its own manifest's diff.

use super::model::{Change, ChangeKind, change};
use super::rule::Rule;
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
